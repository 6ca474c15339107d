#!/usr/bin/env bash
# Issue 6's acceptance of `record --sketch` on real NCCL (2 GPUs): ncclrr-example send-race recorded
# RUNS times (default 50) and checked, counting the runs flagged buffer_race or wrong_sum;
# swap-same-size must give suspected_swap at seq 4; clean must give nothing; the nccl-tests-style
# `sweep` (every collective x datatype x op, in and out of place, AMP-style Inf/NaN data; threads
# with SWEEP_STEPS steps, default 5 = up to 1 M elements, and --group with 4) must compute right
# and give nothing; a PyTorch AMP training loop (tests/gpu/sketch_torch_amp_job.py, DDP over 2
# GPUs, AMP_STEPS steps, default 1000, overflowing fp16 gradients) must give nothing. Builds
# nothing: run after tests/gpu/build_on_device.sh (or tests/gpu/run_all.sh sketchrec); about
# 300-400 s with RUNS=50. On a machine without two GPUs, NCCLRR_SKETCH_BACKEND=host runs the same
# steps on the host NCCL (the PyTorch step is skipped). Logs: $OUT/sketchrec.
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
record() {  # record NAME SCENARIO [EXAMPLE ARGS...]: trace in $W/t-NAME
  local name=$1 scenario=$2
  shift 2
  timeout -k 5 120 "$N" record --sketch -o "$W/t-$name" -- "$EX" "$scenario" --backend "$BACKEND" \
    --ranks 2 --steps 4 "$@" >"$W/$name.log" 2>&1
}

# The example's watchdog prints #hang when a run stops making progress: send-race never should.
# Three hung runs end the loop (each costs the watchdog's 20 s), so the later steps still run.
# On CUDA the racing copy is queued before the call behind a random 60-240 us delay and the raced
# tensor is 16 MB (NCCL reads it for ~100 us), so the write lands before, during or after NCCL's
# reads, run by run: the rate is reported. Every run whose results the program found wrong must
# be flagged.
RACE_ARGS=()
[ "$BACKEND" = nccl ] && RACE_ARGS=(--race-elems $((4 << 20)))
# Per call too: the steps the program saw wrong, and the calls flagged (a finding and its repeats).
flagged_calls() {
  "$N" check "$1" --json 2>/dev/null | "$PY" -c '
import json, sys
try:
    r = json.load(sys.stdin)
except Exception:
    print(0); sys.exit()
print(sum(1 + (f.get("repeats") or 0) for f in r["findings"]
          if f["kind"] in ("buffer_race", "wrong_sum")))'
}
flagged=0 hung=0 runs=0 wrong=0 missed=0 broken=0 t0=$SECONDS
steps=0 wrong_steps=0 calls_flagged=0
for i in $(seq 1 "$RUNS"); do
  record "race$i" send-race "${RACE_ARGS[@]}"
  runs=$i
  grep -q "#hang" "$W/race$i.log" && hung=$((hung + 1))
  k=$(finding_kinds "$W/t-race$i")
  steps=$((steps + $(grep -c "^step [0-9]*: #wrong" "$W/race$i.log")))
  wrong_steps=$((wrong_steps + $(grep -c "^step [0-9]*: #wrong [1-9]" "$W/race$i.log")))
  calls_flagged=$((calls_flagged + $(flagged_calls "$W/t-race$i")))
  hit=0
  case " $k" in *buffer_race@*|*wrong_sum@*) flagged=$((flagged + 1)) hit=1 ;; esac
  keep=0
  if grep -q "^total: #wrong [1-9]" "$W/race$i.log"; then
    wrong=$((wrong + 1))
    [ "$hit" = 1 ] || { missed=$((missed + 1)) keep=1; }
  elif ! grep -q "^total: #wrong 0" "$W/race$i.log" && ! grep -q "#hang" "$W/race$i.log"; then
    broken=$((broken + 1)) keep=1  # neither a result nor a hang: the program died
  fi
  [ "$i" -gt 3 ] && [ "$keep" = 0 ] && rm -rf "$W/t-race$i"
  if [ "$hung" -ge 3 ]; then say "FAIL send-race: $hung of $i runs hung under --sketch; loop ended"; break; fi
done
say "send-race: flagged buffer_race or wrong_sum in $flagged of $runs runs; the program saw wrong" \
  "results in $wrong, of which $missed unflagged ($BACKEND, $((SECONDS - t0)) s, $hung hung," \
  "$broken died); per call: $wrong_steps of $steps steps computed wrong, $calls_flagged calls flagged"
[ "$hung" -eq 0 ] && [ "$missed" -eq 0 ] && [ "$broken" -eq 0 ] || failures=$((failures + 1))
[ "$wrong" -eq 0 ] && say "WARN send-race: no run computed wrong, so none tested the wrong_sum path"

[ "$BACKEND" = host ] && [ "$flagged" -ne "$runs" ] && failures=$((failures + 1))  # deterministic

record swap swap-same-size
k=$(finding_kinds "$W/t-swap")
if [[ " $k " == *" suspected_swap@4 "* ]]; then
  say "PASS swap-same-size: $k"
else
  say "FAIL swap-same-size: got '$k', want suspected_swap@4"
  failures=$((failures + 1))
