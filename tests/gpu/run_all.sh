#!/usr/bin/env bash
# Runs the GPU acceptance scripts named on the command line (default: all that need 2 GPUs) in one
# device call: builds build-dev when it is missing, gives each script what is left of the
# NCCLRR_DEADLINE_S budget (default 560 s, under the device tool's 600 s per call), and packs
# every log into $OUT/logs.tar.gz (the device tool returns only a few files).
# Usage: tests/gpu/run_all.sh [analysis replayer interposer profiler gputiming bench sketch
#   sketchrec sketchbench replbench colllog torchtiming]
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
OUT=${OUT:-$ROOT/gpu-out}
mkdir -p "$OUT"
T0=$(date +%s)
DEADLINE=${NCCLRR_DEADLINE_S:-560}
left() { echo $((DEADLINE - ($(date +%s) - T0))); }
stages=${*:-analysis replayer interposer profiler gputiming}
if [ ! -x build-dev/bin/ncclrr ]; then
  tests/gpu/build_on_device.sh || { echo "build failed"; tar czf "$OUT/logs.tar.gz" -C "$OUT" build.log; exit 1; }
fi
echo "build done at $(( $(date +%s) - T0 )) s"
export NCCLRR_BUILD_DIR=$ROOT/build-dev
for s in $stages; do
  case $s in
    bench) script=tests/gpu/interposer_bench.sh ;;
    sketch) script=tests/gpu/sketch_gpu.sh ;;
    sketchrec) script=tests/gpu/sketch_acceptance.sh ;;
    sketchbench) script=tests/gpu/sketch_bench.sh ;;
    torchtiming) script=tests/gpu/gputiming_torch_bench.sh ;;
    replbench) script=tests/gpu/replayer_acceptance.sh; export NCCLRR_REPLAYER_ONLY_BENCH=1 ;;
    *) script=tests/gpu/${s}_acceptance.sh ;;
  esac
  budget=$(( $(left) - 15 ))
  if [ "$budget" -lt 20 ]; then echo "$s: SKIPPED (no time left)"; continue; fi
  start=$(date +%s)
  timeout -k 5 "$budget" "$script" >"$OUT/$s.stdout" 2>&1
  echo "$s: rc=$? in $(( $(date +%s) - start )) s"
  tail -n 25 "$OUT/$s.stdout"
done
find /tmp -maxdepth 1 -name 'ncclrr-*' -newer "$OUT" -prune -print0 2>/dev/null |
  xargs -0r du -s 2>/dev/null | head -n 5
tar czf "$OUT/logs.tar.gz" -C "$OUT" --exclude=logs.tar.gz . 2>/dev/null
ls -la "$OUT/logs.tar.gz"
