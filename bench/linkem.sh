#!/usr/bin/env bash
# bench/linkem.sh: sdrnet through the user-space link emulator at 1 Gbit/s,
# 50 ms RTT (25 ms each way), 1% loss each way, and the kernel's TCP (BBR,
# CUBIC) through the same impairments in TUN mode.
#
#   bash bench/linkem.sh
#
# For each scheme (SR-RTO, SR-NACK, EC RS(32,8), GBN): bulk goodput, and the
# completion time of 16 MiB messages sent one at a time (--depth 1).
#
# The emulator's rate applies per path (per client source port), so the
# multipath runs give each of the 8 paths 1/8 of the bottleneck
# (rate=125Mbps): 8 x 125 Mbit/s = the 1 Gbit/s link. GBN cannot spray
# and runs on one path with the whole 1 Gbit/s. The sender is paced at
# 950 Mbit/s in all.
#
# Knobs (environment): DELAY=25ms LOSS=1% RATE_MBPS=1000 PATHS=8
# PACE=950Mbps BULK=1GiB GBN_BULK=128MiB MSGS=1GiB GBN_MSGS=128MiB
# TCP_SECS=20 SCHEMES="sr sr-nack ec:32,8 gbn" TCP_CC="bbr cubic"
# RUN_TIMEOUT=300 RESULTS=DIR (keep raw JSON and emulator logs there).
# Everything runs on 127.0.0.1 or inside the tunnel's own namespaces;
# background processes are killed (and namespaces deleted) on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

DELAY=${DELAY:-25ms}
LOSS=${LOSS:-1%}
RATE_MBPS=${RATE_MBPS:-1000}
PATHS=${PATHS:-8}
PACE=${PACE:-950Mbps}
BULK=${BULK:-1GiB}
GBN_BULK=${GBN_BULK:-128MiB}
MSGS=${MSGS:-1GiB}
GBN_MSGS=${GBN_MSGS:-128MiB}
TCP_SECS=${TCP_SECS:-20}
SCHEMES=${SCHEMES:-"sr sr-nack ec:32,8 gbn"}
TCP_CC=${TCP_CC:-"bbr cubic"}
RUN_TIMEOUT=${RUN_TIMEOUT:-300}

use_tmp '*.json' '*.lk'

need_iperf3 || echo "no iperf3: the TCP rows will be skipped" >&2
command -v jq >/dev/null || command -v python3 >/dev/null || { echo "need jq or python3" >&2; exit 1; }
go build -o "$tmp/sdrnet" ./cmd/sdrnet
go build -o "$tmp/tuntcp" ./bench/tuntcp

case $LOSS in *%) loss_frac=$(calc "${LOSS%\%} / 100") ;; *) loss_frac=$(calc "$LOSS") ;; esac
delay_ms=$(calc "${DELAY%ms}")
path_rate="$(calc "$RATE_MBPS / $PATHS")Mbps"
spec_multi="delay=$DELAY,rate=$path_rate,loss=$LOSS"
spec_single="delay=$DELAY,rate=${RATE_MBPS}Mbps,loss=$LOSS"
sr_target=$(calc "0.9 * $RATE_MBPS * (1 - $loss_frac)")

machine
echo "link:    ${RATE_MBPS} Mbit/s, ${DELAY} each way, loss $LOSS each way"
echo "specs:   multipath ($PATHS paths) \"$spec_multi\"; single path \"$spec_single\""
echo "sender:  --rate $PACE"
echo

# through NAME SPEC CLIENT-ARGS...: sdrnet bench --listen <- linkem <- sdrnet
# bench --connect; the client's JSON goes to $tmp/NAME.json, the emulator's
# final counters to $tmp/NAME.lk. Returns the client's status.
through() {
  local name=$1 spec=$2 rc=0
  shift 2
  start_link "$name" "$spec" --msg 16MiB || return 1
  timeout "$RUN_TIMEOUT" "$tmp/sdrnet" bench --connect "127.0.0.1:$link_port" --json "$@" >"$tmp/$name.json" || rc=$?
  stop_link
  if [ "$rc" -ne 0 ]; then
    echo "$name: sdrnet bench --connect exited $rc$([ "$rc" -eq 124 ] && echo " (hung: killed after ${RUN_TIMEOUT}s)")" >&2
    failures+=("$name (exit $rc)")
  fi
  return "$rc"
}

