#!/usr/bin/env bash
# bench/all.sh: every benchmark that writes docs/performance.md, one after
# the other on a quiet machine, then README.md's results at a glance from
# what they wrote. Each script replaces only its own section, so a run
# that stops half-way leaves the others' figures as they were.
#
#   bash bench/all.sh                       # wan.sh's 17 minutes, training-scale.sh's 20, longhaul.sh's 13, the others' few
#   HTSIM_SRC=~/uet-htsim bash bench/all.sh # with the htsim comparison (an hour more)
#
# Knobs: ONLY="claims longhaul transfer-dir wan training-scale htsim" (a subset, in that order);
# HTSIM_SRC, a checkout of github.com/ultraethernet/uet-htsim (the htsim
# row is skipped, with a line saying so, where it is not set). A script
# that fails (a run failed, or a goal it checks is not met) is reported
# and the rest still run; the exit status is 1 when any failed.
set -uo pipefail
cd "$(dirname "$0")/.."

ONLY=${ONLY:-"claims longhaul transfer-dir wan training-scale htsim"}
failed=()
run() {
  local name=$1
  shift
  echo "== $name: $*" >&2
  if ! "$@"; then
    failed+=("$name")
  fi
}
for b in $ONLY; do
  case $b in
  claims) run claims bash bench/claims.sh ;;
  longhaul) run longhaul bash bench/longhaul.sh ;;
  transfer-dir) run transfer-dir bash bench/transfer-dir.sh ;;
  wan) run wan bash bench/wan.sh ;;
  training-scale) run training-scale bash bench/training-scale.sh ;;
  htsim)
    if [ -n "${HTSIM_SRC:-}" ]; then
      run htsim bash bench/htsim/run.sh "$HTSIM_SRC"
    else
      echo "== htsim: skipped (set HTSIM_SRC to a uet-htsim checkout)" >&2
    fi
    ;;
  *) echo "bench/all.sh: unknown benchmark $b (want claims, longhaul, transfer-dir, wan, training-scale or htsim)" >&2; exit 2 ;;
  esac
done
bash bench/glance.sh >/dev/null
echo "README.md's results at a glance rewritten from docs/performance.md" >&2
if [ ${#failed[@]} -gt 0 ]; then
  echo "bench/all.sh: ${failed[*]} failed or missed a goal (their sections say which)" >&2
  exit 1
fi
