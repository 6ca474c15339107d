#!/usr/bin/env bash
# Issue 25 (part 2) acceptance on real NCCL, one GPU, two ranks sharing it (NCCL_HOSTID per rank):
#  1. tests/gpu/realjobs/torch_output_flip.py under `ncclrr record --sketch`: rank 1 corrupts one
#     element of its output of one collective at step 4 from a side stream (a Triton kernel that
#     keeps storing a wrong value until the collective's stream, with ncclrr's after-call sketch,
#     is done). `check --json` must give output_divergence at the corrupted seq (all_reduce: 12,
#     broadcast: 13) naming rank 1 (alone when the identity check tells which output is wrong, or
#     with rank 0 on a tie); the same job without the flip (--no-flip) must give no finding.
#  2. nccl-tests (all_reduce, broadcast, all_gather, reduce_scatter, reduce, alltoall, sendrecv;
#     every datatype nccl-tests has, -d all: int8, uint8, int32, uint32, int64, uint64, half,
#     float, double, bfloat16, fp8; sizes from 8 B to 256 MB; in and out of place; their own
#     result check -c 1) under `record --sketch`: 0 output_divergence findings; any other finding
#     or note is listed. Plus all_reduce_perf -o all (sum, prod, max, min, avg, premulsum: the
#     reductions only the cross-rank comparison can check) to 4 MB.
# Prints "PASS ..." / "FAIL ..." per check and a final "RESULT: PASS|FAIL". Builds nccl-tests
# (tests/gpu/realjobs/build_extras.sh nccl-tests, from .gpu-src/nccl-tests.tar.gz) when
# build-extras/ has none. Needs a CUDA build of ncclrr (tests/gpu/build_on_device.sh).
#
# Usage: tests/gpu/output_divergence_acceptance.sh   (or: tests/gpu/run_all.sh output_divergence)
#   DIVERGENCE_DEADLINE_S=290   stop starting new runs after this many seconds (reported SKIPPED)
#   DIVERGENCE_PORT=29641       first rendezvous port of the PyTorch runs
#   NT_ITERS="-n 2 -w 1"        nccl-tests iterations per size (each size is then checked, -c 1)
#   NT_TYPES=all                nccl-tests -d, one run per type listed ("float half bfloat16
#                               int32"; "all": every type in one run)
#   DIVERGENCE_SKIP_TORCH=1     only the nccl-tests part
# Writes under $OUT/divergence: summary.log, NAME.record.txt (the job's output, last 200 lines),
# NAME.check.txt (check's text, first 300 lines), NAME.json (check --json), and
# torch-traces.tar.gz (the PyTorch traces; nccl-tests traces are removed). Exit 0 when every check
# passed, 1 otherwise, 2 when it cannot run.
set -u
source "$(dirname "$0")/gputiming_env.sh"
N=$BUILD/bin/ncclrr
J=$ROOT/tests/gpu/realjobs
X=$ROOT/build-extras
NT=$X/nccl-tests/build
W=$OUT/divergence
DEADLINE=${DIVERGENCE_DEADLINE_S:-290}
PORT=${DIVERGENCE_PORT:-29641}
NT_ITERS=${NT_ITERS:-"-n 2 -w 1"}
NT_TYPES=${NT_TYPES:-all}
rm -rf "$W"
mkdir -p "$W"
: >"$W/summary.log"
say() { echo "$*" | tee -a "$W/summary.log"; }
T0=$SECONDS
failed=0 total_div=0 runs=0 skipped=0
late() { [ $((SECONDS - T0)) -ge "$DEADLINE" ]; }

[ -x "$N" ] || { echo "no $N: build first (tests/gpu/build_on_device.sh)"; exit 2; }
nvidia-smi -L >/dev/null 2>&1 || { echo "needs a GPU"; exit 2; }
say "== output_divergence acceptance on $(hostname): $(nvidia-smi -L | head -n 1); build $BUILD"
"$PY" -c 'import torch, triton; print("torch", torch.__version__, "nccl",
  torch.cuda.nccl.version(), "triton", triton.__version__)' 2>&1 | tail -n 1 | tee -a "$W/summary.log"

