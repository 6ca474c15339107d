#!/usr/bin/env bash
# Issue 6's acceptance of `record --sketch` on real NCCL (2 GPUs): ncclrr-example send-race recorded
# RUNS times (default 50) and checked, counting the runs flagged buffer_race or wrong_sum;
# swap-same-size must give suspected_swap at seq 4; clean must give nothing. Builds nothing: run
# after tests/gpu/build_on_device.sh (or tests/gpu/run_all.sh sketchrec). On a machine without two
# GPUs, NCCLRR_SKETCH_BACKEND=host runs the same steps on the host NCCL. Logs: $OUT/sketchrec.
set -u
source "$(dirname "$0")/gputiming_env.sh"
W=$OUT/sketchrec
rm -rf "$W"
mkdir -p "$W"
BACKEND=${NCCLRR_SKETCH_BACKEND:-nccl}
[ "$BACKEND" = nccl ] && export NCCLRR_NCCL_LIBRARY=$NCCL_DIR/libnccl.so.2
N=$BUILD/bin/ncclrr
EX=$BUILD/bin/ncclrr-example
RUNS=${RUNS:-50}
failures=0
say() { echo "$*" | tee -a "$W/summary.log"; }
[ -x "$PY" ] || PY=python3
kinds() {  # kinds TRACE: "kind@seq" of every finding, space separated
  "$N" check "$1" --json 2>/dev/null | "$PY" -c '
import json, sys
try:
    r = json.load(sys.stdin)
except Exception:
    sys.exit()
print(" ".join("%s@%s" % (f["kind"], f["seq"]) for f in r["findings"]))'
}
record() {  # record NAME SCENARIO: trace in $W/t-NAME
  timeout -k 5 120 "$N" record --sketch -o "$W/t-$1" -- "$EX" "$2" --backend "$BACKEND" --ranks 2 \
    --steps 4 >"$W/$1.log" 2>&1
}

flagged=0
for i in $(seq 1 "$RUNS"); do
  record "race$i" send-race
  k=$(kinds "$W/t-race$i")
  case " $k" in *buffer_race@*|*wrong_sum@*) flagged=$((flagged + 1)) ;; esac
  [ "$i" -gt 3 ] && rm -rf "$W/t-race$i"
done
say "send-race: flagged buffer_race or wrong_sum in $flagged of $RUNS runs ($BACKEND)"
[ "$flagged" -gt 0 ] || failures=$((failures + 1))

record swap swap-same-size
k=$(kinds "$W/t-swap")
if [[ " $k " == *" suspected_swap@4 "* ]]; then
  say "PASS swap-same-size: $k"
else
  say "FAIL swap-same-size: got '$k', want suspected_swap@4"
  failures=$((failures + 1))
fi
record clean clean
k=$(kinds "$W/t-clean")
if [ -z "${k// /}" ]; then say "PASS clean: no finding"; else say "FAIL clean: $k"; failures=$((failures + 1)); fi
"$N" check "$W/t-swap" >"$W/swap.check.txt" 2>&1
"$N" check "$W/t-race1" >"$W/race1.check.txt" 2>&1
say "== $failures failure(s)"
exit $((failures > 0))
