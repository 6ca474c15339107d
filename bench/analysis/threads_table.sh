#!/usr/bin/env bash
# The threads table of bench/README.md: bench-analysis --quick at 1, 2, 8 and 16 threads (or
# THREADS) on many mid-sized files (64 ranks x 125 k calls), few large ones (8 x 1 M) and
# thousands of small ones (16,384 x 2 k, a ring dump of a large job), REPEAT runs each, one
# process per run. With PIN set, a run of T threads is pinned to cores 0..T-1 (taskset), so
# "2 threads" means 2 cores even on a larger machine.
#
#   bench/analysis/threads_table.sh [BENCH_BINARY]
#   THREADS="2" REPEAT=3 PIN=1 bench/analysis/threads_table.sh build/bin/bench-analysis
set -euo pipefail
bench=${1:-build/bin/bench-analysis}
threads=${THREADS:-"1 2 8 16"}
repeat=${REPEAT:-1}
shapes=${SHAPES:-"64x125000 8x1000000 16384x2000"}
[[ -x $bench ]] || { echo "no $bench: build it first (ninja -C build bench-analysis)" >&2; exit 2; }
echo "| trace | threads | load s | load M rec/s | check s | peak RSS MB | B/call |"
echo "|---|---|---|---|---|---|---|"
for shape in $shapes; do
  r=${shape%x*}
  c=${shape#*x}
  for t in $threads; do
    pin=()
    [[ -n ${PIN:-} ]] && pin=(taskset -c "0-$((t - 1))")
    for ((i = 0; i < repeat; ++i)); do
      row=$("${pin[@]}" "$bench" --ranks "$r" --calls "$c" --threads "$t" --quick | grep '^row:')
      awk -v shape="$r × $c" -v t="$t" '{
        for (i = 2; i < NF; i += 2) v[$i] = $(i + 1)
        printf "| %s | %s | %.2f | %.1f | %.2f | %d | %.1f |\n", shape, t, v["load_s"],
               v["records"] / v["load_s"] / 1e6, v["check_s"], v["peak_mb"], v["b_per_call"]
      }' <<<"$row"
    done
  done
done
