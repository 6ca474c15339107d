#!/usr/bin/env bash
# Latency of small allreduces with and without `ncclrr record` (issue 4's benchmark), on real
# NCCL: bench-interposer-gpu (8 B - 64 KB, 2000 iterations per size) as one process driving
# every GPU with group calls, and as one process per GPU (with two GPUs). Modes, run in turn in
# each of NCCLRR_BENCH_ROUNDS rounds (default 3) so that machine drift hits them alike:
#   none            the program alone
#   record          ncclrr record (preload + NCCL profiler plugin, as users get it)
#   record-preload  ncclrr record with NCCLRR_PROFILER_PLUGIN=0 (the preload alone)
#   ring            ncclrr record --ring 10000
#   colllog         NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL into a file (for comparison)
#   gputiming       ncclrr record --gpu-timing (CUPTI)
#   gpu-progress    ncclrr record --gpu-progress (CUPTI and a start event per call for `status`):
#                   against gputiming, the cost of GPU progress
# NCCLRR_BENCH_SHARED_GPU=1 with one GPU: the two-process topology too, both processes on the
# one GPU with their own NCCL_HOSTID (NCCL's socket transport: a real kernel per call, slow).
# Writes $OUT/interposer-bench/latency.md: per topology and size, the median over rounds of each
# mode's median per iteration (us) and its ratio to `none` (target: record <= 1.02x).
set -u
source "$(dirname "$0")/gputiming_env.sh"
W=$OUT/interposer-bench
rm -rf "$W"
mkdir -p "$W/results"
NGPU=$(nvidia-smi -L 2>/dev/null | wc -l)
G=$(( NGPU >= 2 ? 2 : 1 ))
ROUNDS=${NCCLRR_BENCH_ROUNDS:-3}
N=$BUILD/bin/ncclrr
BENCH=$BUILD/bin/bench-interposer-gpu
ITERS=${NCCLRR_BENCH_ITERS:-2000}
[ -x "$BENCH" ] || { echo "missing $BENCH (build with CUDA first)"; exit 1; }

# wrap MODE TRACE_DIR CMD...: CMD under the mode's setup.
wrap() {
  local mode=$1 dir=$2; shift 2
  case $mode in
    none) timeout 300 "$@" ;;
    record) timeout 300 "$N" record -o "$dir" -- "$@" ;;
    record-preload) NCCLRR_PROFILER_PLUGIN=0 timeout 300 "$N" record -o "$dir" -- "$@" ;;
    ring) timeout 300 "$N" record --ring 10000 -o "$dir" -- "$@" ;;
    gputiming) timeout 300 "$N" record --gpu-timing -o "$dir" -- "$@" ;;
    gpu-progress) timeout 300 "$N" record --gpu-progress -o "$dir" -- "$@" ;;
    colllog) NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL NCCL_DEBUG_FILE="$dir.%p.log" timeout 300 "$@" ;;
  esac
}

MODES=${NCCLRR_BENCH_MODES:-"none record record-preload ring colllog"}
for round in $(seq 1 "$ROUNDS"); do
  for mode in $MODES; do
    tag=$mode.r$round
    wrap "$mode" "$W/t-group-$tag" "$BENCH" --group "$G" --iters "$ITERS" \
      >"$W/results/group.$tag.out" 2>"$W/results/group.$tag.err"
    if [ "$G" -ge 2 ] || [ "${NCCLRR_BENCH_SHARED_GPU:-0}" = 1 ]; then
      host0="" host1=""
      [ "$G" -lt 2 ] && host0="NCCL_HOSTID=host-0 NCCL_SOCKET_IFNAME=lo" &&
        host1="NCCL_HOSTID=host-1 NCCL_SOCKET_IFNAME=lo"
      wrap "$mode" "$W/t-procs-$tag" sh -c "env $host0 '$BENCH' --rank 0 --nranks 2 \
        --id '$W/id.$tag' --iters $ITERS >'$W/results/procs.$tag.out' & env $host1 '$BENCH' \
        --rank 1 --nranks 2 --id '$W/id.$tag' --iters $ITERS >/dev/null; wait" \
        2>"$W/results/procs.$tag.err"
    fi
    rm -rf "$W"/t-*"$tag"*  # traces and COLL logs are large and not needed here
  done
done

"$PY" - "$W/results" "$ROUNDS" "$MODES" >"$W/latency.md" <<'EOF'
import collections, glob, os, re, statistics, sys
res, rounds, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
data = collections.defaultdict(list)  # (topology, mode, size) -> medians over rounds
for path in glob.glob(os.path.join(res, "*.out")):
    topo, mode, _ = os.path.basename(path).split(".", 2)
    for line in open(path):
        m = re.match(r"size_bytes (\d+) median_us ([\d.]+)", line)
        if m:
            data[(topo, mode, int(m.group(1)))].append(float(m.group(2)))
print(f"# allreduce latency per iteration, median of {rounds} rounds (us); ratio to none\n")
for topo in ("group", "procs"):
    sizes = sorted({k[2] for k in data if k[0] == topo})
    if not sizes:
        continue
    print(f"## {topo}\n")
    print("| size | " + " | ".join(modes) + " |")
    print("|---|" + "---|" * len(modes))
    for size in sizes:
        base = statistics.median(data[(topo, "none", size)]) if data[(topo, "none", size)] else None
        cells = []
        for mode in modes:
            v = data[(topo, mode, size)]
            if not v:
                cells.append("-")
                continue
            med = statistics.median(v)
            cells.append(f"{med:.2f}" + (f" ({med / base:.3f}x)" if base and mode != "none" else ""))
        print(f"| {size} B | " + " | ".join(cells) + " |")
    print()
EOF
cat "$W/latency.md"
grep -l "check FAILED" "$W"/results/*.out 2>/dev/null && { echo "some runs computed wrong results"; exit 1; }
exit 0
