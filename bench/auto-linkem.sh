#!/usr/bin/env bash
# bench/auto-linkem.sh: scheme auto against every fixed scheme through the
# user-space link emulator while the loss rate changes mid-transfer: a
# clean path, then LOSS for a while, then clean again (linkem's lossat=).
# Messages go one at a time (--depth 1), so each one's completion time
# counts, as in SDR-RDMA's long-haul experiments; the sender paces at
# RATE, which is also what auto's model is told. The defaults put the
# RTT (50 ms) near an 8 MiB message's injection time (168 ms): a lost
# packet then costs SR-NACK a good part of a message's time, while
# parity, four sub-messages of it per message, costs EC as much on a
# clean path. (A message of one sub-message, 2 MiB or less, hides its
# parity behind its own ACK when nothing is lost, so EC would cost
# nothing there and win everywhere.) A fresh emulator per run
# starts the loss schedule with it. Runs are interleaved over REPS rounds
# so the machine's load falls on all schemes alike.
#
#   bash bench/auto-linkem.sh
#
# Knobs (environment): SCHEMES="auto sr-nack ec:32,8 ec:32,2 sr xor:32,8"
# REPS=3 DELAY=25ms (each way) LOSS=1% LOSSY=4s-8s RATE=400Mbps MSG=8MiB
# SIZE=384MiB RUN_TIMEOUT=300.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

SCHEMES=${SCHEMES:-"auto sr-nack ec:32,8 ec:32,2 sr xor:32,8"}
REPS=${REPS:-3}
DELAY=${DELAY:-25ms}
LOSS=${LOSS:-1%}
LOSSY=${LOSSY:-4s-8s}
RATE=${RATE:-400Mbps}
MSG=${MSG:-8MiB}
SIZE=${SIZE:-384MiB}
RUN_TIMEOUT=${RUN_TIMEOUT:-300}

use_tmp
go build -o "$tmp/sdrnet" ./cmd/sdrnet

spec="delay=$DELAY,lossat=$LOSSY/$LOSS"
args=(--msg "$MSG" --depth 1 --rate "$RATE" --size "$SIZE")
machine
echo "link:    sdrnet linkem --spec \"$spec\" (clean, then $LOSS from ${LOSSY%-*} to ${LOSSY#*-}, then clean)"
echo "sender:  sdrnet bench ${args[*]} --scheme SCHEME, $REPS rounds, interleaved"
echo
for i in $(seq "$REPS"); do
  for s in $SCHEMES; do
    name="$(echo "$s" | tr ':,' '__')-$i"
    through "$name" "$spec" "${args[@]}" --scheme "$s" || true
  done
done
python3 - "$tmp" "$REPS" $SCHEMES <<'PY'
import json, os, statistics, sys
tmp, reps, schemes = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rows = {}
for s in schemes:
    runs = []
    for i in range(1, reps + 1):
        f = os.path.join(tmp, "%s-%d.json" % (s.replace(":", "_").replace(",", "_"), i))
        try:
            runs.append(json.load(open(f)))
        except (OSError, ValueError):
            pass
    rows[s] = runs
print("%-10s %5s %12s %10s %10s %10s %10s  %s" % ("scheme", "runs", "seconds", "p50 msg", "p99 msg", "resent", "parity", "auto chose (last run)"))
med = {}
for s, runs in rows.items():
    if not runs:
        print("%-10s %5d  (no run finished)" % (s, 0))
        continue
    secs = [r["seconds"] for r in runs]
    med[s] = statistics.median(secs)
    last = runs[-1]
    chose = ", ".join("%s %d" % kv for kv in sorted((last.get("schemes") or {}).items()))
    print("%-10s %5d %12s %9.1fms %9.1fms %9.1fM %9.1fM  %s" % (
        s, len(runs), "%.2f (%s)" % (med[s], " ".join("%.2f" % x for x in secs)),
        1e3 * statistics.median(r["message_completion_s"]["p50"] for r in runs),
        1e3 * statistics.median(r["message_completion_s"]["p99"] for r in runs),
        statistics.median(r["retransmitted_bytes"] for r in runs) / 2**20,
        statistics.median(r["parity_bytes"] for r in runs) / 2**20, chose))
fixed = {s: t for s, t in med.items() if s != "auto"}
if "auto" in med and fixed:
    best = min(fixed, key=fixed.get)
    print()
    print("auto %.2fs against the fastest fixed scheme, %s, %.2fs: %.3fx its time (median of %d)" % (
        med["auto"], best, fixed[best], med["auto"] / fixed[best], reps))
    print("auto finishes ahead of every fixed scheme:", "yes" if med["auto"] < fixed[best] else "no")
PY
