#!/usr/bin/env bash
# `ncclrr status` on real jobs while they hang (docs/status.md), on the GPU test machine: 2 ranks
# on one GPU, each process its own NCCL_HOSTID. Each job is recorded in the background; `status`
# is asked while it runs; then the job is killed.
#   skip-sleep   PyTorch, rank 1 skips step 5's collectives and sleeps: hung, rank 1 named
#   straggler    PyTorch, rank 1 sleeps 0.2 s per step: a straggler, never hung
#   two-groups   PyTorch, two groups used in opposite orders from step 3: hung
#   jax-branch   JAX, process 1 issues an extra psum at step 7: hung
#   gpu-stall    PyTorch under record --gpu-progress (CUPTI, with a start event per call for
#                progress): rank 1 launches a 120 s kernel before step 5's collectives; every rank
#                issues them; status names rank 1, whose GPU has not started seq N, while rank
#                0's GPU runs it. gpu-stall-events: the same under --gpu-timing with
#                NCCLRR_GPU_TIMING_SOURCE=events (progress from the event pairs, at no extra cost).
#                gpu-stall-plain: without --gpu-timing (the host side alone cannot see it)
#   ring         record --ring: rank 0 blocks in a fresh group's first collective, rank 1 sleeps
#                in Python; rank 0's watchdog (3 s) makes both write their rings; the time from
#                rank 0's ring on disk to rank 1's is measured; `check` explains the hang
# Usage: tests/gpu/status_acceptance.sh (after tests/gpu/build_on_device.sh); STATUS_ONLY="..."
# runs a subset. Writes $OUT/status.log and every status output under $OUT/status/.
set -u
source "$(dirname "$0")/gputiming_env.sh"
export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}
N=$BUILD/bin/ncclrr
JOB=$ROOT/tests/gpu/status_torch_job.py
RJ=$ROOT/tests/gpu/realjobs
LOG=$OUT/status.log
S=$OUT/status
WORK=$(mktemp -d /tmp/ncclrr-status-XXXXXX)
mkdir -p "$S"
: >"$LOG"
failures=0
say() { echo "$*" | tee -a "$LOG"; }
check() {
  local what=$1; shift
  if "$@"; then say "PASS $what"; else say "FAIL $what"; failures=$((failures + 1)); fi
}
want() { [ -n "${STATUS_ONLY:-}" ] && [[ " $STATUS_ONLY " != *" $1 "* ]] && return 1; return 0; }
jq_() { "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1" 2>/dev/null; }
TORCHRUN=("$PY" -m torch.distributed.run --standalone --nproc-per-node 2)

