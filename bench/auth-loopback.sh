#!/usr/bin/env bash
# bench/auth-loopback.sh: what packet protection costs. sdrnet bench over
# loopback (both ends in one process) with --auth none, header and full,
# runs interleaved so the machine's load falls on all alike; then the
# per-packet cost of each mode (BenchmarkProtect: seal and open one 4 KiB
# data packet).
#
#   bash bench/auth-loopback.sh
#
# Knobs (environment): REPS=5 SIZE=1GiB MODES="none header full" ARGS="".
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

REPS=${REPS:-5}
SIZE=${SIZE:-1GiB}
MODES=${MODES:-"none header full"}
ARGS=${ARGS:-}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/sdrnet" ./cmd/sdrnet

machine
echo "run:     sdrnet bench --size $SIZE $ARGS --auth MODE, $REPS runs per mode, interleaved"
echo
declare -A runs
for i in $(seq "$REPS"); do
  for m in $MODES; do
    f="$tmp/$m-$i.json"
    timeout 300 "$tmp/sdrnet" bench --size "$SIZE" --auth "$m" $ARGS --json > "$f"
    runs[$m]+="$(jnum "$f" goodput_bps) "
  done
done
# One "mode=values" argument per mode, in MODES's order: an associative
# array's "${runs[@]}" comes in hash order, which swapped the rows once.
args=()
for m in $MODES; do args+=("$m=${runs[$m]}"); done
python3 - "${args[@]}" <<'PY'
import sys, statistics
modes = [a.split("=", 1)[0] for a in sys.argv[1:]]
vals = [list(map(float, a.split("=", 1)[1].split())) for a in sys.argv[1:]]
base = statistics.median(vals[0])
print(f"{'auth':8} {'median Gbit/s':>14} {'min':>8} {'max':>8} {'vs ' + modes[0]:>8}")
for m, v in zip(modes, vals):
    med = statistics.median(v)
    print(f"{m:8} {med/1e9:14.2f} {min(v)/1e9:8.2f} {max(v)/1e9:8.2f} {med/base:8.2f}")
PY
echo
echo "per packet (go test -bench Protect ./internal/core/):"
go test -run '^$' -bench Protect -benchmem ./internal/core/ | grep Benchmark
