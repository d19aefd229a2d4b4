#!/usr/bin/env bash
# bench/csaud-training.sh: the csaud-training scenario (CSA-UD against RC
# on a training iteration: an expert-parallel all-to-all and a data-
# parallel all-reduce on a loaded fat-tree) at the sizes issue 50 names,
# 256 and 1,024 GPUs, one worker per size: each cell's iteration, its
# claims' verdicts, and the wall time and peak memory of the run.
#
#   bash bench/csaud-training.sh     # about half an hour on 2 vCPUs
#
# Knobs: SDRNET=BIN DOC=docs/performance.md (DOC= leaves the docs alone),
# SIZES="256 1024".
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

DOC=${DOC-docs/performance.md}
SIZES=${SIZES-256 1024}
use_tmp
sdrnet_bin
machine >"$tmp/head"
for n in $SIZES; do
  echo "running $n GPUs..." >&2
  /usr/bin/time -f "%e %U %S %M" -o "$tmp/time-$n" "$tmp/sdrnet" sim csaud-training \
    --set "workload.hosts=$n" --jobs 1 --out "$tmp/out-$n" >/dev/null
done
python3 - "$tmp" $SIZES >"$tmp/table" <<'PY'
import json, sys
tmp, sizes = sys.argv[1], sys.argv[2:]
print("| GPUs | scheme | paths | iteration mean | p50 | exposed communication | resent | events |")
print("|---|---|---|---|---|---|---|---|")
runs, verdicts = [], []
for n in sizes:
    wall, user, sys_, kb = open("%s/time-%s" % (tmp, n)).read().split()
    r = json.load(open("%s/out-%s/results.json" % (tmp, n)))
    for c in r["cells"]:
        p = c["params"]
        print("| %s | %s | %s | %.2f ms | %.2f ms | %.0f%% | %.1f MiB | %.3g |" % (
            n, p["transport.scheme"], p["transport.select"], 1e3 * c["mean_s"], 1e3 * c["p50_s"],
            100 * c["training"]["exposed_share"], c["retx_bytes"] / 2**20, c["events"]))
    runs.append((n, float(wall), float(user) + float(sys_), int(kb) / 2**20, len(r["cells"])))
    for v in r["verdicts"]:
        ratios = [g["worse"] / g["better"] for g in v["groups"] if g["better"] > 0]
        verdicts.append((n, v["claim"], v["outcome"], "%.3gx" % min(ratios) if ratios else "-"))
print()
print("| GPUs | claim (ours) | verdict | worse / better |")
print("|---|---|---|---|")
for n, claim, outcome, ratio in verdicts:
    print("| %s | %s | %s | %s |" % (n, claim, outcome, ratio))
print()
print("| GPUs | cells | wall, one worker | CPU | peak memory |")
print("|---|---|---|---|---|")
for n, wall, cpu, gib, cells in runs:
    print("| %s | %d | %.0f s | %.0f s | %.2f GiB |" % (n, cells, wall, cpu, gib))
PY
cat "$tmp/table"
if [ -n "$DOC" ]; then
  results_section "$DOC" bench/csaud-training.sh "CSA-UD against RC on a training iteration" \
    "\`sdrnet sim csaud-training --set workload.hosts=N --jobs 1\`: the scenario's full grid at each size (go-back-N and CSA-UD, each on one path and sprayed), its claims judged on that run." \
    "$tmp/head" "$tmp/table"
fi
