#!/usr/bin/env bash
# Issue 6's benchmark of `record --sketch` on real NCCL (2 GPUs, one rank per process):
# bench-sketch-gpu (AllReduce and ReduceScatter of floats, in place and out of place, 8 B - 1 GB)
# in three modes, run in turn in each of NCCLRR_SKETCH_BENCH_ROUNDS rounds (default 5) so that
# machine drift hits them alike:
#   none    the program alone
#   record  ncclrr record (plain recording)
#   sketch  ncclrr record --sketch
# Writes $OUT/sketch-bench/sketch-bench.md (also printed): per case the median over rounds of each
# mode's median per call (us) and the ratios sketch/none and record/none against the targets
# (>= 64 MB: sketch <= 1.15x in place, <= 1.25x out of place); up to 64 KB the time sketch adds
# per call against one empty kernel launch on the same stream, measured in the none runs
# (target <= 1.2x). Round 1's sketch trace is checked (`ncclrr check`: no finding expected; its
# notes say whether sketches were skipped). Builds nothing: run after
# tests/gpu/build_on_device.sh (tests/gpu/run_all.sh sketchbench). Estimated 5-10 s per run (each
# process: 2 x 1 GB buffers, NCCL init, ~2.5 s of calls), 15 runs: well under 250 s.
# Exit: 0 ran and every result was right (targets are reported, not enforced), 1 wrong results or
# a finding, 2 could not run.
set -u
source "$(dirname "$0")/gputiming_env.sh"
W=$OUT/sketch-bench
rm -rf "$W"
mkdir -p "$W/results"
T=${TMPDIR:-/tmp}/ncclrr-sketch-bench.$$  # traces: large, never under $OUT
mkdir -p "$T"
trap 'rm -rf "$T"' EXIT
NGPU=$(nvidia-smi -L 2>/dev/null | wc -l)
NR=$(( NGPU >= 2 ? 2 : 1 ))
ROUNDS=${NCCLRR_SKETCH_BENCH_ROUNDS:-5}
MAXB=${NCCLRR_SKETCH_BENCH_MAX_BYTES:-1073741824}
N=$BUILD/bin/ncclrr
BENCH=$BUILD/bin/bench-sketch-gpu
[ -x "$BENCH" ] || { echo "missing $BENCH (build with CUDA first)"; exit 2; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv >"$W/nvidia-smi.csv" 2>&1

# run MODE TAG: both ranks under the mode's setup; rank 0's table in results/MODE.TAG.out.
run() {
  local mode=$1 tag=$2 pre=()
  case $mode in
    record) pre=("$N" record -o "$T/t-$mode-$tag") ;;
    sketch) pre=("$N" record --sketch -o "$T/t-$mode-$tag") ;;
  esac
  local cmd="'$BENCH' --rank 0 --nranks $NR --id '$T/id.$mode.$tag' --max-bytes $MAXB \
    >'$W/results/$mode.$tag.out' 2>'$W/results/$mode.$tag.err0' &"
  for r in $(seq 1 $((NR - 1))); do
    cmd="$cmd '$BENCH' --rank $r --nranks $NR --id '$T/id.$mode.$tag' --max-bytes $MAXB \
      >/dev/null 2>'$W/results/$mode.$tag.err$r' &"
  done
  timeout -k 5 150 "${pre[@]}" sh -c "$cmd wait" 2>"$W/results/$mode.$tag.err"
  echo "$mode round $tag: rc=$? $(tail -n 1 "$W/results/$mode.$tag.out" 2>/dev/null)" |
    tee -a "$W/runs.log"
}

rc=0
for round in $(seq 1 "$ROUNDS"); do
  for mode in none record sketch; do
    run "$mode" "r$round"
    [ "$round" = 1 ] && [ "$mode" = sketch ] && continue  # checked below
    rm -rf "$T/t-$mode-r$round"
  done
done

# Round 1's sketch trace: no finding on correct data at every size; skipped sketches are notes.
if [ -d "$T/t-sketch-r1" ]; then
  timeout -k 5 120 "$N" check "$T/t-sketch-r1" >"$W/check.txt" 2>&1
  crc=$?
  timeout -k 5 60 "$N" info "$T/t-sketch-r1" >"$W/info.txt" 2>&1
  du -sh "$T/t-sketch-r1" >>"$W/info.txt" 2>&1
  echo "check of round 1's sketch trace: exit $crc (0: no finding); notes:" | tee -a "$W/runs.log"
  grep -i -E "note|skip|sketch" "$W/check.txt" | head -n 12 | tee -a "$W/runs.log"
  [ "$crc" = 0 ] || rc=1