# lkstat NAME KEY: a final forward-direction counter of the emulator
# (received, loss, queue).
lkstat() {
  grep '^forward: received' "$tmp/$1.lk" | tail -1 | sed -E "s/.*[ (]$2 ([0-9]+).*/\1/"
}

mib() { printf %.1f "$(calc "$(jnum "$1" "$2") / 1048576")"; }
ms() { printf %.1f "$(calc "$(jnum "$1" "$2") * 1000")"; }

failures=()
calib=() bulk=() msgs=()

# 0. Calibration: can the sender pace at $PACE at all (no emulator), and
# what does a loss-free emulated path give?
f="$tmp/pacer.json"
if timeout "$RUN_TIMEOUT" "$tmp/sdrnet" bench --scheme sr-nack --paths "$PATHS" --rate "$PACE" --size 512MiB --json >"$f"; then
  calib+=("sdrnet sr-nack, $PATHS paths, --rate $PACE, loopback, no emulator|$(printf %.0f "$(calc "$(jnum "$f" goodput_bps) / 1e6")") Mbit/s goodput, retx $(mib "$f" retransmitted_bytes) MiB")
else
  failures+=("pacer check")
fi
name=noloss
if through $name "delay=$DELAY,rate=$path_rate" --scheme sr-nack --paths "$PATHS" --rate "$PACE" --size "$BULK"; then
  f="$tmp/$name.json"
  calib+=("sdrnet sr-nack, $PATHS paths, --rate $PACE, emulator \"delay=$DELAY,rate=$path_rate\" (no loss)|$(printf %.0f "$(calc "$(jnum "$f" goodput_bps) / 1e6")") Mbit/s goodput, retx $(mib "$f" retransmitted_bytes) MiB, emulator queue drops $(lkstat $name queue)")
fi

