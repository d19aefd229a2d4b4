#!/usr/bin/env bash
# bench/claims.sh: every built-in scenario's quick grid, run once, and
# each claim's verdict (direction, magnitude) in one table: the papers'
# findings as this tree reproduces them.
#
#   bash bench/claims.sh          # about 2 minutes on 2 vCPUs
#
# Knobs: SDRNET=BIN DOC=docs/performance.md (DOC= leaves the docs alone).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

DOC=${DOC-docs/performance.md}
use_tmp
sdrnet_bin
machine >"$tmp/head"
names=$("$tmp/sdrnet" sim --list | awk '{print $1}')
for s in $names; do
  echo "running $s..." >&2
  "$tmp/sdrnet" sim "$s" --out "$tmp/out/$s" >/dev/null
done
python3 - "$tmp/out" $names >"$tmp/table" <<'PY'
import json, math, os, sys
root, names = sys.argv[1], sys.argv[2:]
order = ["fails", "magnitude off", "not judged", "holds"]
rows, tally = [], {o: 0 for o in order}
for name in names:
    r = json.load(open(os.path.join(root, name, "results.json")))
    for v in r["verdicts"]:
        tally[v["outcome"]] += 1
        ratios = []
        for g in v["groups"] or []:
            b, w = g["better"], g["worse"]
            ratios.append(1.0 if b == 0 and w == 0 else (math.inf if b == 0 else w / b))
        if ratios:
            lo, hi = min(ratios), max(ratios)
            f = lambda x: "unbounded" if math.isinf(x) else ("%.3f" % x if x < 2 else "%.3g" % x)
            ratio = f(lo) + "x" if f(lo) == f(hi) else "%s-%sx" % (f(lo), f(hi))
        else:
            ratio = "-"
        settings = "%d of %d" % (v["holds"], len(v["groups"] or [])) + (" (%d tied)" % v["ties"] if v["ties"] else "")
        rows.append((order.index(v["outcome"]), name, v["claim"], "paper" if v["source"] == "paper" else "ours",
                     v["outcome"], settings if v["judged"] else v.get("reason", ""), ratio, v.get("magnitude", "") or "-"))
rows.sort(key=lambda r: r[0])
plural = {"fails": "fail", "holds": "hold"}
print("%d claims: %s." % (len(rows), ", ".join("%d %s" % (tally[o], plural.get(o, o) if tally[o] != 1 else o) for o in order if tally[o])))
print()
print("| scenario | claim | whose | outcome | direction holds | worse / better | claimed |")
print("|---|---|---|---|---|---|---|")
for _, name, claim, whose, outcome, settings, ratio, mag in rows:
    print("| %s | %s | %s | %s | %s | %s | %s |" % (name, claim.replace("|", "/"), whose, outcome, settings, ratio, mag))
PY
cat "$tmp/table"
if [ -n "$DOC" ]; then
  results_section "$DOC" bench/claims.sh "The papers' claims as this tree reproduces them" \
    "Every built-in scenario's quick grid (\`sdrnet sim NAME\`), its claims judged as its report judges them: failing ones first." \
    "$tmp/head" "$tmp/table"
fi
