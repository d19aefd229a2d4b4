#!/usr/bin/env bash
# bench/cc-core.sh: the core's per-packet cost (BenchmarkDataPacketCC,
# SR-NACK, 1 MiB messages back to back) with each congestion controller,
# median of COUNT runs, and its ratio to none. The runs go in rounds:
# each round runs every controller once, in an order rotated round by
# round (go test -count runs one sub-benchmark's repeats back to back,
# so a slow minute of a shared machine would land on one controller),
# and each run is paired with none's of the same round: the paired
# median ratio, the rounds over 1.10, and two one-sided sign tests on
# that count (issue 9's goal: within 10% of none). It holds where fewer
# than half the rounds are over 1.10 beyond chance (P(X <= over) < 0.05,
# X ~ Binomial(rounds, 1/2)), fails where more than half are
# (P(X >= over) < 0.05), and is not shown either way otherwise: with 20
# rounds, holding takes at most 5 over.
#
#   bash bench/cc-core.sh          # knobs: COUNT=20 BENCHTIME=300000x
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
COUNT=${COUNT:-20}
BENCHTIME=${BENCHTIME:-300000x}
machine
echo
use_tmp
go test -c -o "$tmp/core.test" ./internal/core/
ccs=$("$tmp/core.test" -test.run '^$' -test.bench 'DataPacketCC' -test.benchtime 1x | awk '/^BenchmarkDataPacketCC\// {sub(/^BenchmarkDataPacketCC\//, "", $1); sub(/-[0-9]+$/, "", $1); print $1}')
read -r -a ccs <<<"$(echo $ccs)"
out=""
for round in $(seq 0 $((COUNT - 1))); do
  for i in "${!ccs[@]}"; do
    c=${ccs[$(((i + round) % ${#ccs[@]}))]}
    out+=$("$tmp/core.test" -test.run '^$' -test.bench "DataPacketCC/^$c\$" -test.benchtime "$BENCHTIME" -test.benchmem | grep '^Benchmark')$'\n'
  done
done
# paired NS NONE: the median of NS over NONE, run by run, the runs over
# 1.10, and P(X >= over) and P(X <= over) for X ~ Binomial(runs, 1/2).
paired() {
  # shellcheck disable=SC2086
  paste <(printf '%s\n' $1) <(printf '%s\n' $2) | awk '
    { r[NR] = $1 / $2; if (r[NR] > 1.10) over++ }
    END {
      for (i = 2; i <= NR; i++) for (j = i; j > 1 && r[j-1] > r[j]; j--) { t = r[j]; r[j] = r[j-1]; r[j-1] = t }
      m = (NR % 2) ? r[(NR+1)/2] : (r[NR/2] + r[NR/2+1]) / 2
      more = 0; fewer = 0; c = 1
      for (k = 0; k <= NR; k++) { if (k >= over) more += c; if (k <= over) fewer += c; c = c * (NR - k) / (k + 1) }
      printf "%.2f %d/%d %.3f %.3f\n", m, over + 0, NR, more / 2 ^ NR, fewer / 2 ^ NR
    }'
}
echo "| cc | ns/op median | runs | allocs/op | ratio of medians | paired median ratio | runs over 1.10 | P(that many or more) | P(that many or fewer) |"
echo "|---|---|---|---|---|---|---|---|---|"
verdicts=()
names="none $(printf '%s\n' "${ccs[@]}" | grep -vx none | tr '\n' ' ')" # none first: the others are paired with it
base=""
for n in $names; do
  ns=$(awk -v n="$n" '$1 ~ "^BenchmarkDataPacketCC/"n"(-[0-9]+)?$" {print $3}' <<<"$out")
  al=$(awk -v n="$n" '$1 ~ "^BenchmarkDataPacketCC/"n"(-[0-9]+)?$" {print $(NF-1)}' <<<"$out" | sort -u | tr '\n' ' ')
  # shellcheck disable=SC2086
  m=$(median $ns)
  pr="- - - -"
  if [ -z "$base" ]; then
    base=$m base_ns=$ns
  else
    pr=$(paired "$ns" "$base_ns")
  fi
  read -r ratio over pmore pfewer <<<"$pr"
  # shellcheck disable=SC2086
  printf '| %s | %.1f | %s | %s | %.2f | %s | %s | %s | %s |\n' "$n" "$m" "$(echo $ns)" "$al" "$(calc "$m / $base")" "$ratio" "$over" "$pmore" "$pfewer"
  [ "$ratio" = - ] || verdicts+=("$n: within 10% of none: $(awk "BEGIN {print ($pfewer < 0.05) ? \"holds\" : ($pmore < 0.05) ? \"fails\" : \"not shown either way\"}") (paired median $ratio, over 1.10 in $over runs)")
done
echo
printf '%s\n' "${verdicts[@]}"
