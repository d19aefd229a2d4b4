#!/usr/bin/env bash
# bench/fuzz-all.sh: runs every fuzz target for FUZZTIME (default 10m),
# PAR targets at once (default 2, one worker each), and prints each one's
# executions and rate. New failing inputs land in the package's
# testdata/fuzz, as go test -fuzz leaves them.
#
#   bash bench/fuzz-all.sh            # knobs: FUZZTIME=10m PAR=2
set -uo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-10m}
PAR=${PAR:-2}
targets=$(grep -rl --include='*_test.go' '^func Fuzz' . | while read -r f; do
  for t in $(grep -o '^func Fuzz[A-Za-z0-9]*' "$f" | sed 's/func //'); do echo "$(dirname "$f") $t"; done
done)
tmp=$(mktemp -d)
run() {
  local pkg=$1 t=$2 log="$tmp/$(echo "$1" | tr / _)-$2.log"
  nice -n 19 go test "$pkg" -run '^$' -fuzz "^$t\$" -fuzztime "$FUZZTIME" -parallel 1 > "$log" 2>&1
  local rc=$?
  local last
  last=$(grep 'fuzz: elapsed' "$log" | tail -1)
  echo "$pkg $t: exit $rc; $last"
  [ $rc -eq 0 ] || tail -20 "$log"
}
echo "go: $(go version | awk '{print $3}')  tree: $(git rev-parse --short HEAD)  date: $(date -u '+%Y-%m-%d %H:%M UTC')  nproc: $(nproc)  fuzztime: $FUZZTIME"
n=0
while read -r pkg t; do
  run "$pkg" "$t" &
  n=$((n + 1))
  if [ $((n % PAR)) -eq 0 ]; then wait; fi
done <<< "$targets"
wait
rm -rf "$tmp"
