#!/usr/bin/env bash
# bench/flood.sh: loopback goodput of a 256 MiB sdr transfer with and
# without 100,000 spoofed HELLOs sprayed at the listener during it, in one
# session, as ratios to the clean run (BenchmarkHelloFlood in
# sdr/flood_test.go).
#
#   bash bench/flood.sh
#
# Rows: clean (no flood); blast (the 100,000 HELLOs as fast as 128
# sprayer sockets on 16 loopback addresses send them); paced (the same
# spread over one second, about the transfer's length). Each run also
# reports the most connections the listener held and the heap's rise.
# Knobs (environment): REPS=5 (runs per row; the table shows the median).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

REPS=${REPS:-5}
machine
echo
out=$(go test ./sdr -run '^$' -bench '^BenchmarkHelloFlood$' -benchtime 1x -count "$REPS" 2>&1) || { echo "$out"; exit 1; }
echo "$out" | grep -E '^Benchmark' || true
echo
python3 - "$out" <<'PY'
import re, statistics, sys
rows = {}
for line in sys.argv[1].splitlines():
    m = re.match(r'BenchmarkHelloFlood/(\w+)\S*\s+\d+\s+\d+ ns/op\s+([\d.]+) MB/s(.*)', line)
    if not m:
        continue
    extra = dict((k, float(v)) for v, k in re.findall(r'([\d.]+) ([\w/]+)', m.group(3)))
    # The transfer's own goodput (xferMB/s), not the framework's MB/s,
    # whose time also holds the wait for the sprayers to finish.
    rows.setdefault(m.group(1), []).append((extra['xferMB/s'], extra))
clean = statistics.median(r[0] for r in rows['clean'])
print(f"{'run':8} {'goodput MB/s (median)':>22} {'vs clean':>9} {'max conns':>10} {'heap rise MiB (max)':>20}")
for name in ('clean', 'blast', 'paced'):
    rs = rows.get(name, [])
    if not rs:
        continue
    g = statistics.median(r[0] for r in rs)
    print(f"{name:8} {g:22.0f} {g/clean:9.2f} {max(r[1].get('maxconns', 0) for r in rs):10.0f} {max(r[1].get('heapMiB', 0) for r in rs):20.1f}")
PY
