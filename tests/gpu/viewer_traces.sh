#!/usr/bin/env bash
# Viewer acceptance on real NCCL (2 GPUs): records the four traces the viewer's acceptance shows
# (swap-same-size, swap-diff-size, a hang: missing-collective, clean) with `ncclrr record
# --stacks` on the real library, checks each, and -- when this build has the viewer (Qt6 found) --
# renders the screenshots. The GPU build usually has no Qt (build_on_device.sh turns the viewer
# off): then copy $OUT/viewer/t-* back and run the printed ncclrr-viewer commands where the viewer
# is built. Builds nothing: run after tests/gpu/build_on_device.sh (or NCCLRR_BUILD_DIR=build).
set -u
source "$(dirname "$0")/gputiming_env.sh"
W=$OUT/viewer
mkdir -p "$W"
N=$BUILD/bin/ncclrr
EX=$BUILD/bin/ncclrr-example
V=$BUILD/bin/ncclrr-viewer
NGPU=$(nvidia-smi -L 2>/dev/null | wc -l)
if [ "$NGPU" -lt 2 ]; then echo "needs 2 GPUs (found $NGPU)"; exit 2; fi
fail=0
say() { echo "$*" | tee -a "$W/summary.log"; }

# scenario  screenshot name  viewer options
while read -r sc shot opts; do
  t=$W/t-$shot
  rm -rf "$t"
  NCCLRR_NCCL_LIBRARY=$NCCL_DIR/libnccl.so.2 NCCLRR_EXAMPLE_WATCHDOG_S=${WATCHDOG_S:-20} \
    timeout 240 "$N" record --stacks -o "$t" -- "$EX" "$sc" --backend nccl --ranks 2 --steps 4 \
    >"$W/$sc.record.log" 2>&1
  rec=$?
  "$N" check "$t" >"$W/$sc.check.txt" 2>&1
  chk=$?
  cmd="ncclrr-viewer $t --screenshot $W/$shot.png $opts"
  if [ -x "$V" ]; then
    QT_QPA_PLATFORM=offscreen "$V" "$t" --screenshot "$W/$shot.png" $opts >"$W/$sc.viewer.log" 2>&1
    vrc=$?
    [ $vrc -eq 0 ] || fail=1
    say "$(printf '%-20s record rc=%-3s check rc=%-2s screenshot rc=%s: %s' "$sc" "$rec" "$chk" "$vrc" "$W/$shot.png")"
  else
    say "$(printf '%-20s record rc=%-3s check rc=%-2s (no viewer in this build) then run: %s' "$sc" "$rec" "$chk" "$cmd")"
  fi
  [ -n "$(ls "$t" 2>/dev/null)" ] || fail=1
done <<'EOF2'
swap-same-size      swap-same-size            --select-finding 0
swap-diff-size      swap-diff-size-alignment  --select-finding 0 --view alignment
missing-collective  hang                      --select-finding 0
missing-collective  hang-whole
clean               clean
EOF2
exit $fail