# summarize JSON: one line: "findings=K divergence=D (occurrences O) kinds=[kind@seq ranks ...]
# notes=[kind ...]"; with EXPECT_SEQ set, also "match=yes|no alone=yes|no" for an
# output_divergence at that seq whose ranks hold 1 (alone: ranks == [1]).
summarize() {
  EXPECT_SEQ=${EXPECT_SEQ:-} "$PY" - "$1" <<'PYEOF'
import json, os, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception:
    print("UNREADABLE"); sys.exit()
fs = r.get("findings", [])
div = [f for f in fs if f["kind"] == "output_divergence"]
occ = sum(1 + (f.get("repeats") or 0) for f in div)
kinds = ["%s@%s ranks=%s x%d" % (f["kind"], f.get("seq"), f.get("ranks"), 1 + (f.get("repeats") or 0))
         for f in fs]
notes = sorted({n["kind"] for n in r.get("notes", [])})
line = "findings=%d divergence=%d (occurrences %d) kinds=[%s] notes=[%s]" % (
    len(fs), len(div), occ, "; ".join(kinds), " ".join(notes))
want = os.environ.get("EXPECT_SEQ")
if want:
    hit = [f for f in div if f.get("seq") == int(want) and 1 in (f.get("ranks") or [])]
    line += " match=%s alone=%s" % ("yes" if hit else "no",
                                    "yes" if any(f["ranks"] == [1] for f in hit) else "no")
print(line)
PYEOF
}

# record NAME TIMEOUT CMD...: `ncclrr record --sketch` of CMD into $W/t-NAME, then check.
record() {
  local name=$1 limit=$2
  shift 2
  local t=$W/t-$name start=$SECONDS
  timeout -k 10 "$limit" "$N" record --sketch -o "$t" -- "$@" >"$W/$name.log" 2>&1
  local rc=$?
  tail -n 200 "$W/$name.log" >"$W/$name.record.txt"
  rm -f "$W/$name.log"
  "$N" check "$t" 2>&1 | head -n 300 >"$W/$name.check.txt"
  "$N" check "$t" --json >"$W/$name.json" 2>/dev/null
  say "-- $name: record rc=$rc in $((SECONDS - start)) s; $(summarize "$W/$name.json")"
}

# 1. The PyTorch job.
if [ "${DIVERGENCE_SKIP_TORCH:-0}" != 0 ]; then
  say "(the PyTorch job skipped: DIVERGENCE_SKIP_TORCH)"
elif "$PY" -c 'import torch, triton' >/dev/null 2>&1; then
  for victim in all_reduce broadcast; do
    case $victim in all_reduce) seq=12 ;; broadcast) seq=13 ;; esac
    name=flip-$victim
    record "$name" 240 "$PY" "$J/torch_output_flip.py" --port "$PORT" --victim "$victim" \
      --flip-step 4 --steps 8
    PORT=$((PORT + 1))
    grep -E "injected|corrupting|issued" "$W/$name.record.txt" | sed 's/^/   /' | tee -a "$W/summary.log"
    s=$(EXPECT_SEQ=$seq summarize "$W/$name.json")
    if ! grep -q "^injected: step 4 $victim" "$W/$name.record.txt"; then
      say "FAIL $name: the job did not show the injection (no 'injected: step 4 $victim' line)"
      failed=1
    elif [[ $s == *"match=yes"* ]]; then
      say "PASS $name: output_divergence at seq $seq naming rank 1$([[ $s == *"alone=yes"* ]] &&
        echo " (alone: the identity check told which output is wrong)")"
    else
      say "FAIL $name: no output_divergence at seq $seq naming rank 1 ($s)"
      failed=1
    fi
  done
  record flip-none 240 "$PY" "$J/torch_output_flip.py" --port "$PORT" --no-flip --steps 8
  PORT=$((PORT + 1))
  if [[ $(summarize "$W/flip-none.json") == findings=0* ]]; then
    say "PASS flip-none: the clean job gives no finding"
  else
    say "FAIL flip-none: the clean job gives findings (see flip-none.check.txt)"
    failed=1
  fi
  (cd "$W" && tar -czf torch-traces.tar.gz t-flip-* && rm -rf t-flip-*)
else
  say "FAIL torch job: no torch or triton in $PY"
  failed=1
fi

