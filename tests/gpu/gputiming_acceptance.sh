#!/usr/bin/env bash
# GPU acceptance of GPU timing (issue 9) on the 2-GPU test machine, through
# ncclrr-gputiming-probe, which calls GpuTimer exactly as the interposer is to call it:
#  * CUPTI: a GPU start/end for every call, plausible (not before the call was issued, start <=
#    end, not in the future), for groups (one process driving both GPUs), blocking calls from one
#    thread per GPU, CUDA graph launches (one record per template per launch) and nonblocking
#    communicators (kernels launched from NCCL's own thread);
#  * CUDA event pairs (forced, and as the fallback);
#  * a job that starts using CUPTI itself midway: ncclrr hands CUPTI over, the job's own CUPTI
#    client receives kernel records, and later calls are timed with events;
#  * a job whose CUPTI is already taken at start (ncclrr falls back to events).
# Then `ncclrr record --gpu-timing` on PyTorch jobs: every collective and p2p call has a GPU
# start/end, from CUPTI launch callbacks by default (the context exists before timing starts)
# and from event pairs when NCCLRR_GPU_TIMING_SOURCE=events asks for them; `ncclrr check` reports stragglers; and a
# job running the PyTorch profiler (its own CUPTI client) while recorded with CUPTI: the profiler
# still sees NCCL kernels, ncclrr says it handed CUPTI over and times the later calls with CUDA
# events.
#
# Every step runs under `timeout` (STEP_TIMEOUT seconds, default 90; PyTorch steps 240), so one
# hang costs one step, not the run.
#
# Usage: tests/gpu/gputiming_acceptance.sh (from the repository root; build/ built with CUDA)
# Writes $OUT/gputiming_acceptance.log. Exit 0 when every check passed.
set -u
source "$(dirname "$0")/gputiming_env.sh"
PROBE=$BUILD/bin/ncclrr-gputiming-probe
LOG=$OUT/gputiming_acceptance.log
WORK=$(mktemp -d /tmp/ncclrr-gputiming-XXXXXX)
STATS=$BUILD/tests/interposer/interposer-trace-stats
STEP_TIMEOUT=${STEP_TIMEOUT:-90}
TORCH_TIMEOUT=${TORCH_TIMEOUT:-240}
: >"$LOG"
failures=0
say() { echo "$*" | tee -a "$LOG"; }
probe() {  # probe NAME ARGS... : the probe's own validation decides; output in $WORK/last.out
  local name=$1; shift
  timeout -k 10 "$STEP_TIMEOUT" "$PROBE" "$@" >"$WORK/last.out" 2>&1
  local rc=$?
  [ $rc -eq 124 ] || [ $rc -eq 137 ] && echo "(timed out after ${STEP_TIMEOUT} s)" >>"$WORK/last.out"
  grep -v "^note:" "$WORK/last.out" | tail -n 5 >>"$LOG"
  grep "^note:" "$WORK/last.out" | sort -u | head -n 5 >>"$LOG"
  if [ $rc -eq 0 ]; then say "PASS $name: $(grep '^probe' "$WORK/last.out" | tail -n 1)"
  else say "FAIL $name (exit $rc)"; failures=$((failures + 1)); fi
}
last() { cat "$WORK/last.out"; }
expect() {  # expect NAME TEXT COMMAND-OUTPUT
  if echo "$3" | grep -q -- "$2"; then say "PASS $1"; else say "FAIL $1 (wanted '$2')"; failures=$((failures + 1)); fi
}

say "== machine"
timeout 20 nvidia-smi -L 2>&1 | tee -a "$LOG"
ls -la /usr/local/cuda/lib64/libcupti.so* /usr/local/cuda/extras/CUPTI/lib64 2>&1 | head -n 4 >>"$LOG"

say "== CUPTI"
probe "cupti group (1 process, 2 GPUs)" --timing cupti --mode group --iters 3000
o=$(last)
expect "cupti group used CUPTI" "source=cupti" "$o"
probe "cupti blocking calls, one thread per GPU" --timing cupti --mode threads --iters 3000
probe "cupti CUDA graph launches" --timing cupti --mode graph --iters 500
probe "cupti nonblocking communicators" --timing cupti --mode nonblocking --iters 1000
probe "cupti 32 KB messages" --timing cupti --mode group --iters 2000 --count 8192
probe "cupti, with a trace written" --timing cupti --mode group --iters 200 --trace "$WORK/probe-trace"
o=$(last)
[ -x "$BUILD/bin/ncclrr" ] && timeout -k 5 60 "$BUILD/bin/ncclrr" info "$WORK/probe-trace" >>"$LOG" 2>&1

say "== CUDA event pairs"
probe "events group" --timing events --mode group --iters 2000
o=$(last)
expect "events used" "source=events" "$o"
probe "events threads" --timing events --mode threads --iters 2000
probe "events skip captured calls" --timing events --mode graph --iters 100
o=$(last)
expect "events: graph calls counted as skipped, not mistimed" "implausible=0" "$o"

