# Helpers shared by bench/*.sh; source it, do not run it.

# need_iperf3 installs iperf3 with apt-get when it is missing.
need_iperf3() {
  command -v iperf3 >/dev/null && return 0
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing iperf3 (apt-get)..." >&2
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y iperf3 >/dev/null 2>&1 || {
    $sudo apt-get update >/dev/null
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y iperf3 >/dev/null
  }
  command -v iperf3 >/dev/null
}

# jnum FILE a.b.c prints the number at that path of a JSON file (jq, or
# python3 when there is no jq); "null" when absent.
jnum() {
  if command -v jq >/dev/null; then
    jq -r ".$2 // \"null\"" "$1"
  else
    python3 - "$1" "$2" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v.get(k) if isinstance(v, dict) else None
print("null" if v is None else v)
PY
  fi
}

# median prints the median of its numeric arguments.
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# calc EXPR evaluates an awk expression.
calc() { awk "BEGIN {print $1}"; }

# free_port prints a TCP/UDP port on 127.0.0.1 that nothing uses now.
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 30000))
    if ! (ss -Hltun 2>/dev/null | awk '{print $5}' | grep -q ":$p\$"); then
      echo "$p"
      return
    fi
  done
}

# machine prints what the results were measured on.
machine() {
  echo "machine: $(nproc) vCPU, $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
  echo "kernel:  $(uname -sr)"
  echo "go:      $(go version)"
  echo "tree:    ${TREE:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- . ':!bench' ':!docs/performance.md' ':!README.md' 2>/dev/null || echo ' + uncommitted changes')}"
  echo "date:    $(date -u +'%Y-%m-%d %H:%M UTC')"
  echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min)"
}

# wait_udp PORT waits until something listens on UDP PORT (5 s at most).
wait_udp() {
  for _ in $(seq 100); do
    ss -Hlun "sport = :$1" 2>/dev/null | grep -q . && return 0
    sleep 0.05
  done
  echo "nothing listens on udp port $1" >&2
  return 1
}

# use_tmp [GLOB...]: a scratch directory $tmp and a list pids of
# background processes, killed and removed on exit; with RESULTS set,
# the files matching GLOB in $tmp are kept there first.
use_tmp() {
  tmp=$(mktemp -d)
  pids=()
  keep=("$@")
  trap cleanup_tmp EXIT
  trap 'exit 130' INT TERM
}
cleanup_tmp() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -n "${RESULTS:-}" ] && [ ${#keep[@]} -gt 0 ]; then
    mkdir -p "$RESULTS" && (cd "$tmp" && cp ${keep[@]} "$RESULTS"/ 2>/dev/null) || true
  fi
  rm -rf "$tmp"
}

# sdrnet_bin: $tmp/sdrnet is the binary SDRNET names (then TREE says so,
# for machine), else one built from this tree. Needs use_tmp first.
sdrnet_bin() {
  if [ -n "${SDRNET:-}" ]; then
    cp "$SDRNET" "$tmp/sdrnet"
    TREE=${TREE:-"binary $SDRNET (not built from this tree)"}
  else
    go build -o "$tmp/sdrnet" ./cmd/sdrnet
  fi
}

# start_link NAME SPEC SERVER-ARGS...: sdrnet bench --listen SERVER-ARGS
# behind a fresh emulator (its clock, and so its lossat= and fail=
# windows, start with the run); clients connect to 127.0.0.1:$link_port.
# The server's output goes to $tmp/NAME.srv, the emulator's final counters
# to $tmp/NAME.lk. Needs $tmp holding the sdrnet binary, and pids.
start_link() {
  local name=$1 spec=$2 p1
  shift 2
  p1=$(free_port)
  link_port=$(free_port)
  while [ "$link_port" = "$p1" ]; do link_port=$(free_port); done
  "$tmp/sdrnet" bench --listen "127.0.0.1:$p1" "$@" >"$tmp/$name.srv" 2>&1 &
  srv_pid=$!
  pids+=("$srv_pid")
  "$tmp/sdrnet" linkem --listen "127.0.0.1:$link_port" --target "127.0.0.1:$p1" --spec "$spec" --stats 1h >"$tmp/$name.lk" 2>&1 &
  lk_pid=$!
  pids+=("$lk_pid")
  wait_udp "$p1" && wait_udp "$link_port"
}

# stop_link stops the emulator (which writes its final counters) and the
# server start_link started.
stop_link() {
  kill -INT "$lk_pid" 2>/dev/null || true
  wait "$lk_pid" 2>/dev/null || true
  kill -INT "$srv_pid" 2>/dev/null || true
  wait "$srv_pid" 2>/dev/null || true
}

# through NAME SPEC ARGS...: bench --listen ARGS <- linkem <- bench
# --connect ARGS; the client's JSON lands in $tmp/NAME.json. Uses
# RUN_TIMEOUT; returns the client's status.
through() {
  local name=$1 spec=$2 rc=0
  shift 2
  start_link "$name" "$spec" "$@" || return 1
  timeout "$RUN_TIMEOUT" "$tmp/sdrnet" bench --connect "127.0.0.1:$link_port" --json "$@" >"$tmp/$name.json" || rc=$?
  stop_link
  [ "$rc" -eq 0 ] || echo "$name: exit $rc" >&2
  return "$rc"
}

# results_section DOC SCRIPT TITLE INTRO HEAD TABLE: DOC's section for
# SCRIPT (doc_section): "## TITLE (SCRIPT)", how to refresh it and INTRO
# (may be empty), the machine block from file HEAD, then file TABLE.
results_section() {
  local doc=$1 script=$2 title=$3 intro=$4 head=$5 table=$6
  {
    echo "## $title ($script)"
    echo
    echo "Written by \`bash $script\`; rerun it to refresh.${intro:+ $intro}"
    echo
    echo '```'
    cat "$head"
    echo '```'
    echo
    cat "$table"
  } >"$table.section"
  doc_section "$doc" "$script" "$table.section"
  echo "wrote $doc" >&2
}

# doc_section DOC NAME FILE: replaces the section of DOC that the script
# NAME wrote (between its begin and end markers) with FILE's text, or
# appends it; DOC is created with its heading when missing.
doc_section() {
  local doc=$1 name=$2 file=$3
  [ -f "$doc" ] || printf '# Performance: current figures\n\nEach section is written by the script it names, at the commit it names;\nrerun the script to refresh it. How the figures came to be is in the\ncommits that moved them (git log).\n\n' >"$doc"
  python3 - "$doc" "$name" "$file" <<'PY'
import re, sys
doc, name, text = sys.argv[1], sys.argv[2], open(sys.argv[3]).read()
sec = "<!-- %s begin -->\n%s<!-- %s end -->\n" % (name, text, name)
s = open(doc).read()
pat = re.compile(r"<!-- %s begin -->.*?<!-- %s end -->\n" % (re.escape(name), re.escape(name)), re.S)
s = pat.sub(lambda m: sec, s) if pat.search(s) else s.rstrip("\n") + "\n\n" + sec
open(doc, "w").write(s)
PY
}
