#!/usr/bin/env bash
# Overhead of `ncclrr record --gpu-timing` in a PyTorch job (issue 9 target: <= 1.05x), and which
# source times its calls. PyTorch creates its CUDA contexts before the first NCCL call. Modes,
# alternated over ROUNDS rounds so that machine drift hits them alike: none (the job alone),
# record (no GPU timing), auto (--gpu-timing: CUPTI, launches tied to calls by CUPTI callbacks),
# allapi (NCCLRR_GPU_TIMING_ALL_API=1: CUPTI with every driver and runtime API record), launches
# (CUPTI with launch API records only, NCCLRR_GPU_TIMING_ALL_API=0: a diagnosis; none comes for a
# context made before CUPTI, so it times only what runs after it widens to every API record, two
# 200 ms rounds later), events (NCCLRR_GPU_TIMING_SOURCE=events). Each --gpu-timing trace of
# round 1 but launches' is checked for a GPU time on every call.
# Usage: [NCCLRR_TORCH_BENCH_MODES="none auto events"] tests/gpu/gputiming_torch_bench.sh
#          [ROUNDS=3] [ITERS=2000]
# (the modes to run; default all six). NCCLRR_TORCH_BENCH_CPUS=LIST runs every job under
# `taskset -c LIST` (whole torchrun jobs otherwise ran either fast or slow, whatever the mode).
# Writes $OUT/gputiming_torch_bench.log. Exit 0 when every run exited 0 and every round-1 call of
# the timed modes has a GPU time (the overhead target is reported, not enforced).
set -u -o pipefail
source "$(dirname "$0")/gputiming_env.sh"
ROUNDS=${1:-3}
MODES=${NCCLRR_TORCH_BENCH_MODES:-none record auto allapi launches events}
export LOOP_ITERS=${2:-2000}
LOG=$OUT/gputiming_torch_bench.log
WORK=$(mktemp -d /tmp/ncclrr-torchtiming-XXXXXX)
STATS=$BUILD/tests/interposer/interposer-trace-stats
JOB=$ROOT/tests/gpu/gputiming_torch_loop_job.py
: >"$LOG"
failures=0
say() { echo "$*" | tee -a "$LOG"; }
run_mode() {  # run_mode MODE ROUND: one torchrun of the loop job; appends "MODE ROUND us" lines
  local mode=$1 round=$2 dir=$WORK/$1.r$2 rc
  local torchrun=("$PY" -m torch.distributed.run --nproc-per-node 2 "$JOB")
  [ -n "${NCCLRR_TORCH_BENCH_CPUS:-}" ] && torchrun=(taskset -c "$NCCLRR_TORCH_BENCH_CPUS" "${torchrun[@]}")
  case $mode in
    none) timeout -k 10 240 "${torchrun[@]}" >"$dir.out" 2>&1 ;;
    record) timeout -k 10 240 "$BUILD/bin/ncclrr" record -o "$dir" -- "${torchrun[@]}" >"$dir.out" 2>&1 ;;
    auto) timeout -k 10 240 "$BUILD/bin/ncclrr" record --gpu-timing -o "$dir" -- "${torchrun[@]}" >"$dir.out" 2>&1 ;;
    allapi) NCCLRR_GPU_TIMING_ALL_API=1 timeout -k 10 240 "$BUILD/bin/ncclrr" record --gpu-timing -o "$dir" -- "${torchrun[@]}" >"$dir.out" 2>&1 ;;
    launches) NCCLRR_GPU_TIMING_ALL_API=0 timeout -k 10 240 "$BUILD/bin/ncclrr" record --gpu-timing -o "$dir" -- "${torchrun[@]}" >"$dir.out" 2>&1 ;;
    events) NCCLRR_GPU_TIMING_SOURCE=events timeout -k 10 240 "$BUILD/bin/ncclrr" record --gpu-timing -o "$dir" -- "${torchrun[@]}" >"$dir.out" 2>&1 ;;
  esac
  rc=$?
  [ $rc -eq 0 ] || { say "FAIL $mode round $round: exit $rc"; tail -n 5 "$dir.out" >>"$LOG"; failures=$((failures + 1)); }
  grep -o 'us_per_iter=[0-9.]*' "$dir.out" | sed "s/^/$mode $round /" >>"$WORK/raw"
}
for round in $(seq "$ROUNDS"); do
  for mode in $MODES; do run_mode "$mode" "$round"; done
done
for mode in auto allapi launches events; do
  [[ " $MODES " == *" $mode "* ]] || continue
  dir=$WORK/$mode.r1
  timeout -k 5 60 "$STATS" "$dir" >"$dir.stats" 2>&1
  line=$("$PY" - "$dir.stats" <<'PYEOF'
import json, sys
try:
    files = json.load(open(sys.argv[1]))["files"]
except Exception as e:
    print("no stats (%s)" % e); sys.exit()
calls = sum(f["gpu"]["calls"] for f in files); timed = sum(f["gpu"]["timed"] for f in files)
src = ", ".join("cupti %d events %d" % (f["gpu"]["cupti"], f["gpu"]["events"]) for f in files)
print("%s %d of %d calls timed (%s)" % ("PASS" if calls and timed == calls else "FAIL", timed, calls, src))
PYEOF
)
  # Launch records only cannot time a job whose context came first (CUPTI gives none there):
  # reported, not counted.
  [ "$mode" = launches ] && line="(diagnosis) $line"
  say "$mode round 1: $line"
  [ "$mode" = launches ] || echo "$line" | grep -q '^PASS' || failures=$((failures + 1))
  timeout -k 5 60 "$BUILD/bin/ncclrr" dump "$dir" 2>/dev/null | grep -o 'GPU timing[^"]*' | sort | uniq -c |
    head -n 4 >>"$LOG"
done
"$PY" - "$WORK/raw" <<'PYEOF' | tee -a "$LOG"
import statistics, sys
t = {}
for line in open(sys.argv[1]):
    mode, rnd, kv = line.split()
    t.setdefault(mode, []).append(float(kv.split("=")[1]))
base = statistics.median(t.get("none", [float("nan")]))
print("PyTorch loop of 2-float allreduces, synchronized every iteration; median us per iteration "
      "over both ranks and every round (target for --gpu-timing <= 1.05x none)")
for mode in ("none", "record", "auto", "allapi", "launches", "events"):
    if mode in t:
        m = statistics.median(t[mode])
        print("  %-9s %8.2f us  %.3fx  (runs: %s)" % (mode, m, m / base,
              " ".join("%.1f" % v for v in t[mode])))
PYEOF
rm -rf "$WORK"
say "== $failures failure(s)"
exit $((failures > 0))
