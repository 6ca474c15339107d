#!/usr/bin/env bash
# Issue 9's "imported COLL logs from a real run check the same as its trace", on real NCCL: each
# scenario runs once under `ncclrr record` with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL, so the
# trace and NCCL's own log describe the same calls; the log is imported with
# `ncclrr import-nccl-log` and both are checked. The findings (kind@seq, sorted) must be equal.
# Builds nothing: run after tests/gpu/build_on_device.sh (or tests/gpu/run_all.sh colllog).
# Logs: $OUT/colllog. Exit 0 when every scenario agreed.
set -u
source "$(dirname "$0")/gputiming_env.sh"
W=$OUT/colllog
rm -rf "$W"
mkdir -p "$W"
N=$BUILD/bin/ncclrr
EX=$BUILD/bin/ncclrr-example
NGPU=$(nvidia-smi -L 2>/dev/null | wc -l)
RANKS=$(( NGPU >= 2 ? 2 : 1 ))
export NCCLRR_NCCL_LIBRARY=$NCCL_DIR/libnccl.so.2
failures=0
say() { echo "$*" | tee -a "$W/summary.log"; }
say "gpus=$NGPU ranks=$RANKS"
for sc in clean swap-same-size swap-diff-size count-mismatch dtype-mismatch; do
  timeout -k 5 120 env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL \
    NCCL_DEBUG_FILE="$W/$sc.%h.%p.ncclog" \
    "$N" record -o "$W/t-$sc" -- "$EX" "$sc" --backend nccl --ranks "$RANKS" --steps 4 \
    >"$W/$sc.record.log" 2>&1
  "$N" import-nccl-log "$W"/"$sc".*.ncclog -o "$W/i-$sc" >"$W/$sc.import.log" 2>&1
  rc=$?
  traced=$(finding_kinds "$W/t-$sc")
  imported=$(finding_kinds "$W/i-$sc")
  "$N" check "$W/t-$sc" >"$W/$sc.trace.check.txt" 2>&1
  "$N" check "$W/i-$sc" >"$W/$sc.imported.check.txt" 2>&1
  calls_t=$("$N" info "$W/t-$sc" 2>/dev/null | tail -n 1 | grep -o "[0-9]* calls" || true)
  calls_i=$("$N" info "$W/i-$sc" 2>/dev/null | tail -n 1 | grep -o "[0-9]* calls" || true)
  if [ "$rc" -eq 0 ] && [ "$traced" = "$imported" ] && [ "$traced" != UNREADABLE ]; then
    say "PASS $sc: trace and imported log both give '${traced}' ($calls_t / $calls_i)"
  else
    say "FAIL $sc: trace '${traced}' ($calls_t), imported '${imported}' ($calls_i), import rc=$rc"
    failures=$((failures + 1))
  fi
done
say "== $failures failure(s)"
exit $((failures > 0))
