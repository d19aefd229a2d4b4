#!/usr/bin/env bash
# bench/cc-core.sh: the core's per-packet cost (BenchmarkDataPacketCC,
# SR-NACK, 1 MiB messages back to back) with each congestion controller,
# median of COUNT runs, and its ratio to none.
#
#   bash bench/cc-core.sh          # knobs: COUNT=10 BENCHTIME=300000x
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
COUNT=${COUNT:-10}
BENCHTIME=${BENCHTIME:-300000x}
machine
echo
out=$(go test ./internal/core/ -run '^$' -bench 'DataPacketCC' -benchtime "$BENCHTIME" -count "$COUNT" -benchmem)
echo "| cc | ns/op median | runs | allocs/op | ratio to none |"
echo "|---|---|---|---|---|"
names=$(awk '/^BenchmarkDataPacketCC\// {sub(/^BenchmarkDataPacketCC\//, "", $1); sub(/-[0-9]+$/, "", $1); print $1}' <<<"$out" | awk '!s[$0]++')
base=""
for n in $names; do
  ns=$(awk -v n="$n" '$1 ~ "^BenchmarkDataPacketCC/"n"-[0-9]+$" {print $3}' <<<"$out")
  al=$(awk -v n="$n" '$1 ~ "^BenchmarkDataPacketCC/"n"-[0-9]+$" {print $(NF-1)}' <<<"$out" | sort -u | tr '\n' ' ')
  # shellcheck disable=SC2086
  m=$(median $ns)
  [ -n "$base" ] || base=$m
  # shellcheck disable=SC2086
  printf '| %s | %.1f | %s | %s | %.2f |\n' "$n" "$m" "$(echo $ns)" "$al" "$(calc "$m / $base")"
done
