#!/usr/bin/env bash
# Capture, check, import and replay on real NCCL (GPU machine). Builds nothing: run it after
# tests/gpu/build_on_device.sh. Works on one GPU (one-rank communicators) and uses two ranks
# when two GPUs are present. Logs go to $OUT/core/*.log and a summary to stdout.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${NCCLRR_BUILD_DIR:-$ROOT/build-dev}
OUT=${OUT:-$ROOT/gpu-out}
W=$OUT/core
mkdir -p "$W"
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
NCCL_DIR=${NCCLRR_NCCL_DIR:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib}
PY=${PYTHON:-/opt/torch/.venv/bin/python3}
NGPU=$(nvidia-smi -L 2>/dev/null | wc -l)
RANKS=$(( NGPU >= 2 ? 2 : 1 ))
N=$BUILD/bin/ncclrr
EX=$BUILD/bin/ncclrr-example
say() { echo "$*" | tee -a "$W/summary.log"; }
run() {  # run NAME CMD...: output to $W/NAME.log, status in the summary
  local name=$1; shift
  local t0=$(date +%s)
  timeout 240 "$@" >"$W/$name.log" 2>&1
  local rc=$?
  say "$(printf "%-28s rc=%-3s %4ss" "$name" "$rc" "$(( $(date +%s) - t0 ))")"
  return $rc
}
say "gpus=$NGPU ranks=$RANKS nccl_dir=$NCCL_DIR"

# 1. Example program on real NCCL, recorded, checked, dumped, replayed on NCCL and offline.
for sc in clean swap-same-size; do
  run "example-$sc-plain" env NCCLRR_NCCL_LIBRARY=$NCCL_DIR/libnccl.so.2 "$EX" "$sc" --backend nccl --ranks $RANKS --steps 4
  run "example-$sc-record" env NCCLRR_NCCL_LIBRARY=$NCCL_DIR/libnccl.so.2 "$N" record -o "$W/t-$sc" -- "$EX" "$sc" --backend nccl --ranks $RANKS --steps 4
  run "example-$sc-check" "$N" check "$W/t-$sc"
  run "example-$sc-dump" "$N" dump "$W/t-$sc"
  run "example-$sc-replay-nccl" env LD_LIBRARY_PATH=$NCCL_DIR "$N" replay "$W/t-$sc" --backend nccl --order recorded
  run "example-$sc-replay-host" "$N" replay "$W/t-$sc" --backend host --order recorded,canonical
done
run example-group-record env NCCLRR_NCCL_LIBRARY=$NCCL_DIR/libnccl.so.2 "$N" record -o "$W/t-group" -- "$EX" clean --backend nccl --ranks $RANKS --group --steps 4
run example-group-info "$N" info "$W/t-group"

# 2. NCCL's own COLL log of the same program, imported and checked like the trace.
run example-colllog env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL NCCLRR_NCCL_LIBRARY=$NCCL_DIR/libnccl.so.2 "$EX" clean --backend nccl --ranks $RANKS --steps 4
run import-colllog "$N" import-nccl-log "$W/example-colllog.log" -o "$W/t-imported"
run imported-check "$N" check "$W/t-imported"
run imported-info "$N" info "$W/t-imported"

# 3. PyTorch (direct link inside an RTLD_LOCAL extension), with a CUDA graph.
if [ $RANKS -ge 2 ]; then
  run torch-record "$N" record -o "$W/t-torch" -- "$PY" -m torch.distributed.run --nproc-per-node $RANKS "$ROOT/tests/gpu/core_torch_job.py"
else
  run torch-plain "$PY" "$ROOT/tests/gpu/core_torch_job.py"
  run torch-record "$N" record -o "$W/t-torch" -- "$PY" "$ROOT/tests/gpu/core_torch_job.py"
fi
run torch-info "$N" info "$W/t-torch"
run torch-check "$N" check "$W/t-torch"
run torch-dump "$N" dump "$W/t-torch"

# 4. JAX (dlopen + dlsym through XLA's nccl stub).
run jax-plain "$PY" "$ROOT/tests/gpu/core_jax_job.py"
run jax-record "$N" record -o "$W/t-jax" -- "$PY" "$ROOT/tests/gpu/core_jax_job.py"
run jax-info "$N" info "$W/t-jax"

# Summaries of what each trace holds.
for t in "$W"/t-*; do
  [ -d "$t" ] && say "$(basename "$t"): $(tail -n 1 "$W/$(basename "$t" | sed 's/^t-//')-info.log" 2>/dev/null)"
done
grep -h "total:\|#wrong\|findings\|recorded order\|canonical" "$W"/*.log | head -40 >>"$W/summary.log"
exit 0
