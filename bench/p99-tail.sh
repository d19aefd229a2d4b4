#!/usr/bin/env bash
# bench/p99-tail.sh: where the p99 of message completion comes from
# (issue 16's "p99 within 2x of p50"). Runs `sdrnet bench` over loopback
# with --completions, alternating the path counts, and for each run prints
# p99/p50 over every message, how many of the messages at or above p99
# were posted in the connection's first WARM seconds, and p99/p50 over the
# messages posted after that (what a connection that is already running
# sees; iperf3 -O leaves out TCP's slow start the same way).
#
#   bash bench/p99-tail.sh
#
# Knobs (environment): ROUNDS=3, PATHS="1 8", SIZE=4GiB, MSG=1MiB,
# WARM=0.1 (seconds), FLAGS="--auth none --scheme sr-nack" (more bench
# flags), SDRNET=BIN (a built binary instead of building this tree),
# RESULTS=DIR (keep the CSV and JSON files there).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

ROUNDS=${ROUNDS:-3}
PATHS=${PATHS:-"1 8"}
SIZE=${SIZE:-4GiB}
MSG=${MSG:-1MiB}
WARM=${WARM:-0.1}
FLAGS=${FLAGS:-"--auth none --scheme sr-nack"}

use_tmp '*.csv' '*.json'
bin=${SDRNET:-}
if [ -z "$bin" ]; then
  go build -o "$tmp/sdrnet" ./cmd/sdrnet
  bin=$tmp/sdrnet
else
  TREE="binary $bin"
fi
TREE=${TREE:-} machine
echo "flags:   $FLAGS --msg $MSG --size $SIZE; first ${WARM}s counted as warm-up"
echo

# quantile P prints the P quantile of the numbers on stdin, by bench's
# rule: the value at index floor(P x n) of the sorted numbers.
quantile() { sort -g | awk -v p="$1" '{a[NR] = $1} END {k = int(p * NR) + 1; if (k > NR) k = NR; print a[k]}'; }

# tail_split CSV prints p99/p50 over all messages, how many of the
# messages at or above p99 were posted in the warm-up, and p99/p50 over
# the messages posted after it.
tail_split() {
  local p50 p99 late50 late99
  p50=$(awk -F, 'NR > 1 {print $3}' "$1" | quantile 0.5)
  p99=$(awk -F, 'NR > 1 {print $3}' "$1" | quantile 0.99)
  late50=$(awk -F, -v w="$WARM" 'NR > 1 && $2 >= w {print $3}' "$1" | quantile 0.5)
  late99=$(awk -F, -v w="$WARM" 'NR > 1 && $2 >= w {print $3}' "$1" | quantile 0.99)
  awk -F, -v w="$WARM" -v p50="$p50" -v p99="$p99" -v l50="$late50" -v l99="$late99" '
    NR > 1 {if ($3 >= p99) {tail++; if ($2 < w) early++}; if ($2 >= w) m++}
    END {
      printf "p99/p50 %.2f (p50 %.2f ms); of %d messages at or above p99, %d posted in the warm-up", p99 / p50, p50 * 1e3, tail, early
      if (m > 0) printf "; after it: %d messages, p99/p50 %.2f", m, l99 / l50
      printf "\n"
    }' "$1"
}

for r in $(seq "$ROUNDS"); do
  for p in $PATHS; do
    f="$tmp/tail-p$p-$r"
    # shellcheck disable=SC2086
    "$bin" bench --paths "$p" --msg "$MSG" --size "$SIZE" $FLAGS --json --completions "$f.csv" >"$f.json"
    printf 'paths %s run %s: %.2f Gbit/s, resent %s KiB; %s\n' "$p" "$r" \
      "$(calc "$(jnum "$f.json" goodput_bps) / 1e9")" \
      "$(calc "int($(jnum "$f.json" retransmitted_bytes) / 1024)")" "$(tail_split "$f.csv")"
  done
done
