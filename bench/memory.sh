#!/usr/bin/env bash
# bench/memory.sh: what the simulator's memory scales with. A connection
# is a core.Conn at each end of a host pair; an all-to-all of n hosts has
# n(n-1) pairs, so its memory is what a pair costs.
#
#   - Bytes per connection and per datagram peer: TestConnBytes and
#     TestDatagramPeerBytes (internal/core), heap bytes after a collection.
#   - csaud's all-to-all cells (5 iterations of 4 MiB per GPU, background
#     load, the scenario's defaults) at each of HOSTS, for each transport
#     in CELLS: wall and CPU time and the maximum resident set size (GNU
#     time), and that size per host pair.
#   - A k=32 fat-tree permutation (bench/htsim/permutation.yaml, 8,192
#     hosts): the same figures.
#   - One step of a ring AllReduce of 16,384 hosts (bench/ring-step.yaml,
#     on a k=42 fat-tree): the same figures.
#
# One simulation at a time, one grid worker (-j1), with Go's default GC
# (GOGC=100: the resident set holds up to about twice the live heap, and
# where a collection falls moves it). The peak live heap, the most any
# collection found live (GODEBUG=gctrace=1), is what the simulation holds.
#
#   bash bench/memory.sh     # about 20 minutes on 2 vCPUs
#
# Knobs: HOSTS="256 1024" (HOSTS= skips them) CELLS="gbn:single" (also e.g. csaud:obs) PERM_K=32 (PERM_K=
# skips it) RING_ROUNDS=1 (RING_ROUNDS= skips the ring step)
# DOC=docs/performance.md (DOC= leaves the docs alone).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

DOC=${DOC-docs/performance.md}
HOSTS=${HOSTS-256 1024}
CELLS=${CELLS:-gbn:single}
PERM_K=${PERM_K-32}
RING_ROUNDS=${RING_ROUNDS-1}
[ -x /usr/bin/time ] || { echo "bench/memory.sh needs GNU time (/usr/bin/time): apt-get install time" >&2; exit 1; }
use_tmp
machine >"$tmp/head"
go build -o "$tmp/sdrnet" ./cmd/sdrnet

go test -count=1 -run 'TestConnBytes|TestDatagramPeerBytes' -v ./internal/core >"$tmp/bytes.log" 2>&1 ||
  { cat "$tmp/bytes.log" >&2; exit 1; }

# run NAME ARGS...: times one simulation; its GNU time report is NAME.time.
run() {
  local name=$1
  shift
  echo "$name..." >&2
  GODEBUG=gctrace=1 /usr/bin/time -v "$tmp/sdrnet" sim "$@" -j1 --out "$tmp/$name.out" >"$tmp/$name.log" 2>"$tmp/$name.time" ||
    { tail -5 "$tmp/$name.log" "$tmp/$name.time" >&2; exit 1; }
  echo "$name" >>"$tmp/runs"
}

: >"$tmp/runs"
for n in $HOSTS; do
  for cell in $CELLS; do
    run "csaud-$n-${cell%%:*}-${cell##*:}" csaud --set workload.hosts="$n" --set workload.kind=alltoall \
      --set transport.scheme="${cell%%:*}" --set transport.select="${cell##*:}"
  done
done
if [ -n "$PERM_K" ]; then
  run "permutation-k$PERM_K" bench/htsim/permutation.yaml --set topology.k="$PERM_K" \
    --set workload.hosts=$((PERM_K * PERM_K * PERM_K / 4))
fi
if [ -n "$RING_ROUNDS" ]; then
  run "ring-16384-r$RING_ROUNDS" bench/ring-step.yaml --set workload.rounds="$RING_ROUNDS"
fi

python3 - "$tmp" >"$tmp/table" <<'PY'
import re, sys
tmp = sys.argv[1]
log = open(f"{tmp}/bytes.log").read()
conn = re.search(r"bytes per connection: (.*)", log).group(1)
peer = re.search(r"bytes per peer: (.*)", log).group(1)
print(f"- A connection: {conn} bytes (TestConnBytes).")
print(f"- A datagram peer and a connection: {peer} bytes per peer (TestDatagramPeerBytes).")
print()
print("| run | host pairs | wall | CPU | max RSS | peak live heap | live heap per host pair |")
print("|---|---|---|---|---|---|---|")
for name in open(f"{tmp}/runs").read().split():
    t = open(f"{tmp}/{name}.time").read()
    def field(label):
        return re.search(re.escape(label) + r":\s*(\S+)", t).group(1)
    wall = field("Elapsed (wall clock) time (h:mm:ss or m:ss)")
    secs = sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall.split(":"))))
    cpu = float(field("User time (seconds)")) + float(field("System time (seconds)"))
    rss = int(field("Maximum resident set size (kbytes)")) * 1024
    # gctrace: "... A->B->C MB ...": C MB were live after that collection.
    live = max((int(m) for m in re.findall(r"\d+->\d+->(\d+) MB", t)), default=0) * 2**20
    m = re.match(r"csaud-(\d+)-(.*)-(.*)", name)
    r = re.match(r"ring-(\d+)-r(\d+)", name)
    if r:
        n = int(r.group(1))
        pairs, what, per = n, f"ring AllReduce, {n} GPUs, {r.group(2)} of its {2 * (n - 1)} steps (bench/ring-step.yaml)", f"{live / n / 1024:.1f} KiB"
    elif m:
        n = int(m.group(1))
        pairs, what = n * (n - 1), f"csaud all-to-all, {n} GPUs, {m.group(2)} {m.group(3)}"
        per = f"{live / pairs / 1024:.1f} KiB"
    else:
        pairs, what, per = None, name.replace("-", ", ") + " (bench/htsim/permutation.yaml)", ""
    print(f"| {what} | {pairs if pairs else ''} | {secs:.0f} s | {cpu:.0f} s | {rss / 2**30:.2f} GiB | {live / 2**30:.2f} GiB | {per} |")
PY
cat "$tmp/table"
if [ -n "$DOC" ]; then
  results_section "$DOC" bench/memory.sh "Memory: connections and large cells" \
    "Heap bytes per connection from the core's tests; each simulation's maximum resident set size from GNU time and its peak live heap from the runtime's GC trace, one at a time, one grid worker, Go's default GC." \
    "$tmp/head" "$tmp/table"
fi
