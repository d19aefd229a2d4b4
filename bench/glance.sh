#!/usr/bin/env bash
# bench/glance.sh: README.md's "Results at a glance" from the figures in
# docs/performance.md, which the benchmark scripts write; nothing in it
# is typed by hand. Run it after a benchmark script refreshed its section.
#
#   bash bench/glance.sh            # rewrites the block in README.md
#   CHECK=1 bash bench/glance.sh    # exits 1 where README.md is stale
set -euo pipefail
cd "$(dirname "$0")/.."
python3 - "${CHECK:-}" <<'PY'
import re, sys
check = sys.argv[1] == "1"
perf = open("docs/performance.md").read()

def section(name):
    m = re.search(r"<!-- %s begin -->(.*?)<!-- %s end -->" % (re.escape(name), re.escape(name)), perf, re.S)
    if not m:
        return None
    text = m.group(1)
    head = dict(re.findall(r"^\s*(\w+):\s+(.*)$", text, re.M))
    rows = [[c.strip() for c in l.strip().strip("|").split("|")] for l in text.splitlines()
            if l.startswith("|") and not l.startswith("|---")]
    return text, head, rows

def at(head):
    return "at %s, %s" % (head.get("tree", "?").split()[0], head.get("date", "?"))

lines = []
s = section("bench/claims.sh")
if s:
    text, head, rows = s
    first = text.strip().split("```")[2].strip().splitlines()[0]
    lines.append("- **The papers' claims**, every built-in scenario's quick grid judged as its report judges it: %s "
                 "([table](docs/performance.md), `bash bench/claims.sh`, %s)" % (first.rstrip("."), at(head)))
s = section("bench/wan.sh")
if s:
    text, head, rows = s
    hdr = rows[0]
    body = [r for r in rows[1:] if len(r) == len(hdr)]  # the main table, not the sharing one
    i = hdr.index("defaults / BBR")
    lossy = [r for r in body if not r[1].startswith(("clean", "shallow"))]
    ratios = [float(r[i]) for r in lossy]
    best = max(lossy, key=lambda r: float(r[i]))
    spec = re.search(r"`([^`]*)`", best[1]).group(1).split(",")[-1]
    lines.append("- **Lossy wide-area links**, 1 Gbit/s at 20-100 ms with random and bursty loss, sdrnet's defaults "
                 "against kernel TCP BBR through the same emulator: at least 1.0x in %d of %d lossy cells, %.2f-%.2fx, "
                 "%.2fx at %s with %s (`bash bench/wan.sh`, %s)" % (
                     sum(r >= 1.0 for r in ratios), len(ratios), min(ratios), max(ratios), float(best[i]),
                     best[0], spec, at(head)))
s = section("bench/htsim/run.sh")
if s:
    text, head, rows = s
    hdr = rows[0]
    i = hdr.index("speed ratio htsim/sdrnet, wall")
    plain = [r for r in rows[1:] if r[2] == "sdrnet" and len(r) > i]
    if plain:
        rs = [float(r[i].rstrip("x")) for r in plain]
        lines.append("- **Simulator speed** against htsim on the same fat-tree permutations (k=%s..%s, %s-%s hosts): "
                     "%.2f-%.2fx faster in wall time (`bash bench/htsim/run.sh`, %s)" % (
                         plain[0][0], plain[-1][0], plain[0][1], plain[-1][1], min(rs), max(rs), at(head)))
s = section("bench/loopback.sh")
if s:
    text, head, rows = s
    hdr = rows[0]
    i = hdr.index("ratio to TCP")
    by = {r[0]: r for r in rows[1:]}
    parts = []
    for label, words in (("sdrnet defaults", "every default (packet protection on)"), ("sdrnet --auth none", "`--auth none`")):
        if label in by:
            parts.append("%s %sx" % (words, by[label][i]))
    if parts:
        lines.append("- **Loopback**, `sdrnet bench` against one iperf3 stream in the same run: %s "
                     "(`bash bench/loopback.sh`, %s)" % (", ".join(parts), at(head)))
s = section("bench/transfer-dir.sh")
if s:
    text, head, rows = s
    parts = ["%.2f on %s" % (float(r[3]), r[0].split("(")[-1].rstrip(")")) for r in rows[1:]]
    lines.append("- **A directory of 10,000 small files** against one file of the same bytes, `sdrnet send`/`recv` "
                 "with every default: %s of the file's rate (`bash bench/transfer-dir.sh`, %s)" % (", ".join(parts), at(head)))

s = section("bench/training-scale.sh")
if s:
    text, head, rows = s
    hdr = rows[0]
    parts = ["%s GPUs (%s) in %s of wall time and %s" % (r[0], r[1], r[hdr.index("wall")], r[hdr.index("peak memory")])
             for r in rows[1:]]
    lines.append("- **Training at scale**, one Megatron-style iteration on a fat-tree, simulated with one worker: %s "
                 "(`bash bench/training-scale.sh`, %s)" % ("; ".join(parts), at(head)))

block = "<!-- glance begin: written by bash bench/glance.sh from docs/performance.md -->\n" + "\n".join(lines) + "\n<!-- glance end -->"
readme = open("README.md").read()
pat = re.compile(r"<!-- glance begin.*?<!-- glance end -->", re.S)
if not pat.search(readme):
    sys.exit("README.md has no glance block (<!-- glance begin ... --> ... <!-- glance end -->)")
new = pat.sub(lambda m: block, readme)
if check:
    sys.exit(0 if new == readme else "README.md's results at a glance are stale: run bash bench/glance.sh")
open("README.md", "w").write(new)
print(block)
PY