say "== the job's own CUPTI"
probe "job takes CUPTI midway" --timing auto --mode group --iters 2000 --foreign-cupti 1000
o=$(last)
expect "job's own CUPTI client got NCCL kernels" "job_cupti_kernels=[1-9]" "$o"
expect "calls after the hand-over timed by events" "source=events" "$o"
probe "CUPTI already taken at start" --timing auto --mode group --iters 1000 --job-subscribes
o=$(last)
expect "falls back to events when the job holds CUPTI" "source=events" "$o"

# gpu_check DIR NAME [FRACTION]: at least FRACTION (default all) of the live collective/p2p calls
# of every file have a GPU time (interposer-trace-stats' "gpu" object per file).
gpu_check() {
  local dir=$1 name=$2 fraction=${3:-1}
  timeout -k 5 60 "$STATS" "$dir" >"$dir.stats" 2>&1
  local res
  res=$("$PY" - "$dir.stats" "$name" "$fraction" <<'PYEOF'
import json, sys
try:
    files = json.load(open(sys.argv[1]))["files"]
except Exception as e:
    print("FAIL %s: no trace stats (%s)" % (sys.argv[2], e)); sys.exit(0)
ok = bool(files)
for f in files:
    g = f["gpu"]
    print("  pid %d: %d calls, %d with GPU times (cupti %d, events %d)" % (f["pid"], g["calls"], g["timed"], g["cupti"], g["events"]))
    ok = ok and g["calls"] > 0 and g["timed"] >= float(sys.argv[3]) * g["calls"]
print(("PASS" if ok else "FAIL") + " " + sys.argv[2] + ": collective and p2p calls with a GPU start/end (wanted a fraction >= " + sys.argv[3] + ")")
PYEOF
)
  say "$res"
  echo "$res" | tail -n 1 | grep -q "^PASS" || failures=$((failures + 1))
}

# record_torch NAME JOB.py: `ncclrr record --gpu-timing` of a two-process torchrun job into
# $WORK/NAME (output in $WORK/NAME.out); checks that it exited 0.
record_torch() {
  local name=$1 job=$2
  timeout -k 10 "$TORCH_TIMEOUT" "$BUILD/bin/ncclrr" record --gpu-timing -o "$WORK/$name" -- \
    "$PY" -m torch.distributed.run --nproc-per-node 2 "$ROOT/tests/gpu/$job" >"$WORK/$name.out" 2>&1
  local rc=$?
  say "record exit $rc"
  tail -n 5 "$WORK/$name.out" >>"$LOG"
  expect "$name: the job exits 0 under --gpu-timing" "^0$" "$rc"
}

say "== ncclrr record --gpu-timing on PyTorch"
# PyTorch makes its CUDA context before the first NCCL call, where CUPTI's launch API records
# never come: CUPTI's launch callbacks tie its kernels to the calls, and the trace says so.
record_torch torch-gpu profiler_torch_job.py
T=$WORK/torch-gpu
gpu_check "$T" "torch --gpu-timing"
expect "torch --gpu-timing used CUPTI" '"cupti": [1-9]' "$(cat "$T.stats")"
timeout -k 5 60 "$BUILD/bin/ncclrr" dump "$T" >"$T.dump" 2>&1
expect "the trace says how CUPTI tied kernels to calls" "launches correlated by CUPTI callbacks" \
  "$(cat "$T.dump")"
timeout -k 5 60 "$BUILD/bin/ncclrr" check "$T" >"$T.check" 2>&1
grep -A3 "stragglers" "$T.check" | head -n 8 >>"$LOG"
expect "check reports stragglers from GPU times" "note\[stragglers\]" "$(cat "$T.check")"

say "== the same job with event pairs asked for (NCCLRR_GPU_TIMING_SOURCE=events)"
NCCLRR_GPU_TIMING_SOURCE=events record_torch torch-events profiler_torch_job.py
T=$WORK/torch-events
gpu_check "$T" "torch --gpu-timing with event pairs"
expect "torch with event pairs asked for used them" '"events": [1-9]' "$(cat "$T.stats")"

say "== --gpu-timing with the PyTorch profiler in the job (its own CUPTI)"
record_torch torch-prof gputiming_torch_profiler_job.py
T=$WORK/torch-prof
expect "the PyTorch profiler still saw NCCL kernels" "profiler_nccl_kernels=[1-9]" "$(cat "$T.out")"
# Kernels still running when CUPTI is handed over may go untimed: most calls, not all.
gpu_check "$T" "torch --gpu-timing with the profiler" 0.9
timeout -k 5 60 "$BUILD/bin/ncclrr" dump "$T" >"$T.dump" 2>&1
expect "ncclrr handed CUPTI over to the profiler" \
  "the job itself uses CUPTI\|another CUPTI client is active" "$(cat "$T.dump")"

tar -czf "$OUT/gputiming_traces.tar.gz" -C "$WORK" . 2>/dev/null
say "== $failures failure(s)"
exit $((failures > 0))
