#!/usr/bin/env bash
# `ncclrr check` acceptance on real NCCL (2 GPUs, or 2 processes sharing one): every ncclrr-example scenario is recorded with
# `ncclrr record`, checked, and its first finding compared with the expected kind and seq (clean
# runs: no finding). The issue's must-pass set is swap-diff-size, count-mismatch,
# missing-collective (the example's watchdog ends it; the trace must still tell the story) and
# cross-comm-order. Also exports each trace for ui.perfetto.dev. Builds nothing: run it after
# tests/gpu/build_on_device.sh (or with NCCLRR_BUILD_DIR=build). Logs and traces: $OUT/analysis.
set -u
source "$(dirname "$0")/gputiming_env.sh"
W=$OUT/analysis
mkdir -p "$W"
N=$BUILD/bin/ncclrr
EX=$BUILD/bin/ncclrr-example
NGPU=$(nvidia-smi -L 2>/dev/null | wc -l)
# One GPU: the two ranks run as two processes sharing it, each its own NCCL host.
PROC=()
if [ "$NGPU" -lt 2 ]; then PROC=(--processes); export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}; fi
fail=0
say() { echo "$*" | tee -a "$W/summary.log"; }

# scenario  expected-kind  expected-seq  must-pass   (kind "-" = no finding)
while read -r sc kind seq must; do
  t=$W/t-$sc
  rm -rf "$t"
  start=$(date +%s%N)
  NCCLRR_NCCL_LIBRARY=$NCCL_DIR/libnccl.so.2 NCCLRR_EXAMPLE_WATCHDOG_S=${WATCHDOG_S:-20} \
    timeout 240 "$N" record -o "$t" -- "$EX" "$sc" --backend nccl --ranks 2 --steps 4 "${PROC[@]}" \
    >"$W/$sc.record.log" 2>&1
  rec=$?
  "$N" check "$t" >"$W/$sc.check.txt" 2>&1
  chk=$?
  "$N" check "$t" --json >"$W/$sc.check.json" 2>"$W/$sc.check.err"
  "$N" export "$t" --format perfetto -o "$W/$sc.pftrace" >"$W/$sc.export.log" 2>&1
  got=$("$PY" - "$W/$sc.check.json" <<'PYEOF'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print("unreadable", "-", "-"); sys.exit()
f = r["findings"]
if not f:
    print("-", "-", len(r["notes"]))
else:
    print(f[0]["kind"], f[0]["seq"] if f[0]["seq"] is not None else "null", len(r["notes"]))
PYEOF
)
  set -- $got
  gkind=$1 gseq=$2 notes=$3
  verdict=PASS
  if [ "$gkind" != "$kind" ] || { [ "$kind" != "-" ] && [ "$gseq" != "$seq" ]; }; then
    verdict=FAIL
    [ "$must" = yes ] && fail=1
  fi
  say "$(printf '%-20s record rc=%-3s check rc=%-2s got %-22s seq %-5s notes %-2s expected %-22s seq %-4s %s%s %.1fs' \
    "$sc" "$rec" "$chk" "$gkind" "$gseq" "$notes" "$kind" "$seq" "$verdict" \
    "$([ "$must" = yes ] && echo ' (must pass)')" "$(( ($(date +%s%N) - start) / 1000000 ))e-3")"
done <<'EOF2'
clean               -                      -  yes
swap-same-size      suspected_swap         4  no
swap-diff-size      order_swap             4  yes
count-mismatch      count_mismatch         0  yes
missing-collective  missing_call           5  yes
dtype-mismatch      dtype_mismatch         0  no
root-mismatch       root_mismatch          7  no
p2p-mismatch        p2p_mismatch           1  no
cross-comm-order    cross_comm_order       1  yes
send-race           -                      -  no
EOF2
say "details: $W/<scenario>.check.txt (text), .check.json, .pftrace (open in ui.perfetto.dev)"
exit $fail
