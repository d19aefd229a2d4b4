#!/usr/bin/env bash
# bench/cc-loopback.sh: sdrnet bench over loopback (both ends in one
# process), each congestion controller against none, runs interleaved so
# the machine's load falls on all alike.
#
#   bash bench/cc-loopback.sh
#
# Per controller: goodput (median, min, max, spread of the runs: max/min - 1),
# the median's ratio to none's, bytes retransmitted as a share of the data,
# RTOs, and UDP receive-buffer drops (RcvbufErrors in /proc/net/snmp over
# the run: the only place loopback loses datagrams).
#
# Knobs (environment): REPS=5 SIZE=1GiB CCS="none nscc" ARGS="" (more
# sdrnet bench flags, like --min-rto 100us), RUN_TIMEOUT=300.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

REPS=${REPS:-5}
SIZE=${SIZE:-1GiB}
CCS=${CCS:-"none nscc"}
ARGS=${ARGS:-}
RUN_TIMEOUT=${RUN_TIMEOUT:-300}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v jq >/dev/null || command -v python3 >/dev/null || { echo "need jq or python3" >&2; exit 1; }
go build -o "$tmp/sdrnet" ./cmd/sdrnet

rcvbuf() { awk '/^Udp:/ {getline; print $6}' /proc/net/snmp; }

machine
echo "run:     sdrnet bench --size $SIZE $ARGS --cc CC, $REPS runs per controller, interleaved"
echo

declare -A g rx rto drop
for i in $(seq "$REPS"); do
  for c in $CCS; do
    f="$tmp/$c-$i.json"
    d0=$(rcvbuf)
    # shellcheck disable=SC2086
    timeout "$RUN_TIMEOUT" "$tmp/sdrnet" bench --size "$SIZE" --cc "$c" $ARGS --json >"$f"
    d=$(($(rcvbuf) - d0))
    gb=$(calc "$(jnum "$f" goodput_bps) / 1e9")
    pct=$(calc "100 * $(jnum "$f" retransmitted_bytes) / $(jnum "$f" bytes)")
    g[$c]="${g[$c]:-} $gb" rx[$c]="${rx[$c]:-} $pct" rto[$c]="${rto[$c]:-} $(jnum "$f" rtos)" drop[$c]="${drop[$c]:-} $d"
    printf '%s run %d: %.2f Gbit/s, resent %.3f%%, %s RTOs, %s rcvbuf drops, window %s\n' "$c" "$i" "$gb" "$pct" \
      "$(jnum "$f" rtos)" "$d" "$(jnum "$f" cc_window_bytes)" >&2
  done
done

base=$(median ${g[none]:-0})
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| cc | Gbit/s median | min | max | spread | ratio to none | resent % (max) | RTOs (runs) | rcvbuf drops (runs) |"
echo "|---|---|---|---|---|---|---|---|---|"
for c in $CCS; do
  # shellcheck disable=SC2086
  read -r lo hi < <(printf '%s\n' ${g[$c]} | sort -g | awk 'NR==1 {lo=$1} {hi=$1} END {print lo, hi}')
  # shellcheck disable=SC2086
  m=$(median ${g[$c]})
  # shellcheck disable=SC2086
  printf '| %s | %.2f | %.2f | %.2f | %.0f%% | %s | %.3f | %s | %s |\n' "$c" "$m" "$lo" "$hi" "$(calc "100 * ($hi / $lo - 1)")" \
    "$( [ "$base" != 0 ] && printf %.2f "$(calc "$m / $base")" || echo -)" \
    "$(printf '%s\n' ${rx[$c]} | sort -g | tail -1)" "${rto[$c]# }" "${drop[$c]# }"
done
