#!/usr/bin/env bash
# bench/parallel-projection.sh: how one simulation's events would spread
# over threads (issue 51's measured projection, before a parallel engine
# exists). A k-ary fat-tree permutation (BenchmarkFatTreePermutation's
# fabric: 400 Gbit/s, 1 us cables, SR-NACK over 16 sprayed paths; BYTES
# per flow) runs with every event tagged by the rack it works on; the
# events are cut into windows one lookahead long (the least delay of a
# cable between racks: within a window no rack can affect another), racks
# go to threads in contiguous blocks or interleaved (rack i to thread
# i mod n), and a window lasts as long as its busiest thread. The
# projected speedup counts events, not their cost, and no
# synchronisation: it bounds what threads can gain. Each row also gives
# the share of events that pass a packet between threads.
#
#   bash bench/parallel-projection.sh     # about 2 minutes on 2 vCPUs
#
# Knobs: KS="16 32" BYTES=2000000 (htsim's permutation's flow size)
# DOC=docs/performance.md (DOC= leaves the docs alone).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

DOC=${DOC-docs/performance.md}
KS=${KS:-16 32}
BYTES=${BYTES:-2000000}
use_tmp
machine >"$tmp/head"
go test -c -o "$tmp/sim.test" ./sim
{
  echo "| k | hosts | racks (parts) | events | between racks | windows (rounds) | events per window | busiest rack / mean | threads | racks to threads | projected speedup | idle, mean / worst thread | events passing a packet between threads |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
} >"$tmp/table"
for k in $KS; do
  echo "projecting k=$k..." >&2
  "$tmp/sim.test" -test.run '^TestParallelProjection$' -test.v -test.timeout 30m \
    -project.k "$k" -project.bytes "$BYTES" >"$tmp/k$k.log" 2>&1 || { cat "$tmp/k$k.log" >&2; exit 1; }
  python3 - "$tmp/k$k.log" >>"$tmp/table" <<'PY'
import re, sys
log = open(sys.argv[1]).read()
m = re.search(r"k=(\d+), \d+ bytes per flow: (\d+) hosts in (\d+) racks; (\d+) events \(([\d.]+)% of no rack, ([\d.]+)% carrying a packet between racks\); (\d+) windows of (\S+) \((\d+) events each\)", log)
b = re.search(r"most \d+ \(([\d.]+)x the mean\)", log)
k, hosts, racks, events, _, between, windows, window, per = m.groups()
for t, how, sp, idle, worst, hand in re.findall(r"threads (\d+), (\w+): projected speedup ([\d.]+)x, idle (\d+)% mean, (\d+)% worst thread, ([\d.]+)% of events pass", log):
    if t == "1":
        continue
    print("| %s | %s | %s | %.3g | %s%% | %s of %s | %s | %sx | %s | %s | %sx | %s%% / %s%% | %s%% |" % (k, hosts, racks, float(events), between, windows, window, per, b.group(1), t, how, sp, idle, worst, hand))
PY
done
cat "$tmp/table"
if [ -n "$DOC" ]; then
  results_section "$DOC" bench/parallel-projection.sh "One simulation on several threads: the projection" \
    "Each row: the run's events spread over that many threads by rack, under conservative synchronisation once per lookahead; an upper bound (events counted, not their cost; no synchronisation overhead). $BYTES bytes per flow." \
    "$tmp/head" "$tmp/table"
fi
