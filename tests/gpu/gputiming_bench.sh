#!/usr/bin/env bash
# Overhead of GPU timing on the small-message loop (issue 9 target: <= 1.05x with CUPTI).
#
# ncclrr-gputiming-probe runs an allreduce loop over both GPUs of one process, synchronizing
# after every iteration (the latency-bound case where per-call overhead shows most), with GPU
# timing off, with CUPTI (the default: launches tied to calls by CUPTI callbacks), with CUPTI
# tying launches to calls by their API records (cupti_rec: NCCLRR_GPU_TIMING_ALL_API=0), with CUPTI
# recording every API call (cupti_all: NCCLRR_GPU_TIMING_ALL_API=1) and with CUDA event pairs;
# and, untimed, with the job's own CUPTI recording kernels (cupti_floor: CUPTI's own cost, which
# no way of tying kernels to calls can go below).
# Runs alternate (none, cupti, cupti_rec, cupti_all, events, cupti_floor, none, ...) for ROUNDS rounds so that machine
# drift hits every variant alike (the reference numbers of this machine move between ~13
# and ~18.6 us run to run); the medians are compared.
#
# cupti_progress is CUPTI with the start event per call that lets `status` tell "not started"
# from "running" (`record --gpu-progress`): against cupti, that event's cost.
#
# Usage: tests/gpu/gputiming_bench.sh [ROUNDS=7] [ITERS=5000]   GPUTIMING_MODES="group" for one mode
# Writes $OUT/gputiming_bench.log; exit 0 when CUPTI's median ratio is <= 1.05 in every
# configuration, 1 otherwise (the table says where).
set -u -o pipefail
source "$(dirname "$0")/gputiming_env.sh"
PROBE=$BUILD/bin/ncclrr-gputiming-probe
ROUNDS=${1:-7}
ITERS=${2:-5000}
LOG=$OUT/gputiming_bench.log
RAW=$OUT/gputiming_bench.raw
: >"$RAW"
for mode in ${GPUTIMING_MODES:-group threads}; do
  for count in 2 8192; do
    for round in $(seq "$ROUNDS"); do
      for timing in none cupti cupti_progress cupti_rec cupti_all events cupti_floor; do
        extra=()
        [ "$timing" = cupti_progress ] && extra=(--progress)
        [ "$timing" = cupti_all ] && extra=(--all-api)
        [ "$timing" = cupti_rec ] && extra=(--launches-only)
        probe_timing=${timing%_*}
        [ "$timing" = cupti_floor ] && extra=(--job-kernel-records) && probe_timing=none
        line=$("$PROBE" --timing "$probe_timing" "${extra[@]}" --mode "$mode" --iters "$ITERS" \
               --warmup 500 --count "$count" 2>/dev/null | grep '^probe')
        [ "$timing" != "${timing%_*}" ] && line=${line/timing=$probe_timing /timing=$timing }
        echo "round=$round $line" >>"$RAW"
      done
    done
  done
done
"$PY" - "$RAW" <<'PYEOF' | tee "$LOG"
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    kv = dict(re.findall(r"(\w+)=(\S+)", line))
    if "us_per_iter" not in kv:
        continue
    runs.setdefault((kv["mode"], kv["count"]), {}).setdefault(kv["timing"], []).append(
        float(kv["us_per_iter"]))
if not runs:
    print("no measurements: did ncclrr-gputiming-probe run? (see", sys.argv[1], ")")
    sys.exit(2)
ok = True
variants = ["cupti", "cupti_progress", "cupti_rec", "cupti_all", "events", "cupti_floor"]
print(f"{'mode':8} {'bytes':>6} {'none us':>8} " + " ".join(f"{v + ' us':>12} {'ratio':>6}" for v in variants) + "  runs")
for (mode, count), t in sorted(runs.items()):
    med = {k: statistics.median(v) for k, v in t.items()}
    base = med.get("none")
    if not base or "cupti" not in med:
        print(f"{mode:8} {int(count) * 4:>6}  incomplete: {sorted(med)}")
        ok = False
        continue
    ok &= med["cupti"] / base <= 1.05
    cells = " ".join(f"{med.get(v, float('nan')):12.2f} {med.get(v, float('nan')) / base:6.3f}" for v in variants)
    print(f"{mode:8} {int(count) * 4:>6} {base:8.2f} {cells}  {len(t.get('none', []))}")
print("target: CUPTI <= 1.05x ->", "MET" if ok else "NOT MET")
sys.exit(0 if ok else 1)
PYEOF