# start NAME [record flags] -- CMD...: records in the background; sets PID and DIR.
start() {
  local name=$1; shift
  local flags=()
  while [ "$1" != "--" ]; do flags+=("$1"); shift; done
  shift
  DIR=$WORK/$name
  "$N" record "${flags[@]}" -o "$DIR" -- "$@" >"$S/$name.job.log" 2>&1 &
  PID=$!
}
stop() { kill -TERM "$PID" 2>/dev/null; sleep 2; kill -KILL "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; }
# status NAME LABEL [flags]: text and JSON; sets RC (of the text run) and JSON.
status() {
  local name=$1 label=$2; shift 2
  "$N" status "$DIR" "$@" >"$S/$name.$label.txt" 2>&1
  RC=$?
  "$N" status "$DIR" "$@" --json >"$S/$name.$label.json" 2>/dev/null
  JSON=$S/$name.$label.json
  say "-- $name $label (exit $RC): $(grep '^verdict' "$S/$name.$label.txt")"
}

if want skip-sleep; then
  start skip-sleep -- "${TORCHRUN[@]}" --master-port 29631 "$JOB" skip-sleep --at 5
  sleep 35
  status skip-sleep hang --hang-after 5
  stop
  check "skip-sleep: hung (exit 1)" [ "$RC" = 1 ]
  check "skip-sleep: rank 1 is the one waited for" [ "$(jq_ "$JSON" '[m["rank"] for c in d["comms"] for m in c["missing"]]')" = "[1]" ]
  say "   $(grep -m1 'never issued' "$S/skip-sleep.hang.txt")"
  say "   $(grep -m1 "rank 1 (" "$S/skip-sleep.hang.txt" | tail -n 1)"
fi

if want straggler; then
  start straggler -- "${TORCHRUN[@]}" --master-port 29632 "$JOB" straggler --delay 0.2 --steps 150
  sleep 25
  verdicts=""
  for i in 1 2 3 4 5; do
    status straggler "s$i"
    verdicts="$verdicts $(jq_ "$JSON" 'd["verdict"]')"
    sleep 0.7
  done
  stop
  say "   verdicts: $verdicts"
  check "straggler: never hung" bash -c "[[ '$verdicts' != *hung* ]]"
  check "straggler: reported as a straggler" bash -c "[[ '$verdicts' == *straggler* ]]"
fi

if want two-groups; then
  start two-groups -- "$PY" "$RJ/torch_two_groups.py" --port 29633 --bug opposite --bug-step 3
  sleep 35
  status two-groups hang --hang-after 5
  stop
  check "two-groups: hung (exit 1)" [ "$RC" = 1 ]
  say "   $(grep -m2 'blocked in\|runs outside' "$S/two-groups.hang.txt" | tr '\n' ' ')"
fi

if want jax-branch; then
  DIR=$WORK/jax-branch
  (XLA_PYTHON_CLIENT_PREALLOCATE=false "$N" record -o "$DIR" -- bash -c \
    "'$PY' '$RJ/jax_psum.py' --process-id 0 --port 29634 --bug branch & '$PY' '$RJ/jax_psum.py' --process-id 1 --port 29634 --bug branch; wait") \
    >"$S/jax-branch.job.log" 2>&1 &
  PID=$!
  sleep 45
  status jax-branch hang --hang-after 5
  stop
  check "jax-branch: hung (exit 1)" [ "$RC" = 1 ]
fi

# gpu_stall NAME [record flags]: the GPU-stall job, status after 40 s.
gpu_stall() {
  local name=$1; shift
  start "$name" "$@" -- "${TORCHRUN[@]}" --master-port 29636 "$JOB" gpu-stall --at 5 --stall 120
  sleep 25
  local t0=$SECONDS
  for i in $(seq 1 25); do  # until hung (the stall starts when the job reaches step 5), <= 75 s
    status "$name" hang --hang-after 5 >/dev/null
    [ "$RC" = 1 ] && break
    sleep 3
  done
  say "   $name: status said $(jq_ "$JSON" 'd["verdict"]') after polling $((SECONDS - t0)) s"
  stop
  say "   $(grep -m1 'GPU' "$S/$name.hang.txt")"
  say "   $(grep -m1 'not started\|running' "$S/$name.hang.txt" | tail -n 1)"
}
for variant in gpu-stall gpu-stall-events; do
  want "$variant" || continue
  flag=--gpu-progress  # CUPTI: the start event per call is asked for
  if [ "$variant" = gpu-stall-events ]; then export NCCLRR_GPU_TIMING_SOURCE=events flag=--gpu-timing; fi
  gpu_stall "$variant" "$flag"
  unset NCCLRR_GPU_TIMING_SOURCE
  check "$variant: hung (exit 1)" [ "$RC" = 1 ]
  check "$variant: rank 1's GPU has not started the collective" \
    [ "$(jq_ "$JSON" '[m["rank"] for c in d["comms"] for m in c["missing"] if m["gpu_not_started"]]')" = "[1]" ]
  check "$variant: rank 0's GPU runs it" \
    [ "$(jq_ "$JSON" '[r["gpu_front"]["gpu"] for c in d["comms"] for r in c["ranks"] if r["rank"] == 0 and r["gpu_front"]]')" = "['running']" ]
done
if want gpu-stall-plain; then
  gpu_stall gpu-stall-plain
  check "gpu-stall-plain: without GPU progress nothing is claimed about the GPU" \
    bash -c "! grep -q 'GPU:' '$S/gpu-stall-plain.hang.txt'"
fi

if want ring; then
  export NCCLRR_WATCHDOG_MS=3000
  start ring --ring 10000 -- "${TORCHRUN[@]}" --master-port 29635 "$JOB" skip-sleep --at 5 --fresh-group
  unset NCCLRR_WATCHDOG_MS
  t0=$(date +%s.%N)
  first0="" first1=""
  for i in $(seq 1 300); do
    "$N" status "$DIR" --json >"$S/ring.poll.json" 2>/dev/null
    seen=$(jq_ "$S/ring.poll.json" '" ".join(sorted({str(r["rank"]) for c in d["comms"] for r in c["ranks"] if r["last"]}))')
    now=$(date +%s.%N)
    [ -z "$first0" ] && [[ " $seen " == *" 0 "* ]] && first0=$now
    [ -z "$first1" ] && [[ " $seen " == *" 1 "* ]] && first1=$now
    [ -n "$first0" ] && [ -n "$first1" ] && break
    sleep 0.1
  done
  status ring hang --hang-after 2
  sleep 1
  stop
  "$N" check "$DIR" >"$S/ring.check.txt" 2>&1
  say "   rank 0's ring on disk at +$("$PY" -c "print(f'{${first0:-0} - $t0:.2f}')") s, rank 1's at +$("$PY" -c "print(f'{${first1:-0} - $t0:.2f}')") s"
  check "ring: both ranks' rings on disk" [ -n "$first0" -a -n "$first1" ]
  check "ring: the other rank's ring within 1 s of the first" \
    "$PY" -c "import sys; sys.exit(0 if abs(float('${first1:-0}') - float('${first0:-99}')) <= 1.0 else 1)"
  say "   check: $(grep '^summary' "$S/ring.check.txt")"
  check "ring: check explains the hang" grep -q 'missing_call\|cross_comm_order\|error\[' "$S/ring.check.txt"
  grep -h "flight recorder dump" "$S/ring.check.txt" | head -3 >>"$LOG"
fi

tar -C "$WORK" -czf "$OUT/status_traces.tar.gz" . 2>/dev/null
say "== done: $failures failure(s)"
rm -rf "$WORK"
[ "$failures" = 0 ]
