#!/usr/bin/env bash
# bench/loopback.sh: kernel TCP (iperf3, one stream) and sdrnet bench over
# loopback, side by side in one run, with the ratio of each to TCP and the
# goal each row is held to (issue 16): with packet protection off, 1.0x
# TCP for SR-NACK on one path and on 8; with it on (full, the default),
# 0.7x; EC(32,8) 0.8x. Each row also shows its runs' spread (goal: within
# 10% of each other) and the worst p99/p50 of message completion (goal:
# at most 2).
#
#   bash bench/loopback.sh
#
# Knobs (environment): REPS=3 (runs per row; the table shows the median),
# SIZE=4GiB (bytes per sdrnet run), MSG=1MiB (message size; 8 in flight,
# so the receiver's posted buffers, MSG x 8, stay in cache as iperf3's
# 128 KiB buffer does; 8MiB messages make every payload copy a cache miss),
# TCP_SECS=10, SCHEMES="sr-nack ec:32,8", PATHS="1 8", AUTHS="none full",
# RUN_TIMEOUT=300 (seconds before a run counts as hung), RESULTS=DIR (keep
# every raw JSON there), CODECS (erasure-coded rows once per
# --codec-workers value listed, e.g. CODECS="0 2"; default: once, with
# sdrnet's default), CCS (every sdrnet row once per --cc value listed,
# e.g. CCS="none nscc"; default: once, with sdrnet's default controller).
# Everything runs on 127.0.0.1; background processes are killed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

REPS=${REPS:-3}
SIZE=${SIZE:-4GiB}
TCP_SECS=${TCP_SECS:-10}
MSG=${MSG:-1MiB}
SCHEMES=${SCHEMES:-"sr-nack ec:32,8"}
PATHS=${PATHS:-"1 8"}
AUTHS=${AUTHS:-"none full"}
RUN_TIMEOUT=${RUN_TIMEOUT:-300}
CODECS=${CODECS:-default}
CCS=${CCS:-default}

use_tmp '*.json'

need_iperf3
command -v jq >/dev/null || command -v python3 >/dev/null || { echo "need jq or python3" >&2; exit 1; }
go build -o "$tmp/sdrnet" ./cmd/sdrnet

machine
echo "iperf3:  $(iperf3 --version | head -1)"
echo

# timed FILE CMD...: runs CMD with stdout to FILE; prints "wall user+sys".
timed() {
  local out=$1; shift
  local TIMEFORMAT='%R %U %S' rc=0
  { time "$@" >"$out"; } 2>"$out.time" || rc=$?
  awk '{print $(NF-2), $(NF-1)+$NF}' "$out.time" | tail -1
  return $rc
}

# spread RUNS... prints (max - min) / median, as a percentage.
spread() {
  local m
  m=$(median "$@")
  printf '%s\n' "$@" | sort -g | awk -v m="$m" 'NR == 1 {lo = $1} {hi = $1} END {printf "%.0f%%", (m > 0) ? 100*(hi-lo)/m : 0}'
}

# complete FILE says whether a run's JSON has what the table needs: a
# goodput and message completion times. A run without them failed.
complete() {
  local g p50 p99
  g=$(jnum "$1" goodput_bps) p50=$(jnum "$1" message_completion_s.p50) p99=$(jnum "$1" message_completion_s.p99)
  awk -v g="$g" -v a="$p50" -v b="$p99" 'BEGIN {exit !(g+0 > 0 && a+0 > 0 && b+0 > 0)}' 2>/dev/null
}

# goal_for LABEL AUTH prints the ratio to TCP a row is held to.
goal_for() {
  case "$1" in
  *ec:32,8*) echo 0.8 ;;
  "sdrnet sr-nack" | "sdrnet sr-nack, cc "*) if [ "$2" = none ]; then echo 1.0; else echo 0.7; fi ;;
  *) echo - ;;
  esac
}

failures=()
rows=()   # "label|paths|auth|median Gbit/s|runs|cpu cores|spread|p99/p50|extra"

# Kernel TCP: one iperf3 stream, REPS runs of TCP_SECS seconds.
runs=() cpus=() retx=()
for i in $(seq "$REPS"); do
  port=$(free_port)
  iperf3 -s -1 -B 127.0.0.1 -p "$port" >/dev/null 2>&1 &
  pids+=($!)
  for _ in $(seq 50); do ss -Hltn "sport = :$port" | grep -q . && break; sleep 0.1; done
  f="$tmp/tcp-$i.json"
  timeout $((TCP_SECS + 30)) iperf3 -c 127.0.0.1 -p "$port" -t "$TCP_SECS" -J >"$f"
  wait "${pids[-1]}" 2>/dev/null || true
  g=$(calc "$(jnum "$f" end.sum_received.bits_per_second) / 1e9")
  # iperf3's CPU figures are percent of one core, per end.
  c=$(calc "($(jnum "$f" end.cpu_utilization_percent.host_total) + $(jnum "$f" end.cpu_utilization_percent.remote_total)) / 100")
  runs+=("$(printf %.2f "$g")") cpus+=("$c") retx+=("$(jnum "$f" end.sum_sent.retransmits)")
  echo "tcp run $i: $(printf %.2f "$g") Gbit/s, $(printf %.2f "$c") cores, ${retx[-1]} retransmits" >&2