fi
record clean clean
k=$(finding_kinds "$W/t-clean")
if [ -z "${k// /}" ]; then say "PASS clean: no finding"; else say "FAIL clean: $k"; failures=$((failures + 1)); fi

# clean_run NAME TIMEOUT CMD...: CMD recorded with --sketch into $W/t-NAME; the program must exit
# 0 and check must find nothing. The trace is kept only when something failed (it is large).
clean_run() {
  local name=$1 limit=$2 t0=$SECONDS k
  shift 2
  timeout -k 10 "$limit" "$N" record --sketch -o "$W/t-$name" -- "$@" >"$W/$name.log" 2>&1
  local prc=$?
  "$N" check "$W/t-$name" >"$W/$name.check.txt" 2>&1
  local crc=$?
  "$N" info "$W/t-$name" >"$W/$name.info.txt" 2>&1
  k=$(finding_kinds "$W/t-$name")
  local notes
  notes=$(grep -c -i "note" "$W/$name.check.txt")
  if [ "$prc" = 0 ] && [ "$crc" = 0 ] && [ -z "${k// /}" ]; then
    say "PASS $name: program exit 0, check exit 0, no finding ($notes note lines; $((SECONDS - t0)) s)"
    rm -rf "$W/t-$name"
  else
    say "FAIL $name: program exit $prc, check exit $crc, findings '$k' ($((SECONDS - t0)) s)"
    grep -E "^wrong|#wrong|#hang" "$W/$name.log" | head -n 5 | tee -a "$W/summary.log"
    head -n 30 "$W/$name.check.txt" | tee -a "$W/summary.log"
    failures=$((failures + 1))
  fi
}

clean_run sweep 150 "$EX" sweep --backend "$BACKEND" --ranks 2 --steps "${SWEEP_STEPS:-5}"
grep -E "^step|^total" "$W/sweep.log" | tee -a "$W/summary.log"
clean_run sweep-group 100 "$EX" sweep --backend "$BACKEND" --ranks 2 --steps 4 --group
grep -E "^total" "$W/sweep-group.log" | tee -a "$W/summary.log"

if [ "$BACKEND" = nccl ] && "$PY" -c "import torch" 2>/dev/null; then
  export NCCLRR_AMP_STEPS=${AMP_STEPS:-1000}
  clean_run torch-amp 200 "$PY" -m torch.distributed.run \
    --nproc-per-node 2 --master-port 29573 "$ROOT/tests/gpu/sketch_torch_amp_job.py"
  grep -E "^rank [0-9]+ steps" "$W/torch-amp.log" | tee -a "$W/summary.log"
  grep -i -E "calls|records" "$W/torch-amp.info.txt" | head -n 6 | tee -a "$W/summary.log"
else
  say "SKIP torch-amp: needs --backend nccl and PyTorch"
fi

# record --capture on real NCCL (device buffers copied to pinned staging on the call's stream):
# clean must verify exactly with no finding; send-race must be caught from the captured data.
capture_run() {  # capture_run NAME SCENARIO WANT(regex over kinds; empty: none)
  timeout -k 5 120 "$N" record --capture 268435456 -o "$W/t-cap-$1" -- "$EX" "$2" \
    --backend "$BACKEND" --ranks 2 --steps 4 >"$W/cap-$1.log" 2>&1
  "$N" check "$W/t-cap-$1" >"$W/cap-$1.check.txt" 2>&1
  local want=$3
  if [ -n "$want" ] && [ "$BACKEND" = nccl ] && grep -q "^total: #wrong 0" "$W/cap-$1.log"; then
    want=""  # the write landed after NCCL read the buffer: right results, nothing to flag
  fi
  if ! grep -q "^total: #wrong" "$W/cap-$1.log"; then
    want="NO RESULT"  # the program died or hung: fail
  fi
  set -- "$1" "$2" "$want"
  local k
  k=$(finding_kinds "$W/t-cap-$1")
  local side
  side=$(du -cb "$W/t-cap-$1"/*.capture 2>/dev/null | tail -n 1 | cut -f1)
  if { [ -z "$3" ] && [ -z "${k// /}" ]; } || { [ -n "$3" ] && [[ " $k" =~ $3 ]]; }; then
    say "PASS capture $1: findings '$k', side files ${side:-0} bytes"
  else
    say "FAIL capture $1: findings '$k' (want '${3:-none}'), side files ${side:-0} bytes"
    head -n 20 "$W/cap-$1.check.txt" | tee -a "$W/summary.log"
    failures=$((failures + 1))
  fi
}
capture_run clean clean ""
# The captured race must be flagged when its results were wrong (always on the host NCCL); on
# CUDA a run whose copy landed after NCCL read the buffer computed right and must stay clean.
capture_run race send-race "wrong_sum@|buffer_race@"
timeout -k 5 120 "$N" replay "$W/t-cap-clean" --backend host --data captured \
  >"$W/cap-replay.log" 2>&1
rc=$?
say "capture clean: replay --backend host --data captured exit $rc ($(tail -n 1 "$W/cap-replay.log"))"
[ "$rc" = 0 ] || failures=$((failures + 1))

"$N" check "$W/t-swap" >"$W/swap.check.txt" 2>&1
"$N" check "$W/t-race1" >"$W/race1.check.txt" 2>&1
say "== $failures failure(s)"
exit $((failures > 0))
