#!/usr/bin/env bash
# What a hung job's trace costs `ncclrr check` over the same trace closed in order: the check
# then also looks for cycles of waits across communicators among every file's last 1,024
# collectives (analysis/src/checks/wait_cycle.cc). Writes one trace twice (bench-analysis
# --write-only, the second with --killed: no footers), then measures load and check of each,
# alternating, ROUNDS times, and prints the medians and their ratio.
#
#   bench/analysis/killed_check.sh BUILD [RANKS CALLS ROUNDS THREADS]
#
# Defaults: 64 ranks x 100,000 calls (6.4 x 10^6), 5 rounds, 2 threads. bench/README.md records
# the numbers.
set -eu
BUILD=$1
RANKS=${2:-64}
CALLS=${3:-100000}
ROUNDS=${4:-5}
THREADS=${5:-2}
DIR=${TMPDIR:-/tmp}/ncclrr-killed-check
BENCH=$BUILD/bin/bench-analysis
rm -rf "$DIR"
"$BENCH" --ranks "$RANKS" --calls "$CALLS" --write-only --dir "$DIR/closed" >/dev/null
"$BENCH" --ranks "$RANKS" --calls "$CALLS" --write-only --killed --dir "$DIR/killed" >/dev/null
for ((i = 0; i < ROUNDS; i++)); do
  for kind in closed killed; do
    "$BENCH" --trace "$DIR/$kind/check" --ranks "$RANKS" --calls "$CALLS" --threads "$THREADS" \
      --quick | grep '^row:' | sed "s/^row:/$kind/"
  done
done >"$DIR/rows.txt"
cat "$DIR/rows.txt"
awk '
  { for (i = 2; i < NF; i += 2) v[$1, $i, ++n[$1, $i]] = $(i + 1) }
  function median(kind, key,   k, j, m, a, x) {
    m = n[kind, key]
    for (k = 1; k <= m; k++) {  # insertion sort: mawk has no asort
      x = v[kind, key, k]
      for (j = k - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]
      a[j + 1] = x
    }
    return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
  }
  END {
    for (j = 0; j < 2; j++) {
      kind = j ? "killed" : "closed"
      printf "%s: median load %.3f s, check %.3f s, peak %.0f MB\n", kind, median(kind, "load_s"),
        median(kind, "check_s"), median(kind, "peak_mb")
    }
    printf "killed / closed: load %.2fx, check %.2fx\n",
      median("killed", "load_s") / median("closed", "load_s"),
      median("killed", "check_s") / median("closed", "check_s")
  }' "$DIR/rows.txt"
[ "${KEEP:-0}" = 1 ] || rm -rf "$DIR"