done
tcp=$(median "${runs[@]}")
rows+=("kernel TCP (iperf3, 1 stream, ${TCP_SECS}s)|-|-|$tcp|${runs[*]}|$(printf %.2f "$(median "${cpus[@]}")")|$(spread "${runs[@]}")|-|retx $(median "${retx[@]}")")

# sdrnet bench: both ends in one process, SIZE per run.
for auth in $AUTHS; do
for scheme in $SCHEMES; do
  codecs=default
  case $scheme in ec:* | xor:*) codecs=$CODECS ;; esac
  for codec in $codecs; do
  for cc in $CCS; do
  flags=() label="sdrnet $scheme"
  if [ "$codec" != default ]; then flags=(--codec-workers "$codec") label="$label, codec $codec"; fi
  if [ "$cc" != default ]; then flags+=(--cc "$cc") label="$label, cc $cc"; fi
  for p in $PATHS; do
    runs=() cpus=() rx=() tails=()
    for i in $(seq "$REPS"); do
      f="$tmp/sdrnet-${scheme//[:,]/_}-c$codec-$cc-p$p-$auth-$i.json"
      if ! wc=$(timed "$f" timeout "$RUN_TIMEOUT" "$tmp/sdrnet" bench --scheme "$scheme" --paths "$p" --auth "$auth" --msg "$MSG" --size "$SIZE" "${flags[@]}" --json); then
        echo "$label paths=$p auth=$auth run $i: FAILED or hung (killed after ${RUN_TIMEOUT}s): $(tail -3 "$f.time" | head -2)" >&2
        failures+=("$label paths=$p auth=$auth run $i")
        continue
      fi
      if ! complete "$f"; then
        echo "$label paths=$p auth=$auth run $i: exited 0 without a goodput and completion times in its JSON" >&2
        failures+=("$label paths=$p auth=$auth run $i")
        continue
      fi
      wall=${wc% *} cpu=${wc#* }
      g=$(calc "$(jnum "$f" goodput_bps) / 1e9")
      runs+=("$(printf %.2f "$g")") cpus+=("$(calc "$cpu / $wall")")
      rx+=("$(calc "$(jnum "$f" retransmitted_bytes) / 1048576")")
      tails+=("$(calc "$(jnum "$f" message_completion_s.p99) / $(jnum "$f" message_completion_s.p50)")")
      echo "$label paths=$p auth=$auth run $i: $(printf %.2f "$g") Gbit/s, $(printf %.2f "$(calc "$cpu / $wall")") cores, retx $(printf %.0f "${rx[-1]}") MiB, $(jnum "$f" rtos) RTOs, p99/p50 $(printf %.2f "${tails[-1]}")" >&2
    done
    [ ${#runs[@]} -gt 0 ] || runs=(0) cpus=(0) rx=(0) tails=(0)
    worst=$(printf '%s\n' "${tails[@]}" | sort -g | tail -1)
    rows+=("$label|$p|$auth|$(median "${runs[@]}")|${runs[*]}|$(printf %.2f "$(median "${cpus[@]}")")|$(spread "${runs[@]}")|$(printf %.2f "$worst")|retx $(printf %.0f "$(median "${rx[@]}")") MiB")
  done
  done
  done
done
done

echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "sdrnet runs: --msg $MSG, 8 messages in flight, --size $SIZE; CPU is user+sys over wall time, both ends together"
echo
echo "| transport | paths | auth | Gbit/s (median of $REPS) | runs | spread | p99/p50 (worst) | ratio to TCP | ratio goal | CPU (cores) | note |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for r in "${rows[@]}"; do
  IFS='|' read -r label p auth g all cpu spr tail extra <<<"$r"
  ratio=$(calc "$g / $tcp")
  goal=$(goal_for "$label" "$auth")
  met=""
  if [ "$goal" != "-" ]; then
    met=$(awk -v r="$ratio" -v g="$goal" 'BEGIN {print (r >= g) ? " met" : " missed"}')
  fi
  printf '| %s | %s | %s | %.2f | %s | %s | %s | %.2f | %s%s | %s | %s |\n' "$label" "$p" "$auth" "$g" "$all" "$spr" "$tail" "$ratio" "$goal" "$met" "$cpu" "$extra"
done
if [ ${#failures[@]} -gt 0 ]; then
  echo
  echo "failed or hung runs (left out of the medians): ${failures[*]}"
  exit 1
fi
