#!/usr/bin/env bash
# Side-by-side: sdrnet's simulator against htsim (Ultra Ethernet's fork,
# github.com/ultraethernet/uet-htsim, binary htsim_uec) on the same job: a
# k-ary fat-tree (k^3/4 hosts), 100 Gbit/s, 1 us per cable, every host
# sending 2,000,000 bytes to another (a permutation), all at once, under
# NSCC, sprayed over 16 entropies.
#
#   bash bench/htsim/run.sh HTSIM_SRC [K...]      (default K: 16 24 32)
#
# HTSIM_SRC is a checkout of uet-htsim (its root, its htsim/ folder or its
# htsim/sim/ folder). Environment:
#   REPS=2             timed runs of each simulator per k, alternated:
#                      sdrnet, sdrnet --huge-pages, htsim, sdrnet, ...
#   HTSIM_BUILD=DIR    htsim's CMake build folder (default /tmp/htsim-build);
#                      built (Release, target htsim_uec) when absent
#   HTSIM_EVENTS=1     0: skip counting htsim's events (see below)
#   OUT=DIR            where every run's output is kept (default a fresh
#                      /tmp/htsim-bench.XXXXXX, printed at the end)
#   KEEP_LOGS=0        1: keep htsim's logout.dat and idmap.txt
#   HUGE=1             also time sdrnet with --huge-pages (its heap on 2 MiB
#                      pages) in each rep, right after the plain run: a
#                      row of its own per k. 0: the plain run only
#   HTSIM_SACK=65536   htsim's receiver ACKs every this many bytes
#                      (-sack_threshold; its default is 16384): 65536
#                      matches sdrnet, which acknowledges 64 KiB chunks,
#                      so both simulate about as many ACKs. 0 keeps
#                      htsim's default.
#   DOC=docs/performance.md  the summary replaces this script's section
#                      there (DOC= leaves the docs alone)
#
# One simulation at a time, one core each: sdrnet with GOMAXPROCS=1 and
# -j1; htsim is single-threaded. Each run is timed by /usr/bin/time -v
# (wall clock, user + system CPU time, maximum resident set size). The
# speed ratio is given by both clocks: on a shared machine wall clock
# moves with the neighbours, CPU time much less.
#
# The two setups:
#   sdrnet  bench/htsim/permutation.yaml with --set topology.k=K
#           --set workload.hosts=K^3/4: SR-NACK, 16 QPs (entropies) sprayed
#           obliviously (select obs) over E-ECMP switches, 256 KiB window,
#           NSCC, drop-tail queues of 178,450 bytes with ECN (RED from
#           37,350 to 145,250 bytes), 4096-byte payloads.
#   htsim   htsim_uec -tm PERM -sender_cc_only -load_balancing_algo
#           oblivious -paths 16 -end 100000, everything else its defaults:
#           3-tier fat-tree sized from the matrix (-nodes), 100 Gbit/s
#           (HOST_NIC), 1 us per hop (-hop_latency), packets of 4150
#           bytes (-mtu) of which 64 are header, composite (trimming)
#           queues sized to 1 BDP = 43 packets = 178,450 bytes (-q unset),
#           ECN between 20% and 80% of a BDP, NSCC's maximum window 1.5
#           BDP. -sender_cc_only: NSCC at the sender, no receiver credit
#           (sdrnet's transport.cc nscc). -load_balancing_algo oblivious
#           -paths 16: each packet on the next of 16 entropies, no
#           feedback from trims or ECN (sdrnet's obs over 16 QPs).
#           -end 100000: stop at 100 ms simulated at the latest; every
#           flow ends far sooner, and the run ends when no event is left.
#           The matrix is htsim's own gen_permutation.py, seed 1, all
#           flows starting at 0.
#
# What a reader of the comparison must know (same intent, not the same
# model):
#   - Permutations: each side draws its own (htsim's script, sdrnet's
#     seeded shuffle); both are random derangements of every host.
#   - Bytes on the wire: htsim sends 4150-byte packets carrying 4086 bytes
#     (64-byte header), 490 packets per flow; sdrnet 4096 bytes of payload
#     plus 36 of SDR header and 66 of Ethernet/IPv4/UDP, preamble and gap
#     included (4198 bytes), 489 packets per flow.
#   - Full queues: htsim trims (cuts a packet to its 64-byte header and
#     forwards it in a priority queue, a NACK follows); sdrnet drops
#     (SR-NACK sees the gap; control packets go in a priority queue).
#   - Queues count bytes on both sides; htsim sizes them in packets
#     (43 x 4150), sdrnet in bytes, so both hold 178,450 bytes.
#   - Window: htsim NSCC's maximum is 1.5 x its 175,284-byte BDP (262,926
#     bytes); sdrnet's transport window is 256 KiB (262,144) and NSCC
#     works under it.
#   - Completion: htsim's "finished at" is the sender's, when the
#     cumulative ACK covers the flow; sdrnet's the receiver's, when the
#     last byte arrived: htsim's times run about half a round trip later.
#   - Events are not the same unit. htsim runs two per packet per hop
#     (the queue's end of service, then the pipe's delivery) in a
#     std::multimap; sdrnet one per packet per hop (network.Egress) in a 4-ary
#     heap. Compare wall clock for the same job; "per event" only within
#     one simulator.
#   - htsim prints no count of the events it processed (EventList keeps
#     only _trafficeventcount, the traffic events pending). With
#     HTSIM_EVENTS=1 this script relinks htsim_uec with a copy of
#     eventlist.cpp that counts every EventList::doNextEvent (sources taken
#     off the multimap and triggers) and prints the count at exit, and
#     runs that binary once per k after the timed runs. The timed runs use
#     the unmodified binary; the count is used only if the counted run
#     finished as many flows as the timed one, with the same mean and
#     maximum completion time (it is checked), so its count is theirs.
#   - Queue depths: htsim logs none by default; sdrnet's sampling is off
#     (metrics.queue_sample 0). htsim writes its flow events to
#     logout.dat, as it does by default.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=../lib.sh
. "$root/bench/lib.sh"

