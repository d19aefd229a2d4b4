#!/usr/bin/env bash
# bench/cc-linkem.sh: one sdrnet connection per congestion controller
# through the user-space link emulator, in two settings:
#
#  1. bottleneck: 1 Gbit/s, 20 ms RTT (10 ms each way), a shallow drop-tail
#     queue (256 KiB, about 2 ms), no loss; one path, the sender unpaced
#     (it does not know the rate). Goal: >= 0.9 of the bottleneck with
#     under 1% of the data resent. Given both for the whole transfer and
#     past its first OMIT (bench -O, iperf3's -O: the rate it reaches,
#     slow start left out).
#  2. lossy long haul (bench/linkem.sh's): 1 Gbit/s as 8 paths of
#     125 Mbit/s, 50 ms RTT, 1% random loss each way, SR-NACK paced at
#     950 Mbit/s. Goal: >= 0.9 x 1 Gbit/s x (1 - loss).
#
#  3. fairness: two connections started together through one shared
#     bottleneck (the emulator's shared=1: both connections' source ports
#     cross one rate and one queue), each sending SIZE. Jain's index of
#     their goodputs (each over its own run; the first to finish leaves
#     the link to the other, which flatters the index, so the finish
#     times are printed too). Goal: >= 0.9. Also the pair's use of the
#     link: both transfers' bytes over the later finish (no goal).
#
#  4. long shallow path: 1 Gbit/s, 50 ms RTT, the same 256 KiB queue
#     (2.1 ms, under NSCC's host target there, a twentieth of the RTT),
#     no loss, --window 8MiB (the BDP is 6.25 MB), LONG_SIZE. Same goals
#     as the bottleneck's (no issue cell; the buffer-under-target case).
#
#   bash bench/cc-linkem.sh
#
# The bottleneck's BDP (1 Gbit/s x 20 ms = 2.5 MB) exceeds sdrnet's
# default unpaced window (2 MiB, which caps one connection at 0.84 of the
# link), so the bottleneck runs give --window 4MiB (WINDOW). credit runs
# with --line-rate set to the bottleneck (a receiver that knows its
# path's rate); nscc runs with sdr's defaults (a 10 Gbit/s guess).
#
# Knobs (environment): CCS="none nscc credit" SIZE=512MiB LOSSY_SIZE=1GiB
# QUEUE=256KiB WINDOW=4MiB OMIT=1s FAIR=1 (0 skips the fairness runs)
# SDRNET=BIN (a built binary instead of this tree, for A/B runs)
# LOSSY=1 (0 skips the lossy long haul) LONG=1 (0 skips the long shallow
# path) LONG_SIZE=1GiB BOTTLENECK=1 (0 skips the 20 ms bottleneck)
# RUN_TIMEOUT=300.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

CCS=${CCS:-"none nscc credit"}
SIZE=${SIZE:-512MiB}
LOSSY_SIZE=${LOSSY_SIZE:-1GiB}
QUEUE=${QUEUE:-256KiB}
WINDOW=${WINDOW:-4MiB}
FAIR=${FAIR:-1}
LOSSY=${LOSSY:-1}
LONG=${LONG:-1}
LONG_SIZE=${LONG_SIZE:-1GiB}
BOTTLENECK=${BOTTLENECK:-1}
RUN_TIMEOUT=${RUN_TIMEOUT:-300}
OMIT=${OMIT:-1s}

use_tmp
command -v jq >/dev/null || command -v python3 >/dev/null || { echo "need jq or python3" >&2; exit 1; }
sdrnet_bin

# pair NAME SPEC CLIENT-ARGS...: two clients at once through one emulator.
pair() {
  local name=$1 spec=$2 rc=0 c1 c2
  shift 2
  start_link "$name" "$spec" "$@" || return 1
  timeout "$RUN_TIMEOUT" "$tmp/sdrnet" bench --connect "127.0.0.1:$link_port" --json "$@" >"$tmp/$name.1.json" &
  c1=$!
  timeout "$RUN_TIMEOUT" "$tmp/sdrnet" bench --connect "127.0.0.1:$link_port" --json "$@" >"$tmp/$name.2.json" &
  c2=$!
  wait "$c1" || rc=$?
  wait "$c2" || rc=$?
  stop_link
  [ "$rc" -eq 0 ] || echo "$name: exit $rc" >&2
  return "$rc"
}
# ccargs CC: the flags a controller runs with on the 1 Gbit/s bottleneck.
ccargs() {
  case $1 in
  credit) echo "--cc credit --line-rate 1Gbps" ;;
  *) echo "--cc $1" ;;
  esac
}
lkstat() { grep '^forward: received' "$tmp/$1.lk" | tail -1 | sed -E "s/.*[ (]$2 ([0-9]+).*/\1/"; }

