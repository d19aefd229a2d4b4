#!/usr/bin/env bash
# bench/parallel.sh: one simulation on several threads. A k-ary fat-tree
# permutation (BenchmarkFatTreeInParts: 400 Gbit/s, 1 us cables, SR-NACK
# over 16 sprayed paths, 2,000,000 bytes per flow, htsim's permutation's
# size) runs on one engine (threads: 0, the default), and split by racks
# on 1 and on 2 threads (threads: 1, 2; the same output on any number).
# Rounds alternate the three, so the machine's drift falls on each alike;
# the table gives each one's median wall time and the ratios of medians.
# A split run has more events than one engine's (a packet into another
# rack is handed over as it leaves the port, then arrives), so the cost
# per event is given beside the cost per hop (a packet crossing a cable).
#
#   bash bench/parallel.sh     # about 5 minutes on 2 vCPUs
#
# Knobs: KS="8 16 32" ROUNDS=2 DOC=docs/performance.md (DOC= leaves the
# docs alone).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

DOC=${DOC-docs/performance.md}
KS=${KS:-8 16 32}
ROUNDS=${ROUNDS:-2}
use_tmp
machine >"$tmp/head"
go test -c -o "$tmp/sim.test" ./sim
runs=(one-engine threads=1 threads=2)
for k in $KS; do
  for r in $(seq "$ROUNDS"); do
    for run in "${runs[@]}"; do
      echo "k=$k round $r: $run..." >&2
      (cd sim && "$tmp/sim.test" -test.run '^$' -test.bench "^BenchmarkFatTreeInParts/k$k/$run\$" \
        -test.benchtime 1x -test.timeout 60m -parts.k "$k") >"$tmp/k$k-$run-$r.log" 2>&1 ||
        { cat "$tmp/k$k-$run-$r.log" >&2; exit 1; }
    done
  done
done
python3 - "$tmp" "$KS" "$ROUNDS" >"$tmp/table" <<'PY'
import re, statistics, sys
tmp, ks, rounds = sys.argv[1], sys.argv[2].split(), int(sys.argv[3])
def runs(k, run):
    out = []
    for r in range(1, rounds + 1):
        log = open(f"{tmp}/k{k}-{run}-{r}.log").read()
        out.append(tuple(float(re.search(r"([\d.]+) %s\s" % u, log).group(1)) for u in ("ns/op", "events/op", "hops/op")))
    return out
print("| k | hosts | run | wall, median (rounds) | events | ns per event | ns per hop | speedup over one engine | speedup over 1 thread |")
print("|---|---|---|---|---|---|---|---|---|")
per_event = {}
for k in ks:
    med = {}
    for run in ("one-engine", "threads=1", "threads=2"):
        rs = runs(k, run)
        wall = statistics.median(r[0] for r in rs)
        events, hops = rs[0][1], rs[0][2]
        med[run] = wall
        per_event[(k, run)] = wall / events
        one = "" if run == "one-engine" else "%.2fx" % (med["one-engine"] / wall)
        thr = "%.2fx" % (med["threads=1"] / wall) if run == "threads=2" else ""
        print("| %s | %d | %s | %.1f s (%s) | %.3g | %.0f | %.0f | %s | %s |" % (
            k, int(k) ** 3 // 4, run.replace("=", " "), wall / 1e9,
            ", ".join("%.1f" % (r[0] / 1e9) for r in rs), events, wall / events, wall / hops, one, thr))
if len(ks) >= 2:
    hi = ks[-1]
    print()
    for lo in ks[:-1]:
        print("Cost per event at k=%s over k=%s: one engine %.2fx, split on 1 thread %.2fx." % (
            hi, lo, per_event[(hi, "one-engine")] / per_event[(lo, "one-engine")],
            per_event[(hi, "threads=1")] / per_event[(lo, "threads=1")]))
PY
cat "$tmp/table"
if [ -n "$DOC" ]; then
  results_section "$DOC" bench/parallel.sh "One simulation on several threads" \
    "A fat-tree permutation of 2,000,000-byte flows, on one engine (the default) and split by racks (threads: 1 and 2, the same output on any number); $ROUNDS alternated rounds, medians." \
    "$tmp/head" "$tmp/table"
fi
