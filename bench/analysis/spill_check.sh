#!/usr/bin/env bash
# One communicator larger than memory: `ncclrr check --memory SIZE` keeps its per-call arrays in
# a file on disk (ncclrr/base/spill.h). Checks the same trace at once and spilled, the spilled
# run inside a memory cgroup limited to SIZE where this machine lets us make one (root, cgroup
# v1 or v2), and compares the reports byte for byte. Prints wall time, peak RSS and, in the
# cgroup, its peak use (page cache included) and whether anything was killed.
#
#   bench/analysis/spill_check.sh BUILD [RANKS CALLS SIZE [ALSO_AT_ONCE]]
#
# Defaults: 8 ranks x 25 M calls on one communicator (2 x 10^8 calls, ~8 GB to check at once)
# with --memory 1G. ALSO_AT_ONCE=1 (default) also runs the in-memory check (--memory 1T: one
# group, nothing spilled; plain `check` would weigh the machine's memory and might spill) in the
# same cgroup, to show it does not fit there, and once more without it, for the reference report. Set KEEP=1
# to keep the trace (under ${TMPDIR:-/tmp}/ncclrr-spill-check). bench/README.md records the
# numbers.
set -eu
BUILD=$1
RANKS=${2:-8}
CALLS=${3:-25000000}
SIZE=${4:-1G}
ALSO_AT_ONCE=${5:-1}
DIR=${TMPDIR:-/tmp}/ncclrr-spill-check
NCCLRR=$BUILD/bin/ncclrr
TIME=(/usr/bin/time -f "wall %e s, peak RSS %M KB")
[ -x /usr/bin/time ] || TIME=()
bytes() { numfmt --from=iec "$1"; }

# A memory cgroup limited to SIZE: v2 (memory.max) or v1 (memory.limit_in_bytes); "" if none.
CG=""
make_cgroup() {
  local v2=/sys/fs/cgroup v1=/sys/fs/cgroup/memory
  if [ -w "$v2/cgroup.subtree_control" ] && grep -qw memory "$v2/cgroup.controllers" 2>/dev/null; then
    CG=$v2/ncclrr-spill-check
    mkdir -p "$CG" && echo "$(bytes "$SIZE")" >"$CG/memory.max" && echo 0 >"$CG/memory.swap.max" ||
      CG=""
  elif [ -w "$v1" ]; then
    CG=$v1/ncclrr-spill-check
    mkdir -p "$CG" && echo "$(bytes "$SIZE")" >"$CG/memory.limit_in_bytes" || CG=""
  fi
}
# A fresh cgroup for each run, so that its peak is that run's (v2's memory.peak cannot be reset).
cg_reset() {
  [ -n "$CG" ] || return 0
  rmdir "$CG" 2>/dev/null || true
  make_cgroup
}
cg_peak() {
  local f
  for f in memory.peak memory.max_usage_in_bytes; do
    [ -f "$CG/$f" ] && { echo "cgroup peak $(($(cat "$CG/$f") >> 20)) MB"; return; }
  done
}
in_cgroup() {  # runs "$@" inside the cgroup (or plainly when there is none)
  if [ -n "$CG" ]; then
    sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG" "$@"
  else
    "$@"
  fi
}

mkdir -p "$DIR/spill"
[ -d "$DIR/trace/check" ] || "$BUILD/bin/bench-analysis" --ranks "$RANKS" --calls "$CALLS" \
  --groups 1 --write-only --dir "$DIR/trace"
make_cgroup
[ -n "$CG" ] && echo "memory cgroup: $CG, limit $SIZE" || echo "no memory cgroup here: unbounded runs"
status=0
if [ "$ALSO_AT_ONCE" = 1 ]; then
  echo "in memory, no limit:"
  "${TIME[@]}" "$NCCLRR" check --stable --memory 1T "$DIR/trace/check" >"$DIR/once.txt" || true
  tail -n 1 "$DIR/once.txt"
  if [ -n "$CG" ]; then
    echo "in memory, in the cgroup:"
    cg_reset
    rc=0
    in_cgroup "${TIME[@]}" "$NCCLRR" check --stable --memory 1T "$DIR/trace/check" >/dev/null ||
      rc=$?
    echo "exit $rc$([ $rc -ge 128 ] && echo " (killed: it does not fit in $SIZE)")"
  fi
fi
echo "--memory $SIZE --spill $DIR/spill, in the cgroup:"
cg_reset
rc=0
in_cgroup "${TIME[@]}" "$NCCLRR" check --stable --memory "$SIZE" --spill "$DIR/spill" \
  "$DIR/trace/check" >"$DIR/spilled.txt" || rc=$?
echo "exit $rc; $(cg_peak)"
if [ "$ALSO_AT_ONCE" = 1 ]; then
  if cmp -s "$DIR/once.txt" "$DIR/spilled.txt"; then
    echo "reports identical ($(wc -c <"$DIR/once.txt") bytes)"
  else
    echo "reports DIFFERENT"
    status=1
  fi
fi
tail -n 1 "$DIR/spilled.txt"
[ -n "$CG" ] && rmdir "$CG" 2>/dev/null || true
[ "${KEEP:-0}" = 1 ] || rm -rf "$DIR"
exit $status