# 2. nccl-tests, two MPI ranks on the one GPU.
if [ ! -x "$NT/all_reduce_perf" ] && ! late; then
  say "building nccl-tests (tests/gpu/realjobs/build_extras.sh nccl-tests)"
  "$J/build_extras.sh" nccl-tests 2>&1 | tail -n 3 | tee -a "$W/summary.log"
fi
if [ -x "$NT/all_reduce_perf" ] && command -v mpirun >/dev/null; then
  MPIRUN=(mpirun --allow-run-as-root --oversubscribe -np 2 -x NCCL_SOCKET_IFNAME=lo
    -x NCCL_TESTS_DEVICE=0 -x NCCL_NVLS_ENABLE=0 -x NCCL_NSOCKS_PERTHREAD=4
    -x NCCL_SOCKET_NTHREADS=4)
  # shellcheck disable=SC2016  # expanded by the bash that mpirun starts
  HOSTID='export NCCL_HOSTID=host-$OMPI_COMM_WORLD_RANK; exec "$0" "$@"'
  # The collectives whose outputs are compared across ranks get every size from 8 B to 256 MB
  # (-f 2); the others every fourth (to 128 MB), to keep the run short.
  runs_list=(
    "all_reduce:-b 8 -e 256M -f 2"
    "broadcast:-b 8 -e 256M -f 2"
    "all_gather:-b 8 -e 256M -f 2"
    "reduce_scatter:-b 8 -e 256M -f 4"
    "reduce:-b 8 -e 256M -f 4"
    "alltoall:-b 8 -e 256M -f 4"
    "sendrecv:-b 8 -e 256M -f 4"
    "all_reduce:-b 8 -e 4M -f 8 -o all"
  )
  read -ra types <<<"$NT_TYPES"
  for dtype in "${types[@]}"; do
  for item in "${runs_list[@]}"; do
    t=${item%%:*}
    read -ra sizes <<<"${item#*:}"
    name=nccltests-$t$([[ ${item#*:} == *"-o all"* ]] && echo "-allops")$([ ${#types[@]} -gt 1 ] && echo "-$dtype")
    if late; then
      say "SKIPPED $name: past DIVERGENCE_DEADLINE_S=$DEADLINE"
      skipped=$((skipped + 1))
      continue
    fi
    # shellcheck disable=SC2086  # NT_ITERS is a list of flags
    record "$name" 200 "${MPIRUN[@]}" bash -c "$HOSTID" "$NT/${t}_perf" "${sizes[@]}" \
      -d "$dtype" -g 1 -c 1 $NT_ITERS
    runs=$((runs + 1))
    oob=$(grep -c "Out of bounds values : 0 OK" "$W/$name.record.txt")
    [ "$oob" -ge 1 ] || say "   $name: nccl-tests did not report 'Out of bounds values : 0 OK' (see $name.record.txt)"
    d=$("$PY" -c 'import json,sys
try: r = json.load(open(sys.argv[1]))
except Exception: print(-1); sys.exit()
print(sum(1 + (f.get("repeats") or 0) for f in r["findings"] if f["kind"] == "output_divergence"))' "$W/$name.json")
    if [ "$d" -ne 0 ]; then
      say "FAIL $name: $d output_divergence occurrence(s) on a clean run (-1: no JSON)"
      failed=1
      [ "$d" -gt 0 ] && total_div=$((total_div + d))
    fi
    rm -rf "$W/t-$name"
  done
  done
  say "$([ "$total_div" -eq 0 ] && echo PASS || echo FAIL) nccl-tests: $total_div output_divergence occurrence(s) over $runs run(s), $skipped skipped"
else
  say "FAIL nccl-tests: no $NT/all_reduce_perf (tests/gpu/realjobs/build_extras.sh nccl-tests) or no mpirun"
  failed=1
fi

say "== done in $((SECONDS - T0)) s"
if [ "$failed" -ne 0 ]; then
  say "RESULT: FAIL"
elif [ "$skipped" -ne 0 ]; then
  say "RESULT: INCOMPLETE ($skipped nccl-tests run(s) skipped: raise DIVERGENCE_DEADLINE_S)"
  failed=1
else
  say "RESULT: PASS"
fi
cp "$W/summary.log" "$OUT/divergence-summary.log"
exit "$failed"