# bottleneck NAME SETTING CC SPEC WINDOW SIZE: one connection through a
# 1 Gbit/s bottleneck, its goodput whole and past OMIT.
bottleneck() {
  local name=$1 setting=$2 c=$3 spec=$4 window=$5 size=$6 f g gomit pct
  # shellcheck disable=SC2046
  through "$name" "$spec" $(ccargs "$c") --window "$window" --size "$size" -O "$OMIT" || return 0
  f="$tmp/$name.json"
  g=$(calc "$(jnum "$f" goodput_bps) / 1e6")
  gomit=$(calc "$(jnum "$f" after_omit_goodput_bps | sed s/null/0/) / 1e6")
  pct=$(calc "100 * $(jnum "$f" retransmitted_bytes) / $(jnum "$f" bytes)")
  rows+=("$setting|$c|\"$spec\", $(ccargs "$c") --window $window --size $size|$(printf %.0f "$g"); past the first $OMIT: $(printf %.0f "$gomit")|$(printf %.2f "$(calc "$g / 1000")"); past $OMIT: $(printf %.2f "$(calc "$gomit / 1000")") (goal 0.9)|$(printf %.2f "$pct") (goal < 1)|$(jnum "$f" rtos)|$(lkstat "$name" queue)")
  echo "$setting $c: ${rows[-1]}" >&2
}

machine
echo
rows=()
for c in $CCS; do
  if [ "$BOTTLENECK" = 1 ]; then
    bottleneck "bn-$c" bottleneck "$c" "delay=10ms,rate=1Gbps,queue=$QUEUE" "$WINDOW" "$SIZE"
  fi
  if [ "$LONG" = 1 ]; then
    bottleneck "long-$c" "long shallow path" "$c" "delay=25ms,rate=1Gbps,queue=$QUEUE" 8MiB "$LONG_SIZE"
  fi
  if [ "$FAIR" = 1 ]; then
    spec="delay=10ms,rate=1Gbps,queue=$QUEUE,shared=1"
    # shellcheck disable=SC2046
    if pair "fair-$c" "$spec" $(ccargs "$c") --window "$WINDOW" --size "$SIZE"; then
      f1="$tmp/fair-$c.1.json" f2="$tmp/fair-$c.2.json"
      g1=$(calc "$(jnum "$f1" goodput_bps) / 1e6")
      g2=$(calc "$(jnum "$f2" goodput_bps) / 1e6")
      jain=$(calc "($g1 + $g2)^2 / (2 * ($g1^2 + $g2^2))")
      pct=$(calc "100 * ($(jnum "$f1" retransmitted_bytes) + $(jnum "$f2" retransmitted_bytes)) / ($(jnum "$f1" bytes) + $(jnum "$f2" bytes))")
      # The pair's use of the link: both transfers' bytes over the later
      # finish (both started together).
      use=$(calc "8 * ($(jnum "$f1" bytes) + $(jnum "$f2" bytes)) / ($(jnum "$f1" seconds) > $(jnum "$f2" seconds) ? $(jnum "$f1" seconds) : $(jnum "$f2" seconds)) / 1e9")
      rows+=("2 flows, shared|$c|\"$spec\", $(ccargs "$c") --window $WINDOW --size $SIZE each|$(printf %.0f "$g1") + $(printf %.0f "$g2") (finish $(printf %.1f "$(jnum "$f1" seconds)") s, $(printf %.1f "$(jnum "$f2" seconds)") s; together $(printf %.2f "$use") of the link)|Jain $(printf %.3f "$jain") (goal 0.9)|$(printf %.2f "$pct")|$(jnum "$f1" rtos) + $(jnum "$f2" rtos)|$(lkstat "fair-$c" queue)")
      echo "fair $c: ${rows[-1]}" >&2
    fi
  fi
  [ "$LOSSY" = 1 ] || continue
  spec="delay=25ms,rate=125Mbps,loss=1%"
  if through "lossy-$c" "$spec" --cc "$c" --scheme sr-nack --paths 8 --rate 950Mbps --size "$LOSSY_SIZE" --msg 16MiB; then
    f="$tmp/lossy-$c.json"
    g=$(calc "$(jnum "$f" goodput_bps) / 1e6")
    pct=$(calc "100 * $(jnum "$f" retransmitted_bytes) / $(jnum "$f" bytes)")
    rows+=("lossy long haul|$c|\"$spec\" x 8 paths, --rate 950Mbps, --size $LOSSY_SIZE|$(printf %.0f "$g")|$(printf %.2f "$(calc "$g / 891")") of 891 (goal 1)|$(printf %.2f "$pct")|$(jnum "$f" rtos)|$(lkstat "lossy-$c" queue)")
    echo "lossy $c: ${rows[-1]}" >&2
  fi
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| setting | cc | emulator and sender | goodput Mbit/s | ratio | resent % | RTOs | emulator queue drops |"
echo "|---|---|---|---|---|---|---|---|"
for r in "${rows[@]}"; do echo "| ${r//|/ | } |"; done
