#!/usr/bin/env bash
# `ncclrr check --mpi` on one machine: the report of 1, 2 and 4 processes (2 cores each) must be
# byte-identical to `ncclrr check` in one process, and the wall time per process count is printed.
#
#   bench/analysis/mpi_check.sh BUILD [RANKS CALLS NCOMMS]
#
# Writes a synthetic trace of RANKS ranks x CALLS calls in NCOMMS communicators (bench-analysis
# --write-only), then runs each; needs mpirun (Open MPI). bench/README.md records the numbers.
set -eu
BUILD=$1
RANKS=${2:-64}
CALLS=${3:-125000}
NCOMMS=${4:-16}
DIR=${TMPDIR:-/tmp}/ncclrr-mpi-check
NCCLRR=$BUILD/bin/ncclrr
"$BUILD/bin/bench-analysis" --ranks "$RANKS" --calls "$CALLS" --groups "$NCOMMS" --write-only \
  --dir "$DIR"
now() { date +%s.%N; }
t0=$(now)
taskset -c 0,1 "$NCCLRR" check "$DIR/check" --stable >"$DIR/one.txt" || true
t1=$(now)
echo "one process (2 cores): $(awk "BEGIN{printf \"%.2f\", $t1 - $t0}") s"
MPIRUN="mpirun --allow-run-as-root --oversubscribe --map-by slot:PE=2 --bind-to core"
# Peak RSS of each process, where GNU time is there.
RSS=()
[ -x /usr/bin/time ] && RSS=(/usr/bin/time -f "peak_kb %M")
status=0
for P in 1 2 4; do
  t0=$(now)
  $MPIRUN -np "$P" "${RSS[@]}" "$NCCLRR" check "$DIR/check" --stable --mpi >"$DIR/mpi$P.txt" \
    2>"$DIR/mpi$P.err" || true
  t1=$(now)
  if cmp -s "$DIR/one.txt" "$DIR/mpi$P.txt"; then same=identical; else same=DIFFERENT; status=1; fi
  peak=$(awk '/^peak_kb/ {if ($2 > m) m = $2} END {printf "%.0f", m / 1024}' "$DIR/mpi$P.err")
  echo "--mpi -np $P (2 cores each): $(awk "BEGIN{printf \"%.2f\", $t1 - $t0}") s, report $same" \
    "($(wc -c <"$DIR/mpi$P.txt") bytes), largest process ${peak:-?} MB"
done
tail -n 1 "$DIR/one.txt"
rm -rf "$DIR"
exit $status
