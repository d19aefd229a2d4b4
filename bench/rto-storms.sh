#!/usr/bin/env bash
# Timeout storms on the lossy long haul (bench/cc-linkem.sh's third row:
# 8 paths of 125 Mbit/s, 50 ms, 1% random loss, SR-NACK paced at
# 950 Mbit/s, NSCC): runs it RUNS times for each binary given, the
# binaries alternated within each round, and prints each run's goodput,
# retransmission timeouts and resent bytes. A run usually has 10-50
# timeouts (a resend lost again, a lost NACK); a storm is a run with more
# than 100, when the sender's timers fire before the NACKs that would
# have asked for a packet each. HOG=1 loads every CPU for two seconds,
# three seconds into each run, to bring on the host stalls in which
# storms start.
#
#   bash bench/rto-storms.sh BIN [BIN...]     # RUNS=8 HOG=0 SIZE=1GiB
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

RUNS=${RUNS:-8}
HOG=${HOG:-0}
SIZE=${SIZE:-1GiB}
RUN_TIMEOUT=${RUN_TIMEOUT:-120}
[ $# -gt 0 ] || { echo "usage: bash bench/rto-storms.sh BIN [BIN...]" >&2; exit 2; }
command -v jq >/dev/null || { echo "rto-storms.sh needs jq" >&2; exit 2; }

use_tmp
machine
echo "runs: $RUNS per binary, HOG=$HOG, --size $SIZE"
spec="delay=25ms,rate=125Mbps,loss=1%"
args=(--cc nscc --scheme sr-nack --paths 8 --rate 950Mbps --msg 16MiB --size "$SIZE")

hog() {
  sleep 3
  for _ in $(seq "$(nproc)"); do timeout 2 sh -c 'while :; do :; done' & done
  wait
}

declare -A goodputs storms
failed=0
echo
echo "| round | binary | goodput Mbit/s | timeouts | of them probes into silence | resent MiB |"
echo "|---|---|---|---|---|---|"
for i in $(seq "$RUNS"); do
  for b in "$@"; do
    cp "$b" "$tmp/sdrnet"
    h=""
    if [ "$HOG" = 1 ]; then hog & h=$!; fi
    ok=1
    through run "$spec" "${args[@]}" || ok=0
    [ -z "$h" ] || wait "$h"
    f=$tmp/run.json
    if [ "$ok" = 0 ] || ! r=$(jq -er '.rtos' "$f" 2>/dev/null); then
      echo "| $i | $b | failed: see the lines above | | | |"
      failed=$((failed + 1))
      continue
    fi
    g=$(jq -r '.goodput_bps / 1e6 | floor' "$f")
    echo "| $i | $b | $g | $r | $(jq -r '.rto_probes // "-"' "$f") | $(jq -r '.retransmitted_bytes / 1048576 * 10 | floor / 10' "$f") |"
    goodputs[$b]="${goodputs[$b]:-} $g"
    [ "$r" -le 100 ] || storms[$b]=$((${storms[$b]:-0} + 1))
  done
done
echo
for b in "$@"; do
  # shellcheck disable=SC2086
  if [ -z "${goodputs[$b]:-}" ]; then echo "$b: no run finished"; continue; fi
  echo "$b: median goodput $(median ${goodputs[$b]}) Mbit/s; runs with over 100 timeouts: ${storms[$b]:-0} of $RUNS"
done
if [ "$failed" -gt 0 ]; then
  echo "rto-storms.sh: $failed run(s) failed; their rows say so" >&2
  exit 1
fi