if [ $# -lt 1 ]; then
  echo "usage: bash bench/htsim/run.sh HTSIM_SRC [K...]   (env REPS, HTSIM_BUILD, HTSIM_EVENTS, OUT)" >&2
  exit 2
fi
src=$(cd "$1" && pwd)
shift
ks=("$@")
[ ${#ks[@]} -gt 0 ] || ks=(16 24 32)
REPS=${REPS:-2}
HTSIM_BUILD=${HTSIM_BUILD:-/tmp/htsim-build}
HTSIM_EVENTS=${HTSIM_EVENTS:-1}
KEEP_LOGS=${KEEP_LOGS:-0}
HUGE=${HUGE:-1}
HTSIM_SACK=${HTSIM_SACK:-65536}
DOC=${DOC-docs/performance.md}
htsim_args=(-sender_cc_only -load_balancing_algo oblivious -paths 16 -end 100000)
[ "$HTSIM_SACK" = 0 ] || htsim_args+=(-sack_threshold "$HTSIM_SACK")
variants=(plain)
[ "$HUGE" = 0 ] || variants+=(huge)
OUT=${OUT:-$(mktemp -d /tmp/htsim-bench.XXXXXX)}
mkdir -p "$OUT" "$HTSIM_BUILD"
OUT=$(cd "$OUT" && pwd)
HTSIM_BUILD=$(cd "$HTSIM_BUILD" && pwd)
cd "$root"

for k in "${ks[@]}"; do
  if ! [[ $k =~ ^[0-9]+$ ]] || [ $((k % 2)) -ne 0 ] || [ "$k" -lt 2 ]; then
    echo "k must be an even number >= 2: $k" >&2
    exit 2
  fi
done

for d in "$src/htsim/sim" "$src/sim" "$src"; do
  if [ -f "$d/CMakeLists.txt" ] && [ -f "$d/datacenter/main_uec.cpp" ]; then
    sim_src=$d
    break
  fi
done
if [ -z "${sim_src:-}" ]; then
  echo "no htsim source under $src (want htsim/sim/CMakeLists.txt and datacenter/main_uec.cpp)" >&2
  exit 1
fi
gen=$sim_src/datacenter/connection_matrices/gen_permutation.py

# need_pkg CMD PACKAGE installs PACKAGE with apt-get when CMD is missing.
need_pkg() {
  [ -x "$1" ] || command -v "$1" >/dev/null && return 0
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing $2 (apt-get)..." >&2
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y "$2" >/dev/null 2>&1 || {
    $sudo apt-get update >/dev/null
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y "$2" >/dev/null
  }
}
need_pkg /usr/bin/time time
need_pkg python3 python3
command -v go >/dev/null || { echo "sdrnet needs Go (go.mod's version) on PATH" >&2; exit 1; }

# --- htsim: Release build of htsim_uec (CMake), once ----------------------
htsim=$HTSIM_BUILD/datacenter/htsim_uec
if [ ! -x "$htsim" ]; then
  need_pkg cmake cmake
  need_pkg g++ g++
  echo "== building htsim_uec (Release) in $HTSIM_BUILD" >&2
  t0=$(date +%s.%N)
  cmake -S "$sim_src" -B "$HTSIM_BUILD" -DCMAKE_BUILD_TYPE=Release >"$OUT/htsim-build.log" 2>&1
  # Two jobs at most: the machine may be shared.
  cmake --build "$HTSIM_BUILD" --target htsim_uec --parallel 2 >>"$OUT/htsim-build.log" 2>&1 || {
    tail -30 "$OUT/htsim-build.log" >&2
    exit 1
  }
  echo "   built in $(calc "$(date +%s.%N) - $t0") s (log: $OUT/htsim-build.log)" >&2
fi

# htsim_uec relinked with an eventlist.cpp that counts the events it runs.
htsim_count=""
if [ "$HTSIM_EVENTS" = 1 ]; then
  cdir=$HTSIM_BUILD/bench-count
  htsim_count=$cdir/htsim_uec_count
  if [ ! -x "$htsim_count" ] || [ "$htsim" -nt "$htsim_count" ]; then
    mkdir -p "$cdir"
    python3 - "$sim_src/eventlist.cpp" "$cdir/eventlist_count.cpp" <<'PY'
import sys
s = open(sys.argv[1]).read()
edits = [
    ('    nextsource->doNextEvent();\n    return true;',
     '    ++bench_source_events;\n    nextsource->doNextEvent();\n    return true;'),
    ('        target->activate();\n        return true;',
     '        ++bench_trigger_events;\n        target->activate();\n        return true;'),
    ('#include "trigger.h"\n',
     '#include "trigger.h"\n#include <cstdio>\n'
     '// Added by sdrnet bench/htsim/run.sh: count what doNextEvent runs.\n'
     'static unsigned long long bench_source_events, bench_trigger_events;\n'
     'static struct BenchEventReport {\n'
     '    ~BenchEventReport() {\n'
     '        std::fprintf(stdout, "bench: events processed %llu (sources %llu, triggers %llu)\\n",\n'
     '                     bench_source_events + bench_trigger_events, bench_source_events, bench_trigger_events);\n'
     '        std::fflush(stdout);\n'
     '    }\n'
     '} bench_event_report;\n'),
]
for old, new in edits:
    if s.count(old) != 1:
        sys.exit("eventlist.cpp changed: cannot find %r" % old)
    s = s.replace(old, new)
open(sys.argv[2], "w").write(s)
PY
    # Same compiler flags as the Release build (CMake's flags.make).
    flags=$(sed -n 's/^CXX_FLAGS = //p' "$HTSIM_BUILD/CMakeFiles/htsim.dir/flags.make")
    # shellcheck disable=SC2086
    c++ $flags -I"$sim_src" -c "$cdir/eventlist_count.cpp" -o "$cdir/eventlist_count.o"
    # The counting object comes first: the archive's eventlist.o, whose
    # symbols are then all defined, is not pulled in.
    c++ -O3 "$HTSIM_BUILD/datacenter/CMakeFiles/htsim_uec.dir/main_uec.cpp.o" "$cdir/eventlist_count.o" \
      -o "$htsim_count" "$HTSIM_BUILD/datacenter/libhtsim_dc.a" "$HTSIM_BUILD/libhtsim.a"
  fi
fi

# --- sdrnet -----------------------------------------------------------------
echo "== building sdrnet" >&2
(cd "$root" && go build -o "$OUT/sdrnet" ./cmd/sdrnet)
sdrnet=$OUT/sdrnet

# --- helpers ------------------------------------------------------------------
# timed DIR CMD...: runs CMD in DIR under /usr/bin/time -v, one core;
# stdout+stderr to DIR/out.txt, time's report to DIR/time.txt, the wall
# clock in seconds (to the millisecond; time -v rounds to 10 ms) to
# DIR/wall.txt.
timed() {
  local dir=$1 t0 t1
  shift
  mkdir -p "$dir"
  t0=$(date +%s.%N)
  (cd "$dir" && GOMAXPROCS=1 /usr/bin/time -v -o "$dir/time.txt" "$@" >"$dir/out.txt" 2>&1) || {
    echo "failed ($dir):" >&2
    tail -20 "$dir/out.txt" >&2
    return 1
  }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f\n", b - a}' >"$dir/wall.txt"
}
# wall DIR / cpu DIR / rss DIR: seconds, user + system seconds, and KiB
# from time's report.
wall() { cat "$1/wall.txt"; }
cpu() { awk -F': ' '/User time|System time/ {t += $2} END {printf "%.2f\n", t}' "$1/time.txt"; }
rss() { awk -F': ' '/Maximum resident set size/ {print $2}' "$1/time.txt"; }

# sdr_stats DIR: "flows mean_us max_us events hops sim_time_us retx_bytes drops" of a run.
sdr_stats() {
  python3 - "$1/results.csv" <<'PY'
import csv, sys
r = next(csv.DictReader(open(sys.argv[1])))
us = lambda k: "%.3f" % (float(r[k]) * 1e6) if r[k] else "nan"
print(r["runs"], us("mean_s"), us("max_s"), r["events"], r["hops"], us("sim_time_s"), r["retx_bytes"], r["drops"])
PY
}
# ht_stats DIR: "flows mean_us max_us events new rtx nacks" of a run
# (events "-" when the binary does not count them).
ht_stats() {
  python3 - "$1/out.txt" <<'PY'
import re, sys
start, fin, ev, tot = {}, {}, "-", ("-", "-", "-")
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"Flow \S+ flowId (\d+) .*?(starting|finished) at ([0-9.e+-]+)", line)
    if m:
        (start if m.group(2) == "starting" else fin)[m.group(1)] = float(m.group(3))
        continue
    m = re.match(r"bench: events processed (\d+)", line)
    if m:
        ev = m.group(1)
    m = re.match(r"New: (\d+) Rtx: (\d+) .*NACKs: (\d+)", line)
    if m:
        tot = m.groups()
fct = [t - start.get(f, 0.0) for f, t in fin.items()]
mean = sum(fct) / len(fct) if fct else float("nan")
print(len(fct), "%.3f" % mean, "%.3f" % (max(fct) if fct else float("nan")), ev, *tot)
PY
}

# --- the runs -----------------------------------------------------------------
{
  echo "# sdrnet against htsim_uec: fat-tree permutation"
  echo
  machine
  echo "htsim:   $(git -C "$sim_src" rev-parse --short HEAD 2>/dev/null || echo "source at $src") (build $HTSIM_BUILD)"
  echo "runs:    REPS=$REPS per simulator and k, alternated, one core each; HUGE=$HUGE (1: sdrnet --huge-pages timed too)"
} | tee "$OUT/summary.md" >&2

fail=0
rows=()
detail=()
agree=()
for k in "${ks[@]}"; do
  hosts=$((k * k * k / 4))
  kdir=$OUT/k$k
  mkdir -p "$kdir"
  tm=$kdir/perm_$hosts.cm
  # nodes, connections, bytes, start spread (us; 0: all at once), seed
  python3 "$gen" "$tm" "$hosts" "$hosts" 2000000 0 1 >"$kdir/gen.log"

  declare -A sw=() sc=() sr=()
  se="" hw=() hc=() hr=() he="-"
  for rep in $(seq "$REPS"); do
    for v in "${variants[@]}"; do
      d=$kdir/sdrnet-$v.$rep
      flags=()
      [ "$v" = plain ] || flags=(--huge-pages)
      echo "== k=$k ($hosts hosts) rep $rep: sdrnet ${flags[*]}" >&2
      timed "$d" "$sdrnet" sim "$here/permutation.yaml" -j1 "${flags[@]}" --out "$d/res" \
        --set topology.k="$k" --set workload.hosts="$hosts"
      read -r sflows smean smax sev shops ssim sretx sdrops < <(sdr_stats "$d/res")
      sw[$v]+=" $(wall "$d")" sc[$v]+=" $(cpu "$d")" sr[$v]+=" $(rss "$d")"
      [ -z "$se" ] || [ "$se" = "$sev" ] || { echo "sdrnet k=$k rep $rep ($v): $sev events, $se in the run before: the run changed" >&2; fail=1; }
      se=$sev
      [ "$sflows" = "$hosts" ] || { echo "sdrnet k=$k rep $rep ($v): $sflows of $hosts flows finished" >&2; fail=1; }
      detail+=("| $k | sdrnet${flags[*]:+ ${flags[*]}} | $rep | $(wall "$d") | $(cpu "$d") | $(rss "$d") | $sev | $sflows/$hosts | $smean | $smax | retx $sretx B, drops $sdrops, hops $shops |")
    done

    d=$kdir/htsim.$rep
    echo "== k=$k ($hosts hosts) rep $rep: htsim" >&2
    timed "$d" "$htsim" -tm "$tm" "${htsim_args[@]}"
    [ "$KEEP_LOGS" = 1 ] || rm -f "$d/logout.dat" "$d/idmap.txt"
    if [ "$rep" = 1 ]; then
      # htsim's defaults, as it printed them, are what permutation.yaml
      # mirrors; a newer htsim with other defaults is caught here.
      for want in "^K $k\$" "^Linkspeed set to 100Gbps" "^Packet size (MTU) is 4150" \
        "QueueSize Down 178450 bytes" "ECN to parameters low 37350 high 145250" "hop_latency=1000000 "; do
        grep -q "$want" "$d/out.txt" || { echo "htsim k=$k: its output lacks /$want/: its setup differs from permutation.yaml" >&2; fail=1; }
      done
    fi
    read -r hflows hmean hmax _ hnew hrtx hnack < <(ht_stats "$d")
    hw+=("$(wall "$d")") hc+=("$(cpu "$d")") hr+=("$(rss "$d")")
    [ "$hflows" = "$hosts" ] || { echo "htsim k=$k rep $rep: $hflows of $hosts flows finished" >&2; fail=1; }
    detail+=("| $k | htsim | $rep | $(wall "$d") | $(cpu "$d") | $(rss "$d") | (not printed) | $hflows/$hosts | $hmean | $hmax | packets new $hnew, rtx $hrtx, NACKs $hnack |")
  done

  if [ -n "$htsim_count" ]; then
    d=$kdir/htsim.count
    echo "== k=$k ($hosts hosts): htsim, counting events (not timed for the table)" >&2
    timed "$d" "$htsim_count" -tm "$tm" "${htsim_args[@]}"
    [ "$KEEP_LOGS" = 1 ] || rm -f "$d/logout.dat" "$d/idmap.txt"
    read -r cflows cmean cmax cev _ < <(ht_stats "$d")
    if [ "$cflows $cmean $cmax" = "$hflows $hmean $hmax" ] && [ "$cev" != "-" ]; then
      he=$cev
    else
      echo "htsim k=$k: the counting build finished $cflows flows (mean $cmean, max $cmax us), the timed one $hflows ($hmean, $hmax): count not used" >&2
      fail=1
    fi
    detail+=("| $k | htsim (counting build) | 1 | $(wall "$d") | $(cpu "$d") | $(rss "$d") | $cev | $cflows/$hosts | $cmean | $cmax | instrumented relink, not in the summary's wall |")
  fi

  h_wall=$(median "${hw[@]}") h_cpu=$(median "${hc[@]}") h_rss=$(median "${hr[@]}")
  if [ "$he" = "-" ]; then
    h_ev="not printed" h_per="-"
  else
    h_ev=$he h_per=$(printf '%.0f ns' "$(calc "1e9 * $h_wall / $he")")
  fi
  for v in "${variants[@]}"; do
    # shellcheck disable=SC2086 # the lists are space-separated numbers
    s_wall=$(median ${sw[$v]}) s_cpu=$(median ${sc[$v]}) s_rss=$(median ${sr[$v]})
    s_per=$(calc "1e9 * $s_wall / $se")
    label="sdrnet"
    [ "$v" = plain ] || label="sdrnet --huge-pages"
    rows+=("| $k | $hosts | $label | ${h_wall} s / ${h_cpu} s / $(calc "$h_rss / 1024" | xargs printf '%.0f') MiB / ${h_ev} | ${s_wall} s / ${s_cpu} s / $(calc "$s_rss / 1024" | xargs printf '%.0f') MiB / ${se} | $(printf '%.0f' "$s_per") ns | ${h_per} | $(printf '%.2f' "$(calc "$h_wall / $s_wall")")x | $(printf '%.2f' "$(calc "$h_cpu / $s_cpu")")x | $(printf '%.2f' "$(calc "$h_rss / $s_rss")")x |")
  done
  agree+=("| $k | $hflows/$hosts | $hmean | $hmax | $sflows/$hosts | $smean | $smax |")
done

{
  echo
  echo "## Summary (median of $REPS runs each; wall clock, CPU time, peak RSS, events)"
  echo
  echo "htsim_uec ${htsim_args[*]}: its receiver ACKs every ${HTSIM_SACK/#0/16384 (its default)} bytes; sdrnet acknowledges 64 KiB chunks."
  echo
  echo "| k | hosts | sdrnet run | htsim wall / CPU / RSS / events | sdrnet wall / CPU / RSS / events | sdrnet per event | htsim per event | speed ratio htsim/sdrnet, wall | same, CPU | memory ratio htsim/sdrnet |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Events are not the same unit: htsim runs two per packet per hop (queue, then pipe), sdrnet one."
  echo "htsim prints no event count; its figure comes from a relinked htsim_uec counting EventList::doNextEvent, run once per k apart from the timed runs (HTSIM_EVENTS=0 skips it)."
  echo
  echo "## Both finished every flow (flow completion times of the last rep, us)"
  echo
  echo "| k | htsim finished | htsim mean | htsim max | sdrnet finished | sdrnet mean | sdrnet max |"
  echo "|---|---|---|---|---|---|---|"
  printf '%s\n' "${agree[@]}"
  echo
  echo "htsim's completion is the sender's (the ACK covering the flow), sdrnet's the receiver's (last byte in); each side draws its own permutation."
  echo
  echo "## Every run"
  echo
  echo "| k | simulator | rep | wall s | CPU s | max RSS KiB | events | flows | mean FCT us | max FCT us | notes |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${detail[@]}"
  echo
  echo "outputs: $OUT"
} | tee -a "$OUT/summary.md"

if [ -n "$DOC" ] && [ "$fail" = 0 ]; then
  {
    echo "## sdrnet's simulator against htsim (bench/htsim/run.sh)"
    echo
    echo "Written by \`bash bench/htsim/run.sh HTSIM_SRC ${ks[*]}\`; rerun it to refresh."
    echo
    sed -n '/^machine:/,/^runs:/p' "$OUT/summary.md" | sed 's/^/    /'
    sed -n '/^## Summary/,/^## Every run/p' "$OUT/summary.md" | sed '$d' | sed 's/^## /### /'
  } >"$OUT/section.md"
  doc_section "$root/$DOC" bench/htsim/run.sh "$OUT/section.md"
  echo "wrote $DOC" >&2
fi

if [ "$fail" != 0 ]; then
  echo "FAILED: a check above did not hold" >&2
  exit 1
fi