else
  echo "no sketch trace from round 1" | tee -a "$W/runs.log"
  rc=1
fi

"$PY" - "$W/results" "$ROUNDS" "$NR" >"$W/sketch-bench.md" <<'EOF'
import collections, glob, os, re, statistics, sys
res, rounds, nranks = sys.argv[1], int(sys.argv[2]), sys.argv[3]
med = collections.defaultdict(list)    # (mode, op, place, bytes) -> medians over rounds
empty = collections.defaultdict(list)  # (op, place, bytes) -> none runs' empty-kernel cost
host = collections.defaultdict(list)   # (mode, op, place, bytes) -> medians of the call's own time
pat = re.compile(r"op (\S+) place (\S+) bytes (\d+) iters \d+ median_us ([\d.]+) .* "
                 r"host_us ([\d.]+) empty_us (-?[\d.]+)")
for path in glob.glob(os.path.join(res, "*.out")):
    mode = os.path.basename(path).split(".")[0]
    for line in open(path):
        m = pat.match(line)
        if not m:
            continue
        op, place, size, us, h, e = m.group(1), m.group(2), int(m.group(3)), \
            float(m.group(4)), float(m.group(5)), float(m.group(6))
        med[(mode, op, place, size)].append(us)
        host[(mode, op, place, size)].append(h)
        if mode == "none" and e >= 0:
            empty[(op, place, size)].append(e - us)

def human(b):
    for unit, div in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if b >= div:
            return f"{b // div} {unit}"
    return f"{b} B"

def get(mode, k):
    v = med.get((mode,) + k)
    return statistics.median(v) if v else None

print(f"# record --sketch on real NCCL: {nranks} ranks (one per process and GPU), float sum, "
      f"median per call over {rounds} rounds (us)\n")
print("Ratios to none; target (>= 64 MB): sketch <= 1.15x in place, <= 1.25x out of place. "
      "Up to 64 KB: sketch's added time per call / one empty kernel launch on that stream "
      "(none runs, same round), target <= 1.2x. host added: what sketch adds to the time the NCCL "
      "call itself takes (enqueueing the sketches).\n")
misses = []
for op in ("allreduce", "reducescatter"):
    for place in ("in", "out"):
        keys = sorted({k[3] for k in med if k[1] == op and k[2] == place})
        if not keys:
            continue
        print(f"## {op}, {'in-place' if place == 'in' else 'out-of-place'}\n")
        print("| size | none | record | sketch | record/none | sketch/none | empty kernel | "
              "sketch added | added/empty | host added | target |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for size in keys:
            k = (op, place, size)
            n, r, s = get("none", k), get("record", k), get("sketch", k)
            cells = [f"{v:.2f}" if v is not None else "-" for v in (n, r, s)]
            rr = f"{r / n:.3f}x" if n and r else "-"
            sr = f"{s / n:.3f}x" if n and s else "-"
            e = statistics.median(empty[k]) if empty.get(k) else None
            added = s - n if n and s else None
            ecell = f"{e:.2f}" if e is not None else ""
            acell = f"{added:.2f}" if added is not None and e is not None else ""
            ratio = f"{added / e:.2f}x" if added is not None and e else ""
            hn, hs = host.get(("none",) + k), host.get(("sketch",) + k)
            hcell = f"{statistics.median(hs) - statistics.median(hn):.2f}" if hn and hs else "-"
            target = ""
            if size >= 64 << 20 and n and s:
                lim = 1.15 if place == "in" else 1.25
                target = "ok" if s / n <= lim else f"MISS (> {lim}x)"
            elif e and added is not None:
                target = "ok" if added / e <= 1.2 else "MISS (> 1.2x)"
            if target.startswith("MISS"):
                misses.append(f"{op} {place} {human(size)}")
            print(f"| {human(size)} | " + " | ".join(cells) +
                  f" | {rr} | {sr} | {ecell} | {acell} | {ratio} | {hcell} | {target} |")
        print()
print("targets missed: " + (", ".join(misses) if misses else "none"))
EOF
cat "$W/sketch-bench.md"
cat "$W/runs.log"
if grep -l "check FAILED" "$W"/results/*.out 2>/dev/null; then
  echo "some runs computed wrong results"
  rc=1
fi
n_ok=$(grep -l "check ok" "$W"/results/*.out 2>/dev/null | wc -l)
[ "$n_ok" -gt 0 ] || { echo "no run finished"; exit 2; }
exit $rc
