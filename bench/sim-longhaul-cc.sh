#!/usr/bin/env bash
# bench/sim-longhaul-cc.sh: random loss is not congestion. Runs the SDR
# long-haul scenario (scenarios/sdr-longhaul.yaml: 25 ms RTT, 400 Gbit/s,
# random loss, no queue) over its whole grid of schemes and sizes at the
# two highest loss rates, once per controller, and prints each cell's mean
# completion against none's. The goal (the congestion-control issue):
# every nscc, dcqcn and bbr cell within 10% of none's (the script exits 1
# when a cell is not). Simulated, so
# deterministic: the same tree prints the same table.
#
#   bash bench/sim-longhaul-cc.sh      # knobs: CCS="nscc dcqcn bbr" LOSS="1e-3,1e-2"
set -euo pipefail
cd "$(dirname "$0")/.."
CCS=${CCS:-"nscc dcqcn bbr"}
LOSS=${LOSS:-"1e-3,1e-2"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/sdrnet" ./cmd/sdrnet
echo "tree: $(git rev-parse --short HEAD)$(git diff --quiet || echo ' + uncommitted changes')  date: $(date -u '+%Y-%m-%d %H:%M UTC')"
for cc in none $CCS; do
  "$tmp/sdrnet" sim sdr-longhaul --full --set "topology.loss=[$LOSS]" --set "transport.cc=$cc" \
    --out "$tmp/$cc" > "$tmp/$cc.log" 2>&1 || { cat "$tmp/$cc.log"; exit 1; }
done
python3 - "$tmp" $CCS <<'PY'
import json, sys, os
tmp, ccs = sys.argv[1], sys.argv[2:]
def cells(cc):
    with open(os.path.join(tmp, cc, "results.json")) as f:
        d = json.load(f)
    out = {}
    for c in d["cells"]:
        p = {k: v for k, v in c["params"].items() if k != "transport.cc"}
        out[json.dumps(p, sort_keys=True)] = c
    return out
base = cells("none")
worst = {}
print(f"{'cell':58} " + " ".join(f"{cc:>14}" for cc in ccs))
for key, b in base.items():
    p = json.loads(key)
    label = f"loss {p.get('topology.loss')} {p.get('transport.scheme')} {p.get('workload.size')}"
    row = []
    for cc in ccs:
        c = cells(cc)[key]
        r = c["mean_s"] / b["mean_s"]
        worst[cc] = max(worst.get(cc, 0), r)
        row.append(f"{r:14.3f}")
    print(f"{label:58} " + " ".join(row))
for cc in ccs:
    print(f"{cc}: worst cell {worst[cc]:.3f} x none's mean: {'within' if worst[cc] <= 1.1 else 'NOT within'} 10%")
sys.exit(0 if all(w <= 1.1 for w in worst.values()) else 1)
PY
