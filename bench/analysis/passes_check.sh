#!/usr/bin/env bash
# `ncclrr check --memory` (in passes, a group of communicators at a time): on a cut that fits,
# its report must be byte-identical to `ncclrr check` at once; on the large trace, its peak
# memory must stay near the bound. Prints wall time and peak RSS of each run.
#
#   bench/analysis/passes_check.sh BUILD [RANKS CUT_CALLS BIG_CALLS NCOMMS CUT_MEMORY BIG_MEMORY]
#
# Defaults: 16,384 ranks in 128 communicators; the cut 2,000 calls per rank (3.3 x 10^7 calls)
# checked with --memory 1G, the large trace 20,000 per rank (3.3 x 10^8 calls, ~33 GB to check at
# once) with --memory 4G. Writing the large trace takes ~14 min on 2 cores. Set KEEP=1 to keep
# the traces (under ${TMPDIR:-/tmp}/ncclrr-passes-check). bench/README.md records the numbers.
set -eu
BUILD=$1
RANKS=${2:-16384}
CUT=${3:-2000}
BIG=${4:-20000}
NCOMMS=${5:-128}
CUT_MEMORY=${6:-1G}
BIG_MEMORY=${7:-4G}
DIR=${TMPDIR:-/tmp}/ncclrr-passes-check
NCCLRR=$BUILD/bin/ncclrr
TIME=(/usr/bin/time -f "wall %e s, peak RSS %M KB")
[ -x /usr/bin/time ] || TIME=()
write() {  # DIR CALLS
  [ -d "$1/check" ] || "$BUILD/bin/bench-analysis" --ranks "$RANKS" --calls "$2" \
    --groups "$NCOMMS" --write-only --dir "$1"
}
status=0
write "$DIR/cut" "$CUT"
echo "cut, $RANKS ranks x $CUT calls, at once:"
"${TIME[@]}" "$NCCLRR" check --stable "$DIR/cut/check" >"$DIR/cut-once.txt" || true
echo "cut, --memory $CUT_MEMORY:"
"${TIME[@]}" "$NCCLRR" check --stable --memory "$CUT_MEMORY" "$DIR/cut/check" \
  >"$DIR/cut-passes.txt" || true
if cmp -s "$DIR/cut-once.txt" "$DIR/cut-passes.txt"; then
  echo "cut: reports identical ($(wc -c <"$DIR/cut-once.txt") bytes)"
else
  echo "cut: reports DIFFERENT"
  status=1
fi
tail -n 1 "$DIR/cut-once.txt"
write "$DIR/big" "$BIG"
echo "large, $RANKS ranks x $BIG calls, --memory $BIG_MEMORY:"
"${TIME[@]}" "$NCCLRR" check --stable --memory "$BIG_MEMORY" "$DIR/big/check" \
  >"$DIR/big-passes.txt" || true
grep '^error\|^warning' "$DIR/big-passes.txt" | cut -c1-100 || true
tail -n 1 "$DIR/big-passes.txt"
[ "${KEEP:-0}" = 1 ] || rm -rf "$DIR"
exit $status
