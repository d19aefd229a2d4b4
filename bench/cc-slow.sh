#!/usr/bin/env bash
# bench/cc-slow.sh: one sdrnet connection alone on a slow path through
# the user-space link emulator: RATES (default 5, 20 and 40 Mbit/s), 20 ms
# RTT, a 64 KiB drop-tail queue, no loss, SECS seconds of data at the
# path's rate, ROUNDS times. There two 64 KiB chunks (NSCC's floor on a
# real host) are more than the BDP, so the floor's own queue looks like
# a competitor's to the competitive mode's entry (internal/cc,
# nscc_compete.go). Prints goodput, its share of the path, the bytes
# resent, RTOs and how often the competitive mode started: alone, it
# should never.
#
#   bash bench/cc-slow.sh                 # builds this tree
#   SDRNET=/path/to/sdrnet bash bench/cc-slow.sh
#   CC=nscc RATES="5 20 40" SECS=10 ROUNDS=1 QUEUE=64KiB
#   ARGS="--chunk 16KiB"                # more flags for both ends
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

CC=${CC:-nscc}
RATES=${RATES:-"5 20 40"}
SECS=${SECS:-10}
ROUNDS=${ROUNDS:-1}
QUEUE=${QUEUE:-64KiB}
RUN_TIMEOUT=${RUN_TIMEOUT:-120}
ARGS=${ARGS:-}

use_tmp
command -v jq >/dev/null || command -v python3 >/dev/null || { echo "need jq or python3" >&2; exit 1; }
sdrnet_bin

machine
echo
[ -z "$ARGS" ] || echo "flags: $ARGS"
echo "| round | path | cc | goodput Mbit/s | of the path | resent % | RTOs | competitive spells |"
echo "|---|---|---|---|---|---|---|---|"
for round in $(seq "$ROUNDS"); do
  for r in $RATES; do
    spec="delay=10ms,rate=${r}Mbps,queue=$QUEUE"
    size=$(awk -v r="$r" -v s="$SECS" 'BEGIN {printf "%d", r * 1e6 / 8 * s}')
    name="slow-$r-$round"
    # shellcheck disable=SC2086
    through "$name" "$spec" --cc "$CC" --size "$size" $ARGS || continue
    f="$tmp/$name.json"
    g=$(calc "$(jnum "$f" goodput_bps) / 1e6")
    echo "| $round | \"$spec\" | $CC | $(printf %.2f "$g") | $(printf %.2f "$(calc "$g / $r")") | $(printf %.2f "$(calc "100 * $(jnum "$f" retransmitted_bytes) / $(jnum "$f" bytes)")") | $(jnum "$f" rtos) | $(jnum "$f" "cc_detail[\"competitive spells\"]") |"
  done
done
