#!/usr/bin/env bash
# Real framework training jobs with injected collective bugs (tests/gpu/realjobs/, see its
# README.md), recorded with `ncclrr record` on real NCCL: PyTorch (hand-written gradient
# averaging, DDP, FSDP2, two process groups) and JAX (multi-process pmap/psum). Two ranks share
# one GPU (NCCL_HOSTID per rank, set by the jobs). Per variant: record under a timeout (the hang
# variants are ended by it), then `check`, `check --json`, `dump --stable` (last 200 lines),
# `info`, and for the swap variants `replay --order recorded,canonical` on the host backend and
# on the nccl backend (which may refuse: more ranks than GPUs; logged). One summary line per
# variant: record rc, the job's "#wrong N", check rc, each finding (kind, comm, seq), the
# expected kind and whether it was found.
#
# Usage: tests/gpu/realjobs_acceptance.sh   (from anywhere; build/ or build-dev/ built with CUDA)
#   REALJOBS_ONLY="grad-clean two-groups"   run a subset (names or globs, e.g. "grad-*")
#   REALJOBS_HANG_S=45 REALJOBS_RUN_S=180 REALJOBS_JAX_BRANCH_S=90   record time limits
#   REALJOBS_PORT_BASE=29610                 first port (each variant uses its own)
#   REALJOBS_KEEP=1                          keep $OUT/realjobs after packing it
# Writes $OUT/realjobs-summary.log, $OUT/realjobs-logs.tar.gz (every output, NAME.*.txt, and
# summary.log) and $OUT/realjobs-traces.tar.gz (the trace directories t-NAME); $OUT/realjobs is
# removed after packing unless REALJOBS_KEEP=1, so that the few files under $OUT come back from
# the device machine. Exit 0 when every variant gave what was expected, 1 otherwise, 2 when it
# cannot run.
set -u
source "$(dirname "$0")/gputiming_env.sh"
N=$BUILD/bin/ncclrr
J=$ROOT/tests/gpu/realjobs
W=$OUT/realjobs
HANG_S=${REALJOBS_HANG_S:-45}
RUN_S=${REALJOBS_RUN_S:-180}
JAX_BRANCH_S=${REALJOBS_JAX_BRANCH_S:-90}
PORT0=${REALJOBS_PORT_BASE:-29610}
read -ra ONLY <<<"${REALJOBS_ONLY:-}"
rm -rf "$W"
mkdir -p "$W"
: >"$W/summary.log"
say() { echo "$*" | tee -a "$W/summary.log"; }

if [ ! -x "$N" ]; then echo "no $N: build first"; exit 2; fi
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "$NGPU" -lt 1 ]; then echo "needs a GPU (found none)"; exit 2; fi
TORCHRUN=("$(dirname "$PY")/torchrun")
[ -x "${TORCHRUN[0]}" ] || TORCHRUN=("$PY" -m torch.distributed.run)
TORCHRUN4=("${TORCHRUN[@]}" --nnodes 1 --nproc-per-node 4 --master-addr 127.0.0.1)
TORCHRUN+=(--nnodes 1 --nproc-per-node 2 --master-addr 127.0.0.1)

say "== realjobs on $(hostname): $NGPU GPU(s), 2 ranks per job; build $BUILD; python $PY"
nvidia-smi -L 2>&1 | tee -a "$W/summary.log"
HAVE_TORCH=1 HAVE_JAX=1
"$PY" -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())' \
  2>&1 | tail -n 1 | tee -a "$W/summary.log"
"$PY" -c 'import torch' >/dev/null 2>&1 || HAVE_TORCH=0
"$PY" -c 'import jax; print("jax", jax.__version__)' 2>&1 | tail -n 1 | tee -a "$W/summary.log"
"$PY" -c 'import jax' >/dev/null 2>&1 || HAVE_JAX=0

