#!/usr/bin/env bash
# bench/loopback.sh: kernel TCP (iperf3, one stream) and sdrnet bench over
# loopback, side by side in one run, with the ratio of each to TCP.
# Every sdrnet row runs with sdrnet's defaults but for the flags it
# names. Goals (issue 47): the defaults (packet protection on) at least
# 1.0x TCP; --auth none at least 1.4x. Each row also shows its runs'
# spread and the worst p99/p50 of message completion.
#
#   bash bench/loopback.sh
#
# Knobs (environment): REPS=3 (runs per row; the table shows the median),
# SIZE=4GiB (bytes per sdrnet run), TCP_SECS=10, ROWS (the sdrnet rows,
# one set of flags each, separated by ";"; an empty set is the defaults;
# default: "; --auth none"), RUN_TIMEOUT=300 (seconds before a run counts
# as hung), DOC=docs/performance.md (the table replaces this script's
# section there; DOC= leaves the docs alone). Everything runs on
# 127.0.0.1; background processes are killed on exit. Exits 1 when a run
# failed or a goal is not met (after writing the table).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

REPS=${REPS:-3}
SIZE=${SIZE:-4GiB}
TCP_SECS=${TCP_SECS:-10}
ROWS=${ROWS-"; --auth none"}
RUN_TIMEOUT=${RUN_TIMEOUT:-300}
DOC=${DOC-docs/performance.md}

use_tmp '*.json'

need_iperf3
command -v jq >/dev/null || command -v python3 >/dev/null || { echo "need jq or python3" >&2; exit 1; }
go build -o "$tmp/sdrnet" ./cmd/sdrnet

{
  machine
  echo "iperf3:  $(iperf3 --version | head -1)"
} | tee "$tmp/head"
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

# goal_for FLAGS prints the ratio to TCP a row is held to.
goal_for() {
  case "$(echo $1)" in
  "") echo 1.0 ;;
  "--auth none") echo 1.4 ;;
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
rows+=("kernel TCP (iperf3, 1 stream, ${TCP_SECS}s)|-|$tcp|${runs[*]}|$(printf %.2f "$(median "${cpus[@]}")")|$(spread "${runs[@]}")|-|retx $(median "${retx[@]}")")

# sdrnet bench: both ends in one process, SIZE per run.
IFS=';' read -r -a rowflags <<<"$ROWS"
for flagset in "${rowflags[@]}"; do
  read -r -a flags <<<"$flagset"
  label="sdrnet ${flags[*]:-defaults}"
  runs=() cpus=() rx=() tails=()
  for i in $(seq "$REPS"); do
    f="$tmp/sdrnet-$(echo "${flags[*]:-defaults}" | tr -c 'a-z0-9' _)-$i.json"
    if ! wc=$(timed "$f" timeout "$RUN_TIMEOUT" "$tmp/sdrnet" bench --size "$SIZE" "${flags[@]}" --json); then
      echo "$label run $i: FAILED or hung (killed after ${RUN_TIMEOUT}s): $(tail -3 "$f.time" | head -2)" >&2
      failures+=("$label run $i")
      continue
    fi
    if ! complete "$f"; then
      echo "$label run $i: exited 0 without a goodput and completion times in its JSON" >&2
      failures+=("$label run $i")
      continue
    fi
    wall=${wc% *} cpu=${wc#* }
    g=$(calc "$(jnum "$f" goodput_bps) / 1e9")
    runs+=("$(printf %.2f "$g")") cpus+=("$(calc "$cpu / $wall")")
    rx+=("$(calc "$(jnum "$f" retransmitted_bytes) / 1048576")")
    tails+=("$(calc "$(jnum "$f" message_completion_s.p99) / $(jnum "$f" message_completion_s.p50)")")
    echo "$label run $i: $(printf %.2f "$g") Gbit/s, $(printf %.2f "$(calc "$cpu / $wall")") cores, retx $(printf %.0f "${rx[-1]}") MiB, $(jnum "$f" rtos) RTOs, p99/p50 $(printf %.2f "${tails[-1]}")" >&2
  done
  [ ${#runs[@]} -gt 0 ] || runs=(0) cpus=(0) rx=(0) tails=(0)
  worst=$(printf '%s\n' "${tails[@]}" | sort -g | tail -1)
  rows+=("$label|${flags[*]:-}|$(median "${runs[@]}")|${runs[*]}|$(printf %.2f "$(median "${cpus[@]}")")|$(spread "${runs[@]}")|$(printf %.2f "$worst")|retx $(printf %.0f "$(median "${rx[@]}")") MiB")
done

echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$tmp/head"
goal_met=1
{
  echo "sdrnet runs: bench --size $SIZE and the flags named, both ends in one process; CPU is user+sys over wall time, both ends together"
  echo
  echo "| transport | Gbit/s (median of $REPS) | runs | spread | p99/p50 (worst) | ratio to TCP | ratio goal | CPU (cores) | note |"
  echo "|---|---|---|---|---|---|---|---|---|"
  for r in "${rows[@]}"; do
    IFS='|' read -r label fl g all cpu spr tail extra <<<"$r"
    ratio=$(calc "$g / $tcp")
    goal=- met=""
    [ "$label" = "${rows[0]%%|*}" ] || goal=$(goal_for "$fl")
    if [ "$goal" != "-" ]; then
      met=$(awk -v r="$ratio" -v g="$goal" 'BEGIN {print (r >= g) ? " met" : " missed"}')
      [ "$met" = " met" ] || goal_met=0
    fi
    printf '| %s | %.2f | %s | %s | %s | %.2f | %s%s | %s | %s |\n' "$label" "$g" "$all" "$spr" "$tail" "$ratio" "$goal" "$met" "$cpu" "$extra"
  done
} >"$tmp/table"
echo
cat "$tmp/head" "$tmp/table"
if [ -n "$DOC" ]; then
  results_section "$DOC" bench/loopback.sh "Loopback against kernel TCP" "" "$tmp/head" "$tmp/table"
fi
if [ ${#failures[@]} -gt 0 ]; then
  echo
  echo "failed or hung runs (left out of the medians): ${failures[*]}"
  exit 1
fi
[ "$goal_met" = 1 ] || { echo "goal not met (see the table)" >&2; exit 1; }
