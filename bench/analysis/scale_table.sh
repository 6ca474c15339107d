#!/usr/bin/env bash
# The scale table of bench/README.md: bench-analysis --quick for ranks x calls per rank. Each
# row's trace is written by one process and measured by another (--trace), as `ncclrr check`
# meets a trace: its own peak RSS, a cold heap, files not being written back while read. A row
# whose records would not fit in memory at ~45 B per call (the check's peak is 38–39 B,
# bench/README.md) is reported as such rather than run.
#
#   bench/analysis/scale_table.sh [BUILD_DIR] [THREADS]
#   RANKS="8 64" CALLS="2000" bench/analysis/scale_table.sh build
#   TMPDIR=/big/disk bench/analysis/scale_table.sh   (where the traces are written)
set -euo pipefail
build=${1:-build}
threads=${2:-$(nproc)}
ranks=${RANKS:-"8 64 256 4096 16384"}
calls=${CALLS:-"2000 100000"}
bench="$build/bin/bench-analysis"
[[ -x $bench ]] || { echo "no $bench: build it first (ninja -C $build bench-analysis)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/ncclrr-scale.XXXXXX")
trap 'rm -rf "$work"' EXIT
avail_kb=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
echo "| ranks | calls/rank | records | load s | load M rec/s | check s | load+check M rec/s | peak RSS MB | B/call |"
echo "|---|---|---|---|---|---|---|---|---|"
for r in $ranks; do
  for c in $calls; do
    n=$((r * c))
    if (( n / 1024 * 45 > avail_kb * 9 / 10 )); then
      echo "| $r | $c | $n | — | — | — | — | — | does not fit in $((avail_kb / 1048576)) GiB |"
      continue
    fi
    "$bench" --ranks "$r" --calls "$c" --write-only --dir "$work" >/dev/null && sync
    row=$("$bench" --ranks "$r" --calls "$c" --threads "$threads" --quick --trace "$work/check" |
      grep '^row:')
    rm -rf "$work/check"
    awk -v r="$r" -v c="$c" '{
      for (i = 2; i < NF; i += 2) v[$i] = $(i + 1)
      printf "| %s | %s | %d | %.2f | %.1f | %.2f | %.1f | %d | %.1f |\n", r, c, v["records"],
             v["load_s"], v["records"] / v["load_s"] / 1e6, v["check_s"],
             v["records"] / (v["load_s"] + v["check_s"]) / 1e6, v["peak_mb"], v["b_per_call"]
    }' <<<"$row"
  done
done
