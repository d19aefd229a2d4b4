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
  echo "tree:    ${TREE:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- . ':!bench' 2>/dev/null || echo ' + uncommitted changes')}"
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

# through NAME SPEC CLIENT-ARGS...: bench --listen <- linkem <- bench --connect,
# a fresh emulator per run (its clock, and so its lossat= and fail= windows,
# start with the run). Uses the caller's $tmp (holding the sdrnet binary),
# pids array and RUN_TIMEOUT; the client's JSON lands in $tmp/NAME.json.
through() {
  local name=$1 spec=$2 rc=0 p1 p2 srv lk
  shift 2
  p1=$(free_port)
  p2=$(free_port)
  while [ "$p2" = "$p1" ]; do p2=$(free_port); done
  "$tmp/sdrnet" bench --listen "127.0.0.1:$p1" "$@" >"$tmp/$name.srv" 2>&1 &
  srv=$!
  pids+=("$srv")
  "$tmp/sdrnet" linkem --listen "127.0.0.1:$p2" --target "127.0.0.1:$p1" --spec "$spec" --stats 1h >"$tmp/$name.lk" 2>&1 &
  lk=$!
  pids+=("$lk")
  wait_udp "$p1" && wait_udp "$p2"
  timeout "$RUN_TIMEOUT" "$tmp/sdrnet" bench --connect "127.0.0.1:$p2" --json "$@" >"$tmp/$name.json" || rc=$?
  kill -INT "$lk" 2>/dev/null || true
  wait "$lk" 2>/dev/null || true
  kill -INT "$srv" 2>/dev/null || true
  wait "$srv" 2>/dev/null || true
  [ "$rc" -eq 0 ] || echo "$name: exit $rc" >&2
  return "$rc"
}
