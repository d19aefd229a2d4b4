#!/usr/bin/env bash
# sdrnet beside kernel TCP through one emulated bottleneck (bench/tuntcp's
# TUN mode: 1 Gbit/s, 20 ms, a 256 KiB shared queue), ROUNDS rounds of
# CUBIC then BBR for each binary given, the binaries alternated within
# each round. Prints TCP's share of the bottleneck's forwarded bytes per
# run and, per binary and TCP, the range and how many runs left each side
# at least a quarter (issue 9's goal: neither under a quarter).
#
#   bash bench/tcp-share.sh BIN [BIN...]   # ROUNDS=3 MTU=9000 SECS=20 KERNEL=0
#
# KERNEL=1 puts the bottleneck in the kernel (tuntcp -kernel-queue: a tbf
# on a veth pair; the tunnel carries only the ACKs and the round trip's
# delay); the shares are then of the two flows' goodput.
#
# MTU=9000 runs sdrnet with --mtu 8192, MTU=1500 with --mtu 1024. At
# MTU 1500 a 2-vCPU machine's emulator and hosts compete for the CPU
# (the old notebook docs/benchmarks.md, in git history, "Giving way to kernel TCP with jumbo frames").
# Needs root, /dev/net/tun, ip, iperf3 and jq; tuntcp says why it skips.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

ROUNDS=${ROUNDS:-3}
MTU=${MTU:-9000}
SECS=${SECS:-20}
KERNEL=${KERNEL:-0}
[ $# -gt 0 ] || { echo "usage: bash bench/tcp-share.sh BIN [BIN...]" >&2; exit 2; }
command -v jq >/dev/null || { echo "tcp-share.sh needs jq" >&2; exit 2; }
case $MTU in
9000) dgram=8192 ;;
1500) dgram=1024 ;;
*) echo "tcp-share.sh: MTU=$MTU: want 9000 or 1500" >&2; exit 2 ;;
esac

use_tmp
machine
go build -o "$tmp/tuntcp" ./bench/tuntcp
spec='delay=10ms,rate=1Gbps,queue=256KiB,shared=1'
where=()
bottleneck="the emulator's"
if [ "$KERNEL" = 1 ]; then
  where=(-kernel-queue)
  bottleneck="a tbf in the kernel (-kernel-queue)"
fi
echo "rounds: $ROUNDS, tunnel MTU $MTU, sdrnet --mtu $dgram and every other default, $spec, $SECS s per TCP run; the bottleneck is $bottleneck"
echo
echo "| round | binary | TCP | TCP share | sdrnet share | sdrnet resent % | competitive spells |"
echo "|---|---|---|---|---|---|---|"

declare -A shares
failed=0
for r in $(seq "$ROUNDS"); do
  for bin in "$@"; do
    out="$tmp/run.json"
    if ! "$tmp/tuntcp" -json ${where[@]+"${where[@]}"} -mtu "$MTU" -spec "$spec" -cc cubic,bbr -t "$SECS" \
      -sdrnet "$bin" -sdrnet-args "--mtu $dgram" >"$out"; then
      echo "| $r | $bin | - | failed | | | |"
      failed=1
      continue
    fi
    if grep -q '^tuntcp: skip' "$out"; then
      cat "$out"
      exit 0
    fi
    rows=0
    while read -r cc tcp sdr resent spells; do
      echo "| $r | $bin | $cc | $tcp | $sdr | $resent | $spells |"
      shares["$bin $cc"]+="$tcp "
      rows=$((rows + 1))
    done < <(jq -r 'select(.mix) | [.cc, (.mix.tcp_share*100|round/100), (.mix.sdrnet_share*100|round/100), (.mix.sdrnet_resent_pct*100|round/100), .mix.sdrnet_competitive] | @tsv' "$out")
    if [ "$rows" -ne 2 ]; then # one per TCP: a run without sdrnet's share measured nothing
      echo "| $r | $bin | - | $rows of 2 runs reported both shares | | | |"
      failed=1
    fi
  done
done

echo
for bin in "$@"; do
  for cc in cubic bbr; do
    s=${shares["$bin $cc"]:-}
    [ -n "$s" ] || continue
    within=$(printf '%s\n' $s | awk '$1 >= 0.25 && $1 <= 0.75' | wc -l)
    n=$(printf '%s\n' $s | wc -l)
    lo=$(printf '%s\n' $s | sort -g | head -1)
    hi=$(printf '%s\n' $s | sort -g | tail -1)
    echo "$bin beside $cc: TCP share $lo-$hi; both sides at least a quarter in $within of $n runs"
  done
done
exit "$failed"