selected() {  # selected NAME: in REALJOBS_ONLY (all when it is empty)
  [ ${#ONLY[@]} -eq 0 ] && return 0
  local pat
  for pat in "${ONLY[@]}"; do
    # shellcheck disable=SC2053  # a glob on purpose
    [[ $1 == $pat ]] && return 0
  done
  return 1
}

# findings JSON-FILE: line 1 the sorted distinct kinds ("none", or "UNREADABLE" without JSON),
# line 2 each finding as "kind comm=NAME(0xHASH) seq=S [x repeats, last L] [conf C]".
findings() {
  "$PY" - "$1" <<'PYEOF'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception:
    print("UNREADABLE"); print("-"); sys.exit()
fs = r.get("findings", [])
print(" ".join(sorted({f["kind"] for f in fs})) or "none")
out = []
for f in fs:
    comm = f.get("comm")
    if f.get("comm_name"):
        comm = "%s(%s)" % (f["comm_name"], comm)
    s = "%s comm=%s seq=%s" % (f["kind"], comm, f.get("seq"))
    if f.get("ranks"):
        s += " ranks=%s" % ",".join(str(x) for x in f["ranks"])
    if f.get("repeats"):
        s += " x%d more, last seq %s" % (f["repeats"], f.get("last_seq"))
    if f.get("confidence") is not None:
        s += " conf %.2f" % f["confidence"]
    out.append(s)
print("; ".join(out) if out else "-")
PYEOF
}

verdict() {  # verdict EXPECT KINDS RECORD-RC
  local k
  if [ "$1" = "-" ]; then
    if [ "$2" = none ] && [ "$3" = 0 ]; then echo as-expected; else echo DIFFERENT; fi
    return
  fi
  for k in ${1//|/ }; do
    case " $2 " in *" $k "*) echo as-expected; return ;; esac
  done
  echo DIFFERENT
}

different=0
ran=0
# variant NAME SECONDS EXPECT REPLAY(yes|no) [RECORD-FLAGS...] -- COMMAND...
# EXPECT: "-" (no finding, job exit 0) or kinds separated by "|" (any of them found).
variant() {
  local name=$1 secs=$2 expect=$3 replay=$4
  shift 4
  local flags=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do flags+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  selected "$name" || return 0
  ran=$((ran + 1))
  local t=$W/t-$name start
  start=$(date +%s)
  rm -rf "$t"
  echo "== $name (limit ${secs}s): ncclrr record ${flags[*]-} -o $t -- $*"
  echo "# ncclrr record ${flags[*]-} -o $t -- $*" >"$W/$name.record.txt"
  timeout -s TERM -k 10 "$secs" "$N" record ${flags[@]+"${flags[@]}"} -o "$t" -- "$@" \
    >>"$W/$name.record.txt" 2>&1
  local rec=$?
  sleep 1  # let killed ranks go before the next job takes the GPU
  local left
  left=$(pgrep -af "$J/" 2>/dev/null | grep -v "^$$ ")
  [ -n "$left" ] && echo "# still running after the record ended: $left" >>"$W/$name.record.txt"
  "$N" check "$t" >"$W/$name.check.txt" 2>&1
  local chk=$?
  "$N" check "$t" --json >"$W/$name.check-json.txt" 2>"$W/$name.check-json-stderr.txt"
  "$N" dump "$t" --stable 2>&1 | tail -n 200 >"$W/$name.dump.txt"
  "$N" info "$t" >"$W/$name.info.txt" 2>&1
  local rep=""
  if [ "$replay" = yes ]; then
    timeout 300 "$N" replay "$t" --order recorded,canonical --timeout 20 \
      >"$W/$name.replay-host.txt" 2>&1
    local rh=$?
    NCCLRR_NCCL_LIBRARY=$NCCL_DIR/libnccl.so.2 timeout 300 "$N" replay "$t" --backend nccl \
      --order recorded,canonical --timeout 20 >"$W/$name.replay-nccl.txt" 2>&1
    local rn=$?
    rep=" | replay host rc=$rh nccl rc=$rn"
  fi
  local wrong kinds detail v route
  wrong=$(grep -oE '#wrong [0-9]+|Out of bounds values : [0-9]+' "$W/$name.record.txt" |
    sed 's/Out of bounds values : /oob /' | paste -sd, -)
  route=$(grep -oE 'route [A-Za-z+-]+' "$W/$name.record.txt" | tail -n 1)
  { read -r kinds; read -r detail; } < <(findings "$W/$name.check-json.txt")
  v=$(verdict "$expect" "$kinds" "$rec")
  [ "$v" = as-expected ] || different=$((different + 1))
  say "$(printf '%-22s record rc=%-3s %-18s check rc=%-2s | findings: %s%s | %s | expect %s: %s %ss' \
    "$name" "$rec" "${wrong:-no-#wrong}" "$chk" "$detail" "$rep" "${route:-no route}" "$expect" "$v" \
    "$(($(date +%s) - start))")"
}

P=$PORT0
if [ "$HAVE_TORCH" = 1 ]; then
  G=$J/torch_grad_loop.py
  variant grad-clean "$RUN_S" - no -- "$PY" "$G" --port $((P + 1)) --bug none
  variant grad-swap-same "$RUN_S" suspected_swap yes -- \
    "$PY" "$G" --port $((P + 2)) --bug swap-same --swap-steps 5,12,20
  variant grad-swap-same-sketch "$RUN_S" suspected_swap yes --sketch -- \
    "$PY" "$G" --port $((P + 3)) --bug swap-same --swap-steps 5,12,20
  variant grad-swap-diff "$HANG_S" order_swap yes -- \
    "$PY" "$G" --port $((P + 4)) --bug swap-diff --swap-steps 5,12,20
  variant ddp-clean "$RUN_S" - no -- \
    "${TORCHRUN[@]}" --master-port $((P + 5)) "$J/torch_ddp.py"
  variant ddp-skip-step "$HANG_S" "missing_call|suspected_swap|order_swap" no -- \
    "${TORCHRUN[@]}" --master-port $((P + 45)) "$J/torch_ddp.py" --bug skip-step
  variant ddp-uneven-gather "$HANG_S" count_mismatch no -- \
    "${TORCHRUN[@]}" --master-port $((P + 46)) "$J/torch_ddp.py" --bug uneven-gather
  variant ddp-unused-param "$HANG_S" "count_mismatch|missing_call|op_mismatch" no -- \
    "${TORCHRUN[@]}" --master-port $((P + 51)) "$J/torch_ddp.py" --bug unused-param
  # The fix of ddp-unused-param: find_unused_parameters=True (an extra all_reduce per step).
  variant ddp-find-unused "$RUN_S" - no -- \
    "${TORCHRUN[@]}" --master-port $((P + 68)) "$J/torch_ddp.py" --bug unused-param --find-unused
  variant fsdp2-clean "$RUN_S" - no -- \
    "${TORCHRUN[@]}" --master-port $((P + 6)) "$J/torch_fsdp2.py"
  variant fsdp2-clean-sketch "$RUN_S" - no --sketch -- \
    "${TORCHRUN[@]}" --master-port $((P + 11)) "$J/torch_fsdp2.py"
  variant two-groups "$HANG_S" cross_comm_order no -- \
    "$PY" "$J/torch_two_groups.py" --port $((P + 7)) --bug opposite
  # Opposite orders from the first collective: each rank blocks inside it (lazy connection).
  variant two-groups-first "$HANG_S" cross_comm_order yes -- \
    "$PY" "$J/torch_two_groups.py" --port $((P + 10)) --bug opposite --bug-step 0
  # Four ranks: pipeline stages exchanging activations, tensor-parallel groups split off the world.
  variant pptp-clean "$RUN_S" - no -- \
    "${TORCHRUN4[@]}" --master-port $((P + 12)) "$J/torch_pipeline_tp.py" --bug none
  variant pptp-swap-same "$RUN_S" "suspected_swap|order_swap" yes -- \
    "${TORCHRUN4[@]}" --master-port $((P + 13)) "$J/torch_pipeline_tp.py" --bug swap-same
  variant pptp-micro "$HANG_S" "p2p_mismatch|missing_call|count_mismatch" no -- \
    "${TORCHRUN4[@]}" --master-port $((P + 54)) "$J/torch_pipeline_tp.py" --bug micro
  variant accum-clean "$RUN_S" - no -- \
    "${TORCHRUN4[@]}" --master-port $((P + 14)) "$J/torch_ddp_accum.py" --bug none
  variant accum-uneven "$HANG_S" "missing_call|op_mismatch|count_mismatch" no -- \
    "${TORCHRUN4[@]}" --master-port $((P + 15)) "$J/torch_ddp_accum.py" --bug uneven
  # A side stream that writes the gradient bucket an all_reduce reads; a rank-dependent branch.
  variant side-clean "$RUN_S" - no --sketch -- \
    "$PY" "$J/torch_side_stream.py" --port $((P + 16)) --bug none
  variant side-race "$RUN_S" "buffer_race|wrong_sum" no --sketch -- \
    "$PY" "$J/torch_side_stream.py" --port $((P + 17)) --bug race
  variant side-branch "$HANG_S" "missing_call|count_mismatch|op_mismatch" no -- \
    "$PY" "$J/torch_side_stream.py" --port $((P + 18)) --bug branch
  # The same branch under PyTorch's watchdog with a 10 s timeout: it aborts the communicator
  # and ends each process, as hung production jobs end.
  variant side-branch-watchdog "$HANG_S" "missing_call|count_mismatch|op_mismatch" no -- \
    "$PY" "$J/torch_side_stream.py" --port $((P + 47)) --bug branch --pg-timeout 10
  variant side-crash "$HANG_S" missing_call no -- \
    "$PY" "$J/torch_side_stream.py" --port $((P + 43)) --bug crash
  # Gradients all-reduced from per-parameter hooks, in the order autograd produces them.
  variant hook-clean "$RUN_S" - no -- \
    "$PY" "$J/torch_hook_order.py" --port $((P + 19)) --bug none
  variant hook-order "$RUN_S" "suspected_swap|order_swap" yes -- \
    "$PY" "$J/torch_hook_order.py" --port $((P + 20)) --bug order
  variant hook-order-sketch "$RUN_S" "suspected_swap|order_swap" no --sketch -- \
    "$PY" "$J/torch_hook_order.py" --port $((P + 21)) --bug order
  # Clean jobs under --sketch: the data checks (wrong sums, races, swaps told by the data) must
  # find nothing.
  variant grad-clean-sketch "$RUN_S" - no --sketch -- "$PY" "$G" --port $((P + 22)) --bug none
  variant ddp-clean-sketch "$RUN_S" - no --sketch -- \
    "${TORCHRUN[@]}" --master-port $((P + 23)) "$J/torch_ddp.py"
  variant pptp-clean-sketch "$RUN_S" - no --sketch -- \
    "${TORCHRUN4[@]}" --master-port $((P + 24)) "$J/torch_pipeline_tp.py" --bug none
  variant accum-clean-sketch "$RUN_S" - no --sketch -- \
    "${TORCHRUN4[@]}" --master-port $((P + 25)) "$J/torch_ddp_accum.py" --bug none
  variant hook-clean-sketch "$RUN_S" - no --sketch -- \
    "$PY" "$J/torch_hook_order.py" --port $((P + 26)) --bug none
  # Hybrid sharding over a 2-D mesh, and DDP around torch.compile'd blocks (4 ranks, clean).
  variant hsdp-clean "$RUN_S" - no -- \
    "${TORCHRUN4[@]}" --master-port $((P + 27)) "$J/torch_hsdp_compile.py" --mode hsdp
  variant hsdp-clean-sketch "$RUN_S" - no --sketch -- \
    "${TORCHRUN4[@]}" --master-port $((P + 28)) "$J/torch_hsdp_compile.py" --mode hsdp
  # Setup bugs: the initial broadcast from src=rank; process groups made by walking a set.
  variant setup-clean "$RUN_S" - no -- \
    "${TORCHRUN[@]}" --master-port $((P + 48)) "$J/torch_setup_bugs.py" --bug none
  variant setup-bcast-src "$HANG_S" root_mismatch no -- \
    "${TORCHRUN[@]}" --master-port $((P + 49)) "$J/torch_setup_bugs.py" --bug bcast-src
  variant setup-group-order "$HANG_S" "count_mismatch|cross_comm_order|op_mismatch" no -- \
    "${TORCHRUN[@]}" --master-port $((P + 50)) "$J/torch_setup_bugs.py" --bug group-order
  variant setup4-bcast-src "$HANG_S" root_mismatch no -- \
    "${TORCHRUN4[@]}" --master-port $((P + 52)) "$J/torch_setup_bugs.py" --bug bcast-src
  variant setup4-group-order "$HANG_S" "count_mismatch|cross_comm_order|op_mismatch" no -- \
    "${TORCHRUN4[@]}" --master-port $((P + 53)) "$J/torch_setup_bugs.py" --bug group-order
  variant tp-clean "$RUN_S" - no -- \
    "${TORCHRUN4[@]}" --master-port $((P + 44)) "$J/torch_hsdp_compile.py" --mode tp
  variant compile-clean "$RUN_S" - no -- \
    "${TORCHRUN4[@]}" --master-port $((P + 29)) "$J/torch_hsdp_compile.py" --mode compile
  variant compile-clean-sketch "$RUN_S" - no --sketch -- \
    "${TORCHRUN4[@]}" --master-port $((P + 30)) "$J/torch_hsdp_compile.py" --mode compile
  # Expert parallelism: tokens to their expert's rank with all_to_all_single of uneven splits.
  variant moe-clean "$RUN_S" - no -- \
    "${TORCHRUN4[@]}" --master-port $((P + 31)) "$J/torch_moe.py" --bug none
  variant moe-clean-sketch "$RUN_S" - no --sketch -- \
    "${TORCHRUN4[@]}" --master-port $((P + 32)) "$J/torch_moe.py" --bug none
  variant moe-splits "$HANG_S" "p2p_mismatch|count_mismatch" no -- \
    "${TORCHRUN4[@]}" --master-port $((P + 33)) "$J/torch_moe.py" --bug splits
  # DDP's bf16 compression hook chosen by a per-node environment variable.
  variant compress-clean "$RUN_S" - no -- \
    "${TORCHRUN[@]}" --master-port $((P + 34)) "$J/torch_ddp_compress.py" --bug none
  variant compress-both "$RUN_S" - no -- \
    "${TORCHRUN[@]}" --master-port $((P + 35)) "$J/torch_ddp_compress.py" --bug both
  variant compress-mixed "$HANG_S" dtype_mismatch no -- \
    "${TORCHRUN[@]}" --master-port $((P + 36)) "$J/torch_ddp_compress.py" --bug mixed
  # The step captured in a CUDA graph and replayed.
  variant graph-clean "$RUN_S" - no -- \
    "$PY" "$J/torch_cuda_graph.py" --port $((P + 37)) --bug none
  variant graph-extra "$HANG_S" graph_capture_mismatch no -- \
    "$PY" "$J/torch_cuda_graph.py" --port $((P + 38)) --bug extra-replay
  variant graph-keep "$HANG_S" lifecycle_error no -- \
    "$PY" "$J/torch_cuda_graph.py" --port $((P + 42)) --bug keep-graph
  # torchrun's fault tolerance: a failed first attempt, restarted from a checkpoint (both
  # attempts' processes record into one trace directory).
  variant elastic-clean "$RUN_S" - no -- \
    "${TORCHRUN[@]}" --max-restarts 1 --master-port $((P + 55)) "$J/torch_elastic.py" \
    --ckpt "$(mktemp -d)" --bug none
  variant elastic-crash "$RUN_S" "missing_call|nccl_error" no -- \
    "${TORCHRUN[@]}" --max-restarts 1 --master-port $((P + 56)) "$J/torch_elastic.py" \
    --ckpt "$(mktemp -d)" --bug crash
  # A hand-written trainer: per-batch metric all_reduces in evaluate(), a barrier at the save.
  variant trainer-clean "$RUN_S" - no -- \
    "${TORCHRUN[@]}" --master-port $((P + 62)) "$J/torch_trainer.py" --bug none
  variant trainer-uneven-eval "$HANG_S" "count_mismatch|op_mismatch|missing_call" no -- \
    "${TORCHRUN[@]}" --master-port $((P + 63)) "$J/torch_trainer.py" --bug uneven-eval
  variant trainer-rank0-barrier "$HANG_S" "count_mismatch|op_mismatch|missing_call" no -- \
    "${TORCHRUN[@]}" --master-port $((P + 64)) "$J/torch_trainer.py" --bug rank0-barrier
  # Rank 1 killed outright (SIGKILL: the out-of-memory killer) before a gradient all_reduce.
  variant side-killed "$HANG_S" missing_call no -- \
    "$PY" "$J/torch_side_stream.py" --port $((P + 65)) --bug killed
  # DDP's PowerSGD hook: whole buckets, then low-rank factors from an iteration set per node.
  variant compress-powersgd "$RUN_S" - no -- \
    "${TORCHRUN[@]}" --master-port $((P + 66)) "$J/torch_ddp_compress.py" --bug powersgd
  variant compress-powersgd-mixed "$HANG_S" "count_mismatch|op_mismatch|missing_call" no -- \
    "${TORCHRUN[@]}" --master-port $((P + 67)) "$J/torch_ddp_compress.py" --bug powersgd-mixed
  # A throughput monitor thread all-reducing beside the training loop: on its own group
  # (clean), or on the loop's default group, where the two threads' calls interleave by timing.
  variant threads-clean "$RUN_S" - no -- \
    "$PY" "$J/torch_threads.py" --port $((P + 69)) --bug none
  variant threads-shared-pg "$HANG_S" "count_mismatch|order_swap|suspected_swap|missing_call" no -- \
    "$PY" "$J/torch_threads.py" --port $((P + 70)) --bug shared-pg
  # The same with reports every 4 ms and no pause between steps: calls of equal size swap too.
  variant threads-shared-pg-fast "$HANG_S" "count_mismatch|order_swap|suspected_swap|missing_call" no -- \
    "$PY" "$J/torch_threads.py" --port $((P + 74)) --bug shared-pg --report-ms 4 --step-ms 0 \
    --steps 300
  variant fsdp2-skip-nonfinite "$HANG_S" "op_mismatch|missing_call|count_mismatch" no -- \
    "${TORCHRUN[@]}" --master-port $((P + 75)) "$J/torch_fsdp2.py" --bug skip-nonfinite
  # Rank 1's metrics all_reduce forgets group= from step 3 on: it goes to the world group.
  variant two-groups-wrong-group "$HANG_S" "missing_call|cross_comm_order" no -- \
    "$PY" "$J/torch_two_groups.py" --port $((P + 83)) --bug wrong-group
  # Rank 1 all-reduces its accuracy before its loss through one helper, from the first step.
  # Only a note can say it: the buffers are fresh scalars, the callers a path rank 0 never took
  # (reported DIFFERENT: the job counts its wrong metrics).
  variant two-groups-metrics-order "$RUN_S" "-" no -- \
    "$PY" "$J/torch_two_groups.py" --port $((P + 84)) --bug metrics-order --bug-step 0
  # Scalars: the sketches have nothing to correlate either (the note says so; DIFFERENT).
  variant two-groups-metrics-order-sketch "$RUN_S" "suspected_swap|order_swap|wrong_sum" no --sketch -- \
    "$PY" "$J/torch_two_groups.py" --port $((P + 85)) --bug metrics-order --bug-step 0
  # FSDP2 with one batch fewer on rank 1: rank 0's last step has no partner.
  variant fsdp2-uneven "$HANG_S" "missing_call|count_mismatch|op_mismatch" no -- \
    "${TORCHRUN[@]}" --master-port $((P + 86)) "$J/torch_fsdp2.py" --bug uneven
  # Four ranks, rank 0 alone keeping GPU bookkeeping (its allocator hands out other addresses),
  # async all_reduces waited in reverse, dynamic shapes, a rotating broadcast root, pair groups,
  # all_gather_object: all legal. Then rank 2 swaps two same-size gradients at two steps.
  variant busy-clean "$RUN_S" - no -- "$PY" "$J/torch_busy_rank0.py" --port $((P + 87))
  variant busy-clean-sketch "$RUN_S" - no --sketch -- "$PY" "$J/torch_busy_rank0.py" \
    --port $((P + 88))
  variant busy-swap-same "$RUN_S" "suspected_swap|order_swap" yes -- \
    "$PY" "$J/torch_busy_rank0.py" --port $((P + 89)) --bug swap-same
  variant busy-swap-same-sketch "$RUN_S" "suspected_swap|order_swap" no --sketch -- \
    "$PY" "$J/torch_busy_rank0.py" --port $((P + 90)) --bug swap-same
  # The same with two ranks: rank 0 busy, rank 1 swapping. No third rank allocates like the
  # swapping one, so its buffers cannot tell (a note says so; DIFFERENT: #wrong counts it).
  variant busy2-swap-same "$RUN_S" "-" no -- \
    "$PY" "$J/torch_busy_rank0.py" --port $((P + 91)) --world 2 --bug swap-same --bug-rank 1
  variant busy2-clean "$RUN_S" - no -- "$PY" "$J/torch_busy_rank0.py" --port $((P + 92)) --world 2
  # Steps of varying length agreed across the ranks (micro-batch counts and exchange rounds
  # all-reduced with MAX, early stopping by an all-reduced flag): clean, also with 4 ranks and
  # under --sketch. Then rank 1 running its own number of exchange rounds, and every rank
  # deciding early stopping alone.
  D=$J/torch_dynamic_steps.py
  variant dyn-clean "$RUN_S" - no -- "$PY" "$D" --port $((P + 93))
  variant dyn4-clean "$RUN_S" - no -- "$PY" "$D" --port $((P + 94)) --world 4
  variant dyn-clean-sketch "$RUN_S" - no --sketch -- "$PY" "$D" --port $((P + 95))
  variant dyn-local-rounds "$HANG_S" "op_mismatch|missing_call|count_mismatch" no -- \
    "$PY" "$D" --port $((P + 96)) --bug local-rounds
  variant dyn-local-stop "$HANG_S" "missing_call" no -- \
    "$PY" "$D" --port $((P + 97)) --bug local-stop
  # Rooted collectives (scatter and gather: grouped Send/Recv; reduce): clean with 2 and 4
  # ranks; then rank 1 naming itself the gather's destination.
  S=$J/torch_gather_scatter.py
  variant gs-clean "$RUN_S" - no -- "$PY" "$S" --port $((P + 98))
  variant gs4-clean "$RUN_S" - no -- "$PY" "$S" --port $((P + 99)) --world 4
  variant gs-gather-dst "$HANG_S" "p2p_mismatch|missing_call|root_mismatch" no -- \
    "$PY" "$S" --port $((P + 100)) --bug gather-dst
  # Settings broadcast with broadcast_object_list from lists of different lengths.
  variant gs-object-len "$HANG_S" "count_mismatch|missing_call" no -- \
    "$PY" "$S" --port $((P + 101)) --bug object-len
  # Long runs under --sketch: the data checks' evidence adds up over the steps; a clean job
  # must stay clean however many steps it runs (the traces are not kept).
  variant grad-clean-sketch-long "$RUN_S" - no --sketch -- "$PY" "$G" --port $((P + 102)) \
    --bug none --steps 150
  variant busy-clean-sketch-long "$RUN_S" - no --sketch -- "$PY" "$J/torch_busy_rank0.py" \
    --port $((P + 103)) --steps 100
  variant dyn-clean-sketch-long "$RUN_S" - no --sketch -- "$PY" "$D" --port $((P + 104)) \
    --steps 200 --stop-after 1000
  # Clean jobs run five to ten times longer than their defaults: evidence that adds up over the
  # steps (buffer votes, data correlations, loop periods) must not turn into findings (traces
  # not kept).
  variant moe-clean-long "$RUN_S" - no -- \
    "${TORCHRUN4[@]}" --master-port $((P + 105)) "$J/torch_moe.py" --bug none --steps 80
  variant accum-clean-long "$RUN_S" - no -- \
    "${TORCHRUN4[@]}" --master-port $((P + 106)) "$J/torch_ddp_accum.py" --bug none --steps 60
  variant pptp-clean-long "$RUN_S" - no -- \
    "${TORCHRUN4[@]}" --master-port $((P + 107)) "$J/torch_pipeline_tp.py" --bug none --steps 60
  variant ddp-clean-long "$RUN_S" - no -- \
    "${TORCHRUN[@]}" --master-port $((P + 108)) "$J/torch_ddp.py" --steps 200
  variant fsdp2-clean-long "$RUN_S" - no -- \
    "${TORCHRUN[@]}" --master-port $((P + 109)) "$J/torch_fsdp2.py" --steps 100
  variant busy-clean-long "$RUN_S" - no -- "$PY" "$J/torch_busy_rank0.py" \
    --port $((P + 110)) --steps 150
  variant gs4-clean-long "$RUN_S" - no -- "$PY" "$S" --port $((P + 111)) --world 4 --steps 100
  variant moe-clean-sketch-long "$RUN_S" - no --sketch -- \
    "${TORCHRUN4[@]}" --master-port $((P + 112)) "$J/torch_moe.py" --bug none --steps 60
  variant hook-clean-sketch-long "$RUN_S" - no --sketch -- \
    "$PY" "$J/torch_hook_order.py" --port $((P + 113)) --bug none --steps 100
  variant setup-clean-long "$RUN_S" - no -- \
    "${TORCHRUN[@]}" --master-port $((P + 114)) "$J/torch_setup_bugs.py" --bug none --steps 150
  variant compress-clean-long "$RUN_S" - no -- \
    "${TORCHRUN[@]}" --master-port $((P + 115)) "$J/torch_ddp_compress.py" --bug none --steps 120
  variant trainer-clean-long "$RUN_S" - no -- \
    "${TORCHRUN[@]}" --master-port $((P + 116)) "$J/torch_trainer.py" --bug none --steps 80
  variant threads-clean-long "$RUN_S" - no -- \
    "$PY" "$J/torch_threads.py" --port $((P + 117)) --bug none --steps 200
  variant ring-clean-long "$RUN_S" - no -- \
    "$PY" "$J/torch_ring.py" --port $((P + 118)) --bug none --steps 40
  # DDP with ZeroRedundancyOptimizer: blocks registered from a set in another order on rank 1
  # (same shapes: paired by position, silently), or one node with a bucket view (counts differ).
  variant zero-clean "$RUN_S" - no -- \
    "${TORCHRUN[@]}" --master-port $((P + 119)) "$J/torch_zero.py" --bug none
  variant zero-clean-sketch "$RUN_S" - no --sketch -- \
    "${TORCHRUN[@]}" --master-port $((P + 120)) "$J/torch_zero.py" --bug none
  # set-order is beyond what NCCL sees (identical calls on the same buffers, each rank
  # consistent with itself): reported DIFFERENT, kept to show it stays free of false findings.
  variant zero-set-order "$RUN_S" "suspected_swap|order_swap" no -- \
    "${TORCHRUN[@]}" --master-port $((P + 121)) "$J/torch_zero.py" --bug set-order
  variant zero-set-order-sketch "$RUN_S" "suspected_swap|order_swap" no --sketch -- \
    "${TORCHRUN[@]}" --master-port $((P + 122)) "$J/torch_zero.py" --bug set-order
  variant zero-bucket-view-mixed "$HANG_S" "count_mismatch|missing_call|op_mismatch" no -- \
    "${TORCHRUN[@]}" --master-port $((P + 123)) "$J/torch_zero.py" --bug bucket-view-mixed
  variant zero-clean-long "$RUN_S" - no -- \
    "${TORCHRUN[@]}" --master-port $((P + 124)) "$J/torch_zero.py" --bug none --steps 100
  # Sequence parallelism by hand: a sequence length of its own every step; one node pads to 16.
  variant sp-clean "$RUN_S" - no -- \
    "${TORCHRUN[@]}" --master-port $((P + 125)) "$J/torch_seq_parallel.py" --bug none
  variant sp-clean-sketch "$RUN_S" - no --sketch -- \
    "${TORCHRUN[@]}" --master-port $((P + 126)) "$J/torch_seq_parallel.py" --bug none
  variant sp-pad-mixed "$HANG_S" "count_mismatch|missing_call" no -- \
    "${TORCHRUN[@]}" --master-port $((P + 127)) "$J/torch_seq_parallel.py" --bug pad-mixed
  variant sp-clean-long "$RUN_S" - no -- \
    "${TORCHRUN[@]}" --master-port $((P + 128)) "$J/torch_seq_parallel.py" --bug none --steps 150
  # The same, two replicas of a pair: the pair whose last rank pads to 16 stops the other pair.
  variant sp4-clean "$RUN_S" - no -- \
    "${TORCHRUN4[@]}" --master-port $((P + 129)) "$J/torch_seq_parallel.py" --tp 2 --bug none
  variant sp4-pad-mixed "$HANG_S" "count_mismatch|missing_call" no -- \
    "${TORCHRUN4[@]}" --master-port $((P + 130)) "$J/torch_seq_parallel.py" --tp 2 --bug pad-mixed
  variant zero4-clean "$RUN_S" - no -- \
    "${TORCHRUN4[@]}" --master-port $((P + 131)) "$J/torch_zero.py" --bug none
  # FSDP2 with activation checkpointing (FSDP's hooks again around the recomputed forward) and
  # the gradient norm clipped (an all-reduce of DTensor norms); then clipped on rank 0 alone.
  variant fsdp2-ckpt-clip "$RUN_S" - no -- \
    "${TORCHRUN[@]}" --master-port $((P + 132)) "$J/torch_fsdp2.py" --checkpoint-act --clip 0.5
  variant fsdp2-ckpt-clip-sketch "$RUN_S" - no --sketch -- \
    "${TORCHRUN[@]}" --master-port $((P + 133)) "$J/torch_fsdp2.py" --checkpoint-act --clip 0.5
  variant fsdp2-norm-rank0 "$HANG_S" "op_mismatch|missing_call|count_mismatch" no -- \
    "${TORCHRUN[@]}" --master-port $((P + 134)) "$J/torch_fsdp2.py" --clip 0.5 --bug norm-rank0
  # Long clean runs of the jobs above, under --sketch (sketches of many steps once gave false
  # data swaps).
  variant zero-clean-sketch-long "$RUN_S" - no --sketch -- \
    "${TORCHRUN[@]}" --master-port $((P + 137)) "$J/torch_zero.py" --bug none --steps 100
  variant sp-clean-sketch-long "$RUN_S" - no --sketch -- \
    "${TORCHRUN[@]}" --master-port $((P + 138)) "$J/torch_seq_parallel.py" --bug none --steps 100
  variant fsdp2-ckpt-clip-sketch-long "$RUN_S" - no --sketch -- \
    "${TORCHRUN[@]}" --master-port $((P + 139)) "$J/torch_fsdp2.py" --checkpoint-act --clip 0.5 \
    --steps 100
  variant sp4-clean-long "$RUN_S" - no -- \
    "${TORCHRUN4[@]}" --master-port $((P + 140)) "$J/torch_seq_parallel.py" --tp 2 --steps 100
  # Long runs of the swap bugs, swapped at steps across the run: still found, their repeats
  # grouped.
  variant grad-swap-same-long "$RUN_S" suspected_swap no -- \
    "$PY" "$G" --port $((P + 147)) --bug swap-same --steps 100 --swap-steps 5,12,20,47,80
  variant pptp-swap-same-long "$RUN_S" "suspected_swap|order_swap" no -- \
    "${TORCHRUN4[@]}" --master-port $((P + 148)) "$J/torch_pipeline_tp.py" --bug swap-same \
    --steps 60 --swap-steps 4,9,30,50
  variant busy-swap-same-long "$RUN_S" "suspected_swap|order_swap" no -- \
    "$PY" "$J/torch_busy_rank0.py" --port $((P + 149)) --bug swap-same --steps 100 \
    --bug-steps 6,13,40,77
  variant hook-order-sketch-long "$RUN_S" "suspected_swap|order_swap" no --sketch -- \
    "$PY" "$J/torch_hook_order.py" --port $((P + 150)) --bug order --steps 100
  # PyTorch's pipelining library: Schedule1F1B over 2 and 4 stages; the last stage's node
  # splitting batches into half as many micro-batches.
  variant pipe-clean "$RUN_S" - no -- \
    "${TORCHRUN[@]}" --master-port $((P + 143)) "$J/torch_pipelining.py" --bug none
  variant pipe-clean-sketch "$RUN_S" - no --sketch -- \
    "${TORCHRUN[@]}" --master-port $((P + 144)) "$J/torch_pipelining.py" --bug none
  variant pipe4-clean "$RUN_S" - no -- \
    "${TORCHRUN4[@]}" --master-port $((P + 145)) "$J/torch_pipelining.py" --bug none
  variant pipe-micro-mixed "$HANG_S" "p2p_mismatch|missing_call|count_mismatch" no -- \
    "${TORCHRUN[@]}" --master-port $((P + 146)) "$J/torch_pipelining.py" --bug micro-mixed
  # Gradient accumulation set per node: rank 1 accumulates 4 micro-batches, the others 2.
  variant accum-mixed "$HANG_S" "op_mismatch|count_mismatch|missing_call" no -- \
    "${TORCHRUN4[@]}" --master-port $((P + 142)) "$J/torch_ddp_accum.py" --bug accum-mixed
  # FSDP2 evaluated on rank 0 only: its forward's all-gathers meet rank 1's next step.
  variant fsdp2-eval-rank0 "$HANG_S" "op_mismatch|missing_call|count_mismatch" no -- \
    "${TORCHRUN[@]}" --master-port $((P + 82)) "$J/torch_fsdp2.py" --bug eval-rank0
  # Checkpoints with torch.distributed.checkpoint: every rank saves (clean), or only rank 0.
  variant trainer-dcp "$RUN_S" - no -- \
    "${TORCHRUN[@]}" --master-port $((P + 72)) "$J/torch_trainer.py" --bug none --ckpt dcp
  variant trainer-dcp-rank0 "$HANG_S" "missing_call|count_mismatch|op_mismatch" no -- \
    "${TORCHRUN[@]}" --master-port $((P + 73)) "$J/torch_trainer.py" --bug dcp-rank0
  # Rank 0 alone validating through the DDP-wrapped model in eval mode: no buffer broadcast.
  variant accum-eval-rank0 "$RUN_S" - no -- \
    "${TORCHRUN4[@]}" --master-port $((P + 78)) "$J/torch_ddp_accum.py" --bug eval-rank0
  # The same hang ended by PyTorch's watchdog tearing the communicators down (abort, then the
  # process ends), and the swap on nonblocking communicators.
  variant side-branch-teardown 60 "missing_call" no -- \
    env TORCH_NCCL_ASYNC_ERROR_HANDLING=1 "$PY" "$J/torch_side_stream.py" --port $((P + 79)) \
    --bug branch --pg-timeout 10
  variant grad-swap-same-nonblocking "$RUN_S" suspected_swap no -- \
    env TORCH_NCCL_USE_COMM_NONBLOCKING=1 "$PY" "$J/torch_grad_loop.py" --port $((P + 80)) \
    --bug swap-same --swap-steps 5,12,20
  variant ddp-clean-nonblocking "$RUN_S" - no -- \
    env TORCH_NCCL_USE_COMM_NONBLOCKING=1 "${TORCHRUN[@]}" --master-port $((P + 81)) \
    "$J/torch_ddp.py"
  # Training batches from a DataLoader whose worker processes are forked from the ranks.
  variant trainer-loader "$RUN_S" - no -- \
    "${TORCHRUN[@]}" --master-port $((P + 76)) "$J/torch_trainer.py" --bug none --loader-workers 2
  variant trainer-loader-sketch "$RUN_S" - no --sketch -- \
    "${TORCHRUN[@]}" --master-port $((P + 77)) "$J/torch_trainer.py" --bug none --loader-workers 2
  # FSDP2 with reshard_after_forward set differently on one node.
  variant fsdp2-reshard "$HANG_S" "op_mismatch|missing_call|count_mismatch" no -- \
    "${TORCHRUN[@]}" --master-port $((P + 71)) "$J/torch_fsdp2.py" --bug reshard
  # Ring attention's key/value blocks passed round the ranks.
  variant ring-clean "$RUN_S" - no -- \
    "$PY" "$J/torch_ring.py" --port $((P + 57)) --bug none
  variant ring-send-first "$HANG_S" p2p_mismatch no -- \
    "$PY" "$J/torch_ring.py" --port $((P + 58)) --bug send-first
  variant ring4-send-first "$HANG_S" p2p_mismatch no -- \
    "$PY" "$J/torch_ring.py" --port $((P + 59)) --bug send-first --world 4
else
  say "SKIP the PyTorch jobs: $PY cannot import torch"
fi

# Two JAX processes started in the background by one shell (its exit status: the first
# failure), each on GPU (process id mod the GPU count).
JAX_LAUNCH='py=$1 job=$2 ngpu=$3; shift 3; '\
'CUDA_VISIBLE_DEVICES=$((0 % ngpu)) "$py" "$job" --process-id 0 "$@" & p0=$!; '\
'CUDA_VISIBLE_DEVICES=$((1 % ngpu)) "$py" "$job" --process-id 1 "$@" & p1=$!; '\
'wait $p0; r0=$?; wait $p1; r1=$?; [ $r0 -ne 0 ] && exit $r0; exit $r1'
if [ "$HAVE_JAX" = 1 ]; then
  variant jax-clean "$RUN_S" - no -- \
    bash -c "$JAX_LAUNCH" jax-launch "$PY" "$J/jax_psum.py" "$NGPU" --port $((P + 8)) --bug none
  variant jax-branch "$JAX_BRANCH_S" "missing_call|count_mismatch|op_mismatch|dtype_mismatch" no -- \
    bash -c "$JAX_LAUNCH" jax-launch "$PY" "$J/jax_psum.py" "$NGPU" --port $((P + 9)) --bug branch
  # Gradients psum'd one at a time, same-shape ones in each process's set order.
  variant jax-set-clean "$RUN_S" - no -- \
    bash -c "$JAX_LAUNCH" jax-launch "$PY" "$J/jax_set_order.py" "$NGPU" --port $((P + 39)) --bug none
  # Without --sketch nothing tells these calls apart (reported DIFFERENT, as hook-order).
  variant jax-set-order "$RUN_S" "suspected_swap|order_swap" yes -- \
    bash -c "$JAX_LAUNCH" jax-launch "$PY" "$J/jax_set_order.py" "$NGPU" --port $((P + 40)) \
    --bug set-order
  variant jax-set-order-sketch "$RUN_S" "suspected_swap|order_swap" yes --sketch -- \
    bash -c "$JAX_LAUNCH" jax-launch "$PY" "$J/jax_set_order.py" "$NGPU" --port $((P + 41)) \
    --bug set-order
  # The current style: one jit'd step over a global mesh, a shard_map body with pmean.
  variant jaxsm-clean "$RUN_S" - no -- \
    bash -c "$JAX_LAUNCH" jax-launch "$PY" "$J/jax_shard_map.py" "$NGPU" --port $((P + 60))
  # Blocks passed round the ring with ppermute (XLA's grouped Sends and Recvs) and all_to_all.
  variant jax-ring "$RUN_S" - no -- \
    bash -c "$JAX_LAUNCH" jax-launch "$PY" "$J/jax_ring.py" "$NGPU" --port $((P + 135))
  variant jax-ring-sketch "$RUN_S" - no --sketch -- \
    bash -c "$JAX_LAUNCH" jax-launch "$PY" "$J/jax_ring.py" "$NGPU" --port $((P + 136))
  variant jax-ring-sketch-long "$RUN_S" - no --sketch -- \
    bash -c "$JAX_LAUNCH" jax-launch "$PY" "$J/jax_ring.py" "$NGPU" --port $((P + 141)) --steps 100
else
  say "SKIP the JAX jobs: $PY cannot import jax"
fi

# The C++ job (tests/gpu/realjobs/cpp_sgd.cu, built by build_extras.sh): two processes, each
# its own NCCL host id on the one GPU. The dynamic build is recorded through the preload, the
# static one (NCCL inside the executable) through NCCL's profiler plugin; both must say the same.
X=$ROOT/build-extras
CPP_LAUNCH='exe=$1 idf=$2; shift 2; rm -f "$idf"; '\
'NCCL_HOSTID=host-0 NCCL_SOCKET_IFNAME=lo "$exe" --rank 0 --world 2 --id-file "$idf" "$@" & p0=$!; '\
'NCCL_HOSTID=host-1 NCCL_SOCKET_IFNAME=lo "$exe" --rank 1 --world 2 --id-file "$idf" "$@" & p1=$!; '\
'wait $p0; r0=$?; wait $p1; r1=$?; [ $r0 -ne 0 ] && exit $r0; exit $r1'
for link in dynamic static; do
  exe=$X/cpp_sgd_$link
  if [ ! -x "$exe" ]; then
    say "SKIP the C++ job ($link): no $exe (tests/gpu/realjobs/build_extras.sh)"
    continue
  fi
  variant "cpp-$link-clean" "$RUN_S" - no -- \
    bash -c "$CPP_LAUNCH" cpp-launch "$exe" "$W/id-cpp-$link-clean" --bug none
  variant "cpp-$link-swap-same" "$RUN_S" suspected_swap yes -- \
    bash -c "$CPP_LAUNCH" cpp-launch "$exe" "$W/id-cpp-$link-swap-same" --bug swap-same
  variant "cpp-$link-swap-diff" "$HANG_S" order_swap no -- \
    bash -c "$CPP_LAUNCH" cpp-launch "$exe" "$W/id-cpp-$link-swap-diff" --bug swap-diff
done

# nccl-tests (build_extras.sh), two MPI ranks on the one GPU (NCCL_TESTS_DEVICE=0, a host id per
# rank), with their own check of every result (-c 1): clean under record and record --sketch.
NT=$X/nccl-tests/build
if [ -x "$NT/all_reduce_perf" ] && command -v mpirun >/dev/null; then
  MPIRUN=(mpirun --allow-run-as-root --oversubscribe -np 2 -x NCCL_SOCKET_IFNAME=lo
    -x NCCL_TESTS_DEVICE=0 -x NCCL_NVLS_ENABLE=0)
  HOSTID='export NCCL_HOSTID=host-$OMPI_COMM_WORLD_RANK; exec "$0" "$@"'
  for t in all_reduce all_gather reduce_scatter broadcast sendrecv; do
    for mode in plain sketch; do
      flags=()
      [ "$mode" = sketch ] && flags=(--sketch)
      variant "nccltests-$t-$mode" "$RUN_S" - no ${flags[@]+"${flags[@]}"} -- \
        "${MPIRUN[@]}" bash -c "$HOSTID" "$NT/${t}_perf" -b 8 -e 4M -f 8 -g 1 -c 1 -n 20 -w 5
    done
  done
else
  say "SKIP nccl-tests: no $NT/all_reduce_perf or no mpirun (tests/gpu/realjobs/build_extras.sh)"
fi

# The MPI C++ job on a 2 x 2 grid (tests/gpu/realjobs/cpp_grid.cu, build_extras.sh grid): four
# MPI ranks on the one GPU, a host id each; its watchdog aborts a step that hangs for 15 s.
GRID=$X/cpp_grid
if [ -x "$GRID" ] && command -v mpirun >/dev/null; then
  MPI4=(mpirun --allow-run-as-root --oversubscribe -np 4 -x NCCL_SOCKET_IFNAME=lo
    -x NCCL_NVLS_ENABLE=0 bash -c 'export NCCL_HOSTID=host-$OMPI_COMM_WORLD_RANK; exec "$0" "$@"'
    "$GRID" --timeout 15)
  variant grid-clean "$RUN_S" - no -- "${MPI4[@]}"
  variant grid-clean-sketch "$RUN_S" - no --sketch -- "${MPI4[@]}"
  variant grid-clean-long "$RUN_S" - no -- "${MPI4[@]}" --steps 80
  variant grid-swap-persist "$RUN_S" suspected_swap yes -- "${MPI4[@]}" --bug swap-persist
  variant grid-race "$RUN_S" "buffer_race|wrong_sum" no --sketch -- "${MPI4[@]}" --bug race
  variant grid-cross-order "$HANG_S" cross_comm_order no -- "${MPI4[@]}" --bug cross-order
  variant grid-skip-overflow "$HANG_S" missing_call no -- "${MPI4[@]}" --bug skip-overflow
  variant grid-halo-size "$HANG_S" p2p_mismatch no -- "${MPI4[@]}" --bug halo-size
else
  say "SKIP the MPI C++ grid job: no $GRID or no mpirun (tests/gpu/realjobs/build_extras.sh grid)"
fi

say "== $ran variant(s), $different not as expected; details: NAME.check.txt, .dump.txt, .record.txt"
cp "$W/summary.log" "$OUT/realjobs-summary.log"
shopt -s nullglob
(
  cd "$W" || exit 1
  traces=(t-*)
  logs=(*.txt summary.log)
  rm -f "$OUT/realjobs-traces.tar.gz" "$OUT/realjobs-logs.tar.gz"
  [ ${#traces[@]} -gt 0 ] && tar -czf "$OUT/realjobs-traces.tar.gz" "${traces[@]}"
  tar -czf "$OUT/realjobs-logs.tar.gz" "${logs[@]}"
)
ls -l "$OUT"/realjobs-*.tar.gz 2>/dev/null
[ "${REALJOBS_KEEP:-0}" = 1 ] || rm -rf "$W"
[ "$different" -eq 0 ]
