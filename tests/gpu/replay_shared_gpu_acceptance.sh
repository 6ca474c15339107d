#!/usr/bin/env bash
# Real-NCCL replay with ranks sharing GPUs (docs/replay.md "Reproduce a many-GPU bug on one
# GPU"), on the GPU test machine, usually one H200. Sections (SHARED_ONLY="examples torch ..."
# runs a subset):
#   examples  every ncclrr-example scenario recorded on real NCCL as SHARED_RANKS (default
#             "2 4") processes sharing the GPU, checked, then replayed --order recorded,canonical
#             on the nccl backend (one process per rank on the GPU) and on the host backend: the
#             verdicts must match the expected table (tests/replayer/scenarios_test.cc) on both.
#   torch     a 4-process PyTorch job whose rank 1 swaps two same-size allreduces on odd steps:
#             recorded wrong, canonical right, on the nccl backend on one GPU.
#   mpi       the same trace under `mpirun -np 4 ncclrr replay --mpi`: the same summary.
#   eight     an 8-rank trace replayed on the GPU.
#   memory    a trace whose buffers cannot fit is refused, saying how much it needs.
#   busbw     a 1-256 MiB allreduce loop, 2 ranks on the GPU: the job's busbw and the replay's.
# Usage: tests/gpu/replay_shared_gpu_acceptance.sh (after tests/gpu/build_on_device.sh).
# Writes $OUT/shared_gpu.log (one line per check, the verdict table, times) and the reports under
# $OUT/shared_gpu/. Exit 0 when every check passed.
set -u
source "$(dirname "$0")/gputiming_env.sh"
export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} NCCLRR_NCCL_LIBRARY=$NCCL_DIR/libnccl.so.2
N=$BUILD/bin/ncclrr
EX=$BUILD/bin/ncclrr-example
JOB=$ROOT/tests/gpu/replayer_torch_job.py
LOG=$OUT/shared_gpu.log
REP=$OUT/shared_gpu
WORK=$(mktemp -d /tmp/ncclrr-shared-XXXXXX)
mkdir -p "$REP"
: >"$LOG"
failures=0
say() { echo "$*" | tee -a "$LOG"; }
check() {  # check WHAT CONDITION...
  local what=$1; shift
  if "$@"; then say "PASS $what"; else say "FAIL $what"; failures=$((failures + 1)); fi
}
want() { [ -n "${SHARED_ONLY:-}" ] && [[ " $SHARED_ONLY " != *" $1 "* ]] && return 1; return 0; }
# outcomes JSON: "recorded-outcome canonical-outcome" (or "error")
outcomes() {
  "$PY" -c 'import json,sys
try: d=json.load(open(sys.argv[1])); print(" ".join(r["outcome"] for r in d["results"]))
except Exception: print("error")' "$1"
}
mode() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1])).get("mode",""))' "$1" 2>/dev/null; }
# replay LABEL DIR ARGS...: JSON under $REP/LABEL.json (text: LABEL.txt); sets RC and SECS.
replay() {
  local label=$1 dir=$2; shift 2
  local t0=$(date +%s.%N)
  timeout 120 "$N" replay "$dir" "$@" --json >"$REP/$label.json" 2>"$REP/$label.err"
  RC=$?
  SECS=$("$PY" -c "print(f'{$(date +%s.%N) - $t0:.1f}')")
  [ "${REPLAY_TEXT:-0}" = 1 ] && "$N" replay "$dir" "$@" >"$REP/$label.txt" 2>/dev/null
}
# The verdicts of traces recorded on real NCCL. They are tests/replayer/scenarios_test.cc's but
# for root-mismatch: on real NCCL the recorded job itself hangs in the broadcast whose roots
# differ, so its trace ends there (a missing call after the wrong broadcast) and every order hangs.
expected() {
  case $1 in
    clean | send-race) echo "right right" ;;
    swap-same-size | swap-diff-size) echo "wrong right" ;;
    root-mismatch) echo "hang hang" ;;
    count-mismatch | dtype-mismatch) echo "wrong wrong" ;;
    missing-collective | p2p-mismatch) echo "hang hang" ;;
    cross-comm-order) echo "hang right" ;;
  esac
}

GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
say "== machine: $GPUS GPU(s); NCCL $("$PY" -c 'import torch; print(torch.cuda.nccl.version())' 2>/dev/null)"

if want examples; then
  say "== examples: recorded as processes sharing $GPUS GPU(s), replayed on both backends"
  say "$(printf '%-18s %5s %6s %-24s %-14s %-14s %-14s %7s %7s' scenario ranks rec_rc check nccl host expected nccl_s host_s)"
  for n in ${SHARED_RANKS:-2 4}; do
    for sc in clean swap-same-size swap-diff-size count-mismatch missing-collective send-race \
      dtype-mismatch root-mismatch p2p-mismatch cross-comm-order; do
      t=$WORK/$sc-$n
      NCCLRR_EXAMPLE_WATCHDOG_S=${WATCHDOG_S:-8} timeout 120 "$N" record -o "$t" -- \
        "$EX" "$sc" --backend nccl --ranks "$n" --processes >"$REP/$sc-$n.record.log" 2>&1
      rec=$?
      kinds=$("$N" check "$t" --json 2>/dev/null | "$PY" -c 'import json,sys
try: print(",".join(sorted({f["kind"] for f in json.load(sys.stdin)["findings"]})) or "-")
except Exception: print("unreadable")')
      replay "$sc-$n-nccl" "$t" --backend nccl --order recorded,canonical --timeout 4
      got_nccl=$(outcomes "$REP/$sc-$n-nccl.json") nccl_s=$SECS
      [ -z "${mode_line:-}" ] && mode_line=$(mode "$REP/$sc-$n-nccl.json")
      replay "$sc-$n-host" "$t" --backend host --order recorded,canonical --timeout 4
      got_host=$(outcomes "$REP/$sc-$n-host.json") host_s=$SECS
      exp=$(expected "$sc")
      say "$(printf '%-18s %5s %6s %-24s %-14s %-14s %-14s %7s %7s' "$sc" "$n" "$rec" "$kinds" \
        "${got_nccl// //}" "${got_host// //}" "${exp// //}" "$nccl_s" "$host_s")"
      check "$sc $n ranks: nccl backend verdicts are the table's" [ "$got_nccl" = "$exp" ]
      check "$sc $n ranks: host and nccl backends agree" [ "$got_nccl" = "$got_host" ]
    done
  done
  say "   nccl mode: $mode_line"
fi

if want torch || want mpi; then
  say "== torch: 4 PyTorch processes on $GPUS GPU(s), rank 1 swaps two same-size allreduces on odd steps"
  t=$WORK/torch4
  timeout 300 "$N" record -o "$t" -- "$PY" -m torch.distributed.run --standalone \
    --nproc-per-node 4 "$JOB" swap --steps 6 >"$REP/torch4.record.log" 2>&1
  say "   record exit $?; job: $(grep -o '#wrong [0-9]*' "$REP/torch4.record.log" | tr '\n' ' ')"
  check "torch: the recorded job itself saw wrong sums" grep -q '#wrong [1-9]' "$REP/torch4.record.log"
  REPLAY_TEXT=1 replay torch4-nccl "$t" --backend nccl --order recorded,canonical
  say "   nccl: $(outcomes "$REP/torch4-nccl.json") in $SECS s; $(grep '^summary' "$REP/torch4-nccl.txt")"
  say "   $(grep '^mode' "$REP/torch4-nccl.txt")"
  check "torch 4 ranks on one GPU: recorded wrong, canonical right" \
    [ "$(outcomes "$REP/torch4-nccl.json")" = "wrong right" ]
  if want mpi; then
    say "== mpi: mpirun -np 4 ncclrr replay --mpi on the same trace"
    t0=$(date +%s.%N)
    timeout 300 mpirun --allow-run-as-root --oversubscribe -np 4 -x NCCL_SOCKET_IFNAME -x NCCL_NVLS_ENABLE \
      -x LD_LIBRARY_PATH -x NCCLRR_NCCL_LIBRARY "$N" replay "$t" --backend nccl --mpi \
      --order recorded,canonical >"$REP/torch4-mpi.txt" 2>"$REP/torch4-mpi.err"
    rc=$?
    say "   mpirun exit $rc in $("$PY" -c "print(f'{$(date +%s.%N) - $t0:.1f}')") s; $(grep '^mode' "$REP/torch4-mpi.txt")"
    say "   $(grep '^summary' "$REP/torch4-mpi.txt")"
    check "mpirun --mpi on one GPU gives the same summary" \
      [ "$(grep '^summary' "$REP/torch4-mpi.txt")" = "$(grep '^summary' "$REP/torch4-nccl.txt")" ]
    check "mpirun --mpi: the same report but for the mode line" \
      diff <(grep -v '^mode' "$REP/torch4-mpi.txt") <(grep -v '^mode' "$REP/torch4-nccl.txt")
  fi
fi

if want eight; then
  say "== eight: an 8-rank trace on $GPUS GPU(s)"
  t=$WORK/swap-8
  NCCLRR_EXAMPLE_WATCHDOG_S=30 timeout 180 "$N" record -o "$t" -- "$EX" swap-same-size \
    --backend nccl --ranks 8 --processes >"$REP/swap-8.record.log" 2>&1
  say "   record exit $?; $(tail -n 1 "$REP/swap-8.record.log")"
  replay swap-8-nccl "$t" --backend nccl --order recorded,canonical
  say "   $(outcomes "$REP/swap-8-nccl.json") in $SECS s; mode: $(mode "$REP/swap-8-nccl.json")"
  check "8 ranks on one GPU: recorded wrong, canonical right" \
    [ "$(outcomes "$REP/swap-8-nccl.json")" = "wrong right" ]
fi

if want memory; then
  say "== memory: buffers that cannot fit are refused"
  "$BUILD/bin/bench-replay" gen "$WORK/huge" 4 2 $((1 << 30)) >/dev/null 2>&1
  replay huge "$WORK/huge" --backend nccl
  say "   exit $RC: $(cat "$REP/huge.err" | tail -n 1)"
  check "a 4-rank trace of 4 GiB allreduces on one GPU is refused (exit 2)" [ "$RC" = 2 ]
  check "the refusal says how much memory it needs" grep -q "MiB needed on that GPU" "$REP/huge.err"
fi

if want busbw; then
  say "== busbw: 2 ranks sharing one GPU, 1-256 MiB allreduce loop (the cost of the mode, not NCCL's)"
  say "$(printf '%8s %14s %14s %10s' MiB job_GB/s replay_GB/s replay_s)"
  for mb in 1 16 64 256; do
    t=$WORK/bw$mb
    NCCL_ALGO=Ring NCCL_PROTO=Simple timeout 300 "$N" record -o "$t" -- "$PY" -m torch.distributed.run \
      --standalone --nproc-per-node 2 "$JOB" loop --mb $mb --iters $((mb >= 64 ? 20 : 100)) \
      >"$REP/bw$mb.record.log" 2>&1
    job=$(grep -o 'busbw_gbps [0-9.]*' "$REP/bw$mb.record.log" | awk '{print $2}')
    NCCLRR_REPLAY_TIMING=1 replay "bw$mb" "$t" --backend nccl --no-verify
    rep=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][0]["timing"]["bus_gbps"])' \
      "$REP/bw$mb.json" 2>/dev/null)
    say "$(printf '%8s %14s %14s %10s' "$mb" "${job:-?}" "${rep:-?}" "$SECS")"
    check "busbw $mb MiB: replayed (exit $RC)" [ "$RC" = 0 ]
  done
fi

tar -C "$WORK" -czf "$OUT/shared_gpu_traces.tar.gz" . 2>/dev/null
say "== done: $failures failure(s)"
rm -rf "$WORK"
[ "$failures" = 0 ]
