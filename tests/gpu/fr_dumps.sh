#!/usr/bin/env bash
# PyTorch Flight Recorder dumps of real 2-rank jobs (tests/gpu/realjobs/torch_fr_bugs.py), one per
# bug class, for `ncclrr import-fr`; and what PyTorch's own analyzer (fr_trace) says of each.
# All variants run at once (two processes each on the one GPU). A hung variant is ended by its
# watchdog (20 s), which dumps every rank's buffer (TORCH_NCCL_DUMP_ON_TIMEOUT); a variant that
# ends dumps itself (pickle and JSON).
#
# Usage: tests/gpu/fr_dumps.sh        FR_VARIANTS="none swap-same" to run a subset
# Writes $OUT/fr-dumps.tar.gz: fr/VARIANT/{nccl_trace_rank_R, job.log, fr_trace.txt, files.txt}
# and fr/VARIANT-json/nccl_trace_rank_R (apart: fr_trace reads every file under a folder), and
# with FR_EXPORT_FROM=TRACE_DIR also fr/export/ (`ncclrr export --format flight-recorder` of that
# trace, e.g. tests/data/real/grad-swap-diff) and fr/export-fr_trace.txt, fr_trace's verdict on it.
set -u
source "$(dirname "$0")/gputiming_env.sh"
W=$OUT/fr
rm -rf "$W"
mkdir -p "$W"
VARIANTS=${FR_VARIANTS:-"none swap-same swap-diff count dtype op missing root two-groups"}
port=29711
for v in $VARIANTS; do
  d=$W/$v
  mkdir -p "$d"
  (
    TORCH_NCCL_TRACE_BUFFER_SIZE=20000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 \
      TORCH_FR_DUMP_TEMP_FILE=$d/nccl_trace_rank_ FR_DIR=$d FR_JSON_DIR=$d-json \
      timeout -s KILL 150 "$PY" "$ROOT/tests/gpu/realjobs/torch_fr_bugs.py" --port $port --bug "$v" \
      >"$d/job.log" 2>&1
    echo "exit $?" >>"$d/job.log"
  ) &
  port=$((port + 3))
done
wait
"$PY" -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())' \
  >"$W/versions.txt" 2>&1
for v in $VARIANTS; do
  d=$W/$v
  ls -la "$d" >"$d/files.txt"
  "$PY" -m torch.distributed.flight_recorder.fr_trace "$d" --prefix nccl_trace_rank_ \
    >"$d/fr_trace.txt" 2>&1
  echo "exit $?" >>"$d/fr_trace.txt"
  echo "== $v: $(tail -n 1 "$d/job.log"); dumps: $(ls "$d" | grep -c '^nccl_trace_rank_')"
done
if [ -n "${FR_EXPORT_FROM:-}" ]; then
  "$BUILD/bin/ncclrr" export "$FR_EXPORT_FROM" --format flight-recorder -o "$W/export" \
    >"$W/export.log" 2>&1
  "$PY" -m torch.distributed.flight_recorder.fr_trace "$W/export" --prefix nccl_trace_rank_ \
    >"$W/export-fr_trace.txt" 2>&1
  echo "exit $?" >>"$W/export-fr_trace.txt"
  echo "== export of $FR_EXPORT_FROM: $(tail -n 1 "$W/export-fr_trace.txt")"
fi
tar -C "$OUT" -czf "$OUT/fr-dumps.tar.gz" fr && rm -rf "$W"