# 1. Bulk goodput and 2. 16 MiB message completion, per scheme.
for scheme in $SCHEMES; do
  if [ "$scheme" = gbn ]; then
    spec=$spec_single
    flags=(--scheme gbn --paths 1 --window 2MiB --rate "$PACE")
    size=$GBN_BULK msize=$GBN_MSGS
  else
    spec=$spec_multi
    flags=(--scheme "$scheme" --paths "$PATHS" --rate "$PACE")
    size=$BULK msize=$MSGS
  fi
  tag=${scheme//[:,]/_}
  echo "$scheme: bulk $size, then 16MiB messages one at a time ($msize)..." >&2

  name=bulk-$tag
  if through "$name" "$spec" "${flags[@]}" --size "$size"; then
    f="$tmp/$name.json"
    g=$(calc "$(jnum "$f" goodput_bps) / 1e6")
    case $scheme in
      sr | sr-nack) verdict=$(awk -v g="$g" -v t="$sr_target" 'BEGIN {printf "%s (%.2fx of %.0f)", (g >= t ? "met" : "MISSED"), g / t, t}') ;;
      *) verdict="-" ;;
    esac
    bulk+=("$scheme|${flags[*]}|$spec|$size|$(printf %.0f "$g")|$verdict|$(mib "$f" retransmitted_bytes)|$(mib "$f" parity_bytes)|$(jnum "$f" rtos)|$(lkstat "$name" loss) / $(lkstat "$name" queue)|$(printf %.1f "$(jnum "$f" seconds)")")
  fi

  name=msg-$tag
  if through "$name" "$spec" "${flags[@]}" --msg 16MiB --depth 1 --size "$msize"; then
    f="$tmp/$name.json"
    verdict="-"
    if [[ $scheme == ec:* ]]; then
      km=${scheme#ec:}
      ideal=$(calc "$delay_ms + 16 * 1048576 * 8 * (${km%,*} + ${km#*,}) / ${km%,*} / ($RATE_MBPS * 1e6) * 1000")
      verdict=$(awk -v p="$(ms "$f" message_completion_s.p99)" -v i="$ideal" 'BEGIN {printf "%s (%.2fx of ideal %.1f ms; target 1.25x = %.1f ms)", (p <= 1.25 * i ? "met" : "MISSED"), p / i, i, 1.25 * i}')
    fi
    msgs+=("$scheme|${flags[*]}|$(jnum "$f" messages)|$(ms "$f" message_completion_s.p50)|$(ms "$f" message_completion_s.p99)|$(ms "$f" message_completion_s.max)|$verdict|$(mib "$f" retransmitted_bytes)|$(jnum "$f" rtos)")
  fi
done

# 3. Kernel TCP through the same impairments (TUN mode, one path: the whole
# 1 Gbit/s), and a loss-free, delay-free check of the tunnel's own capacity.
tcp=()
if command -v iperf3 >/dev/null; then
  echo "kernel TCP in TUN mode ($TCP_SECS s per congestion control)..." >&2
  "$tmp/tuntcp" -json -spec "rate=${RATE_MBPS}Mbps" -cc bbr -t 5 >"$tmp/tun-check.out" &
  pids+=($!)
  wait $! || failures+=("tuntcp check")
  "$tmp/tuntcp" -json -spec "$spec_single" -cc "${TCP_CC// /,}" -t "$TCP_SECS" >"$tmp/tun.out" &
  pids+=($!)
  wait $! || failures+=("tuntcp")
  if grep -q '^tuntcp: skip' "$tmp/tun.out"; then
    tcp+=("$(cat "$tmp/tun.out")")
  else
    while read -r line; do
      [ -n "$line" ] || continue
      printf '%s\n' "$line" >"$tmp/line.json"
      tcp+=("$(jnum "$tmp/line.json" cc)|$(jnum "$tmp/line.json" spec)|$(printf %.0f "$(calc "$(jnum "$tmp/line.json" goodput_bps) / 1e6")")|$(jnum "$tmp/line.json" retransmits)|$(printf %.1f "$(jnum "$tmp/line.json" mean_rtt_ms)")|$(jnum "$tmp/line.json" tunnel_dropped_loss) / $(jnum "$tmp/line.json" tunnel_dropped_queue)")
    done < <(cat "$tmp/tun-check.out" "$tmp/tun.out" | grep '^{')
  fi
fi

echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "Calibration:"
echo
echo "| run | result |"
echo "|---|---|"
for r in "${calib[@]}"; do IFS='|' read -r a b <<<"$r"; echo "| $a | $b |"; done
echo
echo "Bulk goodput (SR target: >= 0.9 x ${RATE_MBPS} Mbit/s x (1 - $loss_frac) = $(printf %.0f "$sr_target") Mbit/s):"
echo
echo "| scheme | sender flags | emulator spec | size | goodput Mbit/s | target | retx MiB | parity MiB | RTOs | emulator fwd lost / queue-dropped | s |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for r in "${bulk[@]}"; do echo "| ${r//|/ | } |"; done
echo
echo "16 MiB message completion, one message in flight (send to acknowledgement, at the sender):"
echo
echo "| scheme | sender flags | messages | p50 ms | p99 ms | max ms | target (EC) | retx MiB | RTOs |"
echo "|---|---|---|---|---|---|---|---|---|"
for r in "${msgs[@]}"; do echo "| ${r//|/ | } |"; done
echo
echo "Kernel TCP, iperf3 one stream, ${TCP_SECS} s (the first row: 5 s BBR through a rate-only tunnel, its capacity):"
echo
echo "| cc | tunnel spec | goodput Mbit/s | retransmits | mean RTT ms | tunnel fwd lost / queue-dropped |"
echo "|---|---|---|---|---|---|"
for r in "${tcp[@]}"; do
  case $r in tuntcp:*) echo "| $r | | | | | |" ;; *) echo "| ${r//|/ | } |" ;; esac
done
if [ ${#failures[@]} -gt 0 ]; then
  echo
  echo "failed or hung runs: ${failures[*]}"
fi
