#!/usr/bin/env bash
# bench/transfer-dir.sh: a directory of many small files against one file
# of the same bytes, each sent with every default by `sdrnet send` to
# `sdrnet recv --out` over loopback. 10,000 files of 4 KiB (in 100
# directories) against one 40 MiB file, ROUNDS rounds each, alternating;
# the median wall time of each (from send's start to both ends' exit,
# the receiver's fsync and rename included) gives a rate, and the ratio
# of the two rates is the figure (issue 48's goal: the directory at
# least half the file's rate).
#
# The receiver writes to each directory of DIRS in turn: creating 10,000
# files is the file system's work, so a disk and tmpfs differ. The
# sources are read once before each run, so both cases send from memory:
# from a cold page cache, reading 10,000 small files is the disk's work,
# many times the transfer's. A local
# `cp -r` of the tree (and a sync) beside them is the file system's own
# floor: where it alone takes more than twice the file's transfer, no
# transfer of the tree can meet the goal there.
#
#   bash bench/transfer-dir.sh        # about a minute on 2 vCPUs
#
# Knobs: FILES=10000 FILE_SIZE=4096 ROUNDS=3 DIRS="/dev/shm $TMPDIR"
# SDRNET=BIN DOC=docs/performance.md (DOC= leaves the docs alone). Exits
# 1 when a transfer fails or the goal is not met on every file system.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

FILES=${FILES:-10000}
FILE_SIZE=${FILE_SIZE:-4096}
ROUNDS=${ROUNDS:-3}
DIRS=${DIRS:-"/dev/shm ${TMPDIR:-/tmp}"}
DOC=${DOC-docs/performance.md}

use_tmp
sdrnet_bin
src="$tmp/src"
mkdir -p "$src/many"
python3 - "$src" "$FILES" "$FILE_SIZE" <<'PY'
import os, sys
root, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(n):
    d = os.path.join(root, "many", "d%02d" % (i % 100))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%05d" % i), "wb") as f:
        f.write(os.urandom(size))
with open(os.path.join(root, "one.bin"), "wb") as f:
    f.write(os.urandom(n * size))
PY
sync # the sources' own dirty pages are not the receiver's to flush
bytes=$((FILES * FILE_SIZE))

# run WHAT DEST: one transfer of $src/WHAT to DEST; prints its wall
# seconds, or fails.
run() {
  local what=$1 dest=$2 port start end
  rm -rf "$dest" "$dest".partial*
  # Warm: the sources' pages in memory for both cases, so the figure is
  # the transfer's, not a cold disk's reads of 10,000 small files.
  find "$src/$what" -type f -exec cat {} + >/dev/null
  port=$(free_port)
  "$tmp/sdrnet" recv --listen "127.0.0.1:$port" --out "$dest" >"$tmp/recv.out" 2>&1 &
  local rpid=$!
  wait_udp "$port"
  start=$(date +%s.%N)
  "$tmp/sdrnet" send "127.0.0.1:$port" "$src/$what" >"$tmp/send.out" 2>&1 || { cat "$tmp/send.out" >&2; return 1; }
  wait "$rpid" || { cat "$tmp/recv.out" >&2; return 1; }
  end=$(date +%s.%N)
  if [ "$what" = many ]; then
    diff -r "$src/many" "$dest" >/dev/null || { echo "the tree differs" >&2; return 1; }
  else
    cmp -s "$src/one.bin" "$dest" || { echo "the file differs" >&2; return 1; }
  fi
  rm -rf "$dest"
  sync
  calc "$end - $start"
}

# copy_tree DEST: a local `cp -r` of the tree to DEST and a sync, the
# file system's own floor for laying the files out; prints its seconds.
copy_tree() {
  local dest=$1 start end
  rm -rf "$dest"
  find "$src/many" -type f -exec cat {} + >/dev/null
  start=$(date +%s.%N)
  cp -r "$src/many" "$dest" && sync
  end=$(date +%s.%N)
  rm -rf "$dest"
  sync
  calc "$end - $start"
}

machine >"$tmp/head"
{
  echo "| receiver's file system | one ${bytes}-byte file | $FILES files of $FILE_SIZE bytes | directory rate / file rate | local \`cp -r\` of the tree |"
  echo "|---|---|---|---|---|"
} >"$tmp/table"
failed=0
goal_met=1
for d in $DIRS; do
  fs=$(df -T "$d" | awk 'NR==2 {print $2}')
  dest="$d/sdrnet-transfer-dir.$$"
  one=() many=() cps=()
  for _ in $(seq "$ROUNDS"); do
    one+=("$(run one.bin "$dest")") || failed=1
    many+=("$(run many "$dest")") || failed=1
    cps+=("$(copy_tree "$dest")")
  done
  t1=$(median "${one[@]}") tm=$(median "${many[@]}") tc=$(median "${cps[@]}")
  ratio=$(calc "$t1 / $tm")
  echo "$d ($fs): one file ${one[*]} s, directory ${many[*]} s, cp -r ${cps[*]} s: ratio $ratio" >&2
  awk "BEGIN {exit !($ratio >= 0.5)}" || goal_met=0
  printf '| %s (%s) | %.3f s (%s/s) | %.3f s (%s/s) | %.2f | %.3f s (%.2f of the file transfer'"'"'s rate) |\n' "$d" "$fs" "$t1" \
    "$(calc "$bytes * 8 / $t1 / 1e6")Mbit" "$tm" "$(calc "$bytes * 8 / $tm / 1e6")Mbit" "$ratio" "$tc" "$(calc "$t1 / $tc")" >>"$tmp/table"
done
echo
cat "$tmp/table"

if [ -n "$DOC" ]; then
  results_section "$DOC" bench/transfer-dir.sh "A directory of small files against one file" \
    "Wall time from send's start until both ends exit (the receiver's fsync and rename included), median of $ROUNDS rounds, every flag at its default." \
    "$tmp/head" "$tmp/table"
fi
[ "$failed" = 0 ] || { echo "a transfer failed" >&2; exit 1; }
[ "$goal_met" = 1 ] || { echo "goal not met: the directory under half the file's rate somewhere" >&2; exit 1; }
