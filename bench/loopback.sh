#!/usr/bin/env bash
# bench/loopback.sh: kernel TCP (iperf3, one stream) and sdrnet bench over
# loopback, side by side in one run, with the ratio of each to TCP.
#
#   bash bench/loopback.sh
#
# Knobs (environment): REPS=3 (runs per row; the table shows the median),
# SIZE=4GiB (bytes per sdrnet run), TCP_SECS=10, SCHEMES="sr-nack ec:32,8",
# PATHS="1 8", RUN_TIMEOUT=300 (seconds before a run counts as hung),
# RESULTS=DIR (keep every raw JSON there).
# Everything runs on 127.0.0.1; background processes are killed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

REPS=${REPS:-3}
SIZE=${SIZE:-4GiB}
TCP_SECS=${TCP_SECS:-10}
SCHEMES=${SCHEMES:-"sr-nack ec:32,8"}
PATHS=${PATHS:-"1 8"}
RUN_TIMEOUT=${RUN_TIMEOUT:-300}

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

failures=()
rows=()   # "label|paths|median Gbit/s|runs|cpu cores|extra"

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
rows+=("kernel TCP (iperf3, 1 stream, ${TCP_SECS}s)|-|$tcp|${runs[*]}|$(printf %.2f "$(median "${cpus[@]}")")|retx $(median "${retx[@]}")")

# sdrnet bench: both ends in one process, SIZE per run.
for scheme in $SCHEMES; do
  for p in $PATHS; do
    runs=() cpus=() rx=()
    for i in $(seq "$REPS"); do
      f="$tmp/sdrnet-${scheme//[:,]/_}-p$p-$i.json"
      if ! wc=$(timed "$f" timeout "$RUN_TIMEOUT" "$tmp/sdrnet" bench --scheme "$scheme" --paths "$p" --size "$SIZE" --json); then
        echo "sdrnet $scheme paths=$p run $i: FAILED or hung (killed after ${RUN_TIMEOUT}s): $(tail -3 "$f.time" | head -2)" >&2
        failures+=("$scheme paths=$p run $i")
        continue
      fi
      wall=${wc% *} cpu=${wc#* }
      g=$(calc "$(jnum "$f" goodput_bps) / 1e9")
      runs+=("$(printf %.2f "$g")") cpus+=("$(calc "$cpu / $wall")")
      rx+=("$(calc "$(jnum "$f" retransmitted_bytes) / 1048576")")
      echo "sdrnet $scheme paths=$p run $i: $(printf %.2f "$g") Gbit/s, $(printf %.2f "$(calc "$cpu / $wall")") cores, retx $(printf %.0f "${rx[-1]}") MiB, $(jnum "$f" rtos) RTOs" >&2
    done
    [ ${#runs[@]} -gt 0 ] || runs=(0) cpus=(0) rx=(0)
    rows+=("sdrnet $scheme|$p|$(median "${runs[@]}")|${runs[*]}|$(printf %.2f "$(median "${cpus[@]}")")|retx $(printf %.0f "$(median "${rx[@]}")") MiB")
  done
done

echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| transport | paths | Gbit/s (median of $REPS) | runs | ratio to TCP | CPU (cores, both ends) | note |"
echo "|---|---|---|---|---|---|---|"
for r in "${rows[@]}"; do
  IFS='|' read -r label p g all cpu extra <<<"$r"
  printf '| %s | %s | %.2f | %s | %.2f | %s | %s |\n' "$label" "$p" "$g" "$all" "$(calc "$g / $tcp")" "$cpu" "$extra"
done
if [ ${#failures[@]} -gt 0 ]; then
  echo
  echo "failed or hung runs (left out of the medians): ${failures[*]}"
fi
