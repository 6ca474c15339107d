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
# Then, when `ncclrr record` offers --gpu-timing, a PyTorch job recorded with it.
#
# Usage: tests/gpu/gputiming_acceptance.sh (from the repository root; build/ built with CUDA)
# Writes $OUT/gputiming_acceptance.log. Exit 0 when every check passed.
set -u
source "$(dirname "$0")/gputiming_env.sh"
PROBE=$BUILD/bin/ncclrr-gputiming-probe
LOG=$OUT/gputiming_acceptance.log
WORK=$(mktemp -d /tmp/ncclrr-gputiming-XXXXXX)
: >"$LOG"
failures=0
say() { echo "$*" | tee -a "$LOG"; }
probe() {  # probe NAME ARGS... : the probe's own validation decides; output in $WORK/last.out
  local name=$1; shift
  timeout 300 "$PROBE" "$@" >"$WORK/last.out" 2>&1
  local rc=$?
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
nvidia-smi -L 2>&1 | tee -a "$LOG"
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
[ -x "$BUILD/bin/ncclrr" ] && "$BUILD/bin/ncclrr" info "$WORK/probe-trace" >>"$LOG" 2>&1

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

if [ -x "$BUILD/bin/ncclrr" ] && "$BUILD/bin/ncclrr" record --help 2>&1 | grep -q -- --gpu-timing; then
  say "== ncclrr record --gpu-timing on a PyTorch job"
  "$BUILD/bin/ncclrr" record --gpu-timing -o "$WORK/torch-gpu" -- \
    "$PY" -m torch.distributed.run --nproc-per-node 2 "$ROOT/tests/gpu/profiler_torch_job.py" \
    >"$WORK/torch-gpu.out" 2>&1
  say "record exit $?"
  tail -n 5 "$WORK/torch-gpu.out" >>"$LOG"
  "$BUILD/bin/ncclrr" dump "$WORK/torch-gpu" >"$WORK/torch-gpu.dump" 2>&1
  say "dump lines mentioning GPU times: $(grep -i -c gpu "$WORK/torch-gpu.dump")"
else
  say "SKIP ncclrr record --gpu-timing: not offered by this build's ncclrr record yet"
fi

tar -czf "$OUT/gputiming_traces.tar.gz" -C "$WORK" . 2>/dev/null
say "== $failures failure(s)"
exit $((failures > 0))
