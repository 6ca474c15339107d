#!/usr/bin/env bash
# GPU acceptance of the interposer and `ncclrr record` (issue 4) on real NCCL. Builds nothing:
# run after tests/gpu/build_on_device.sh (build-dev) or with build/ carried. On one GPU it runs
# the steps one H200 allows (one-rank communicators); with two GPUs it adds the 2-rank variants.
#   1. real NCCL, one process: bench-interposer-gpu (direct link) recorded; comm id equals the
#      commId NCCL prints; CUDA graph templates and launches recorded
#   2. PyTorch (NCCL inside an RTLD_LOCAL extension): a few hundred collectives, then a CUDA graph
#   3. JAX pmap psum (NCCL reached by dlopen + dlsym)
#   4. ncclrr-example --backend nccl (--group with two GPUs)
#   5. results identical with and without recording, in full and flight-recorder mode
# Logs: $OUT/interposer/*.log, one PASS/FAIL line per check in $OUT/interposer/summary.log.
# Exit status 1 when a check failed. The latency benchmark is tests/gpu/interposer_bench.sh.
set -u
source "$(dirname "$0")/gputiming_env.sh"
W=$OUT/interposer
rm -rf "$W"
mkdir -p "$W"
NGPU=$(nvidia-smi -L 2>/dev/null | wc -l)
N=$BUILD/bin/ncclrr
EX=$BUILD/bin/ncclrr-example
BENCH=$BUILD/bin/bench-interposer-gpu
STATS=$BUILD/tests/interposer/interposer-trace-stats
FAILED=0

say() { echo "$*" | tee -a "$W/summary.log"; }
pass() { say "PASS $1"; }
fail() { say "FAIL $1${2:+: $2}"; FAILED=1; }
run() {  # run NAME CMD...: output in $W/NAME.log; returns the command's status
  local name=$1; shift
  local t0=$(date +%s)
  timeout -k 5 "${NCCLRR_RUN_TIMEOUT_S:-90}" "$@" >"$W/$name.log" 2>&1
  local rc=$?
  echo "$(printf '%-32s rc=%-3s %4ss' "$name" "$rc" "$(( $(date +%s) - t0 ))")" >>"$W/runs.log"
  return $rc
}
expect_rc() {  # expect_rc NAME WANT CMD...
  local name=$1 want=$2; shift 2
  run "$name" "$@"
  local rc=$?
  if [ "$rc" = "$want" ]; then pass "$name (rc $rc)"; else fail "$name" "rc $rc, want $want (see $name.log)"; fi
}
check() {  # check NAME TRACE_DIR PYTHON_CONDITION: s = stats JSON, f = s["files"]
  local name=$1 dir=$2 cond=$3
  if ! "$STATS" "$dir" >"$W/$name.json" 2>"$W/$name.err"; then
    fail "$name" "no readable trace in $dir"
    return
  fi
  if "$PY" - "$W/$name.json" "$cond" <<'EOF' >>"$W/$name.err" 2>&1; then
import json, sys
s = json.load(open(sys.argv[1])); f = s["files"]
def total(api): return sum(x["apis"].get(api, 0) for x in f)
ok = eval(sys.argv[2])
if not ok: print("condition failed:", sys.argv[2]); print(json.dumps(s, indent=1)[:4000])
sys.exit(0 if ok else 1)
EOF
    pass "$name"
  else
    fail "$name" "$(head -c 300 "$W/$name.err" | tr '\n' ' ')"
  fi
}
same_output() {  # same_output NAME FILE_A FILE_B PATTERN: the matching texts are identical
  local a b
  # -o: processes of one job may print onto one line; compare the matches, not the lines.
  a=$(grep -oE "$4" "$2" | sort)
  b=$(grep -oE "$4" "$3" | sort)
  if [ -n "$a" ] && [ "$a" = "$b" ]; then pass "$1"; else fail "$1" "'$4' lines differ: $2 vs $3"; fi
}

say "interposer acceptance: gpus=$NGPU build=$BUILD nccl=$NCCL_DIR"
for f in "$N" "$BENCH" "$STATS" "$BUILD/lib/libncclrr-interpose.so"; do
  [ -e "$f" ] || { fail "setup" "$f is missing (build first)"; exit 1; }
done

# 1. Real NCCL, direct link, one rank: the loop, then a CUDA graph of 3 allreduces launched 10x.
expect_rc bench1-plain 0 "$BENCH" --group 1 --iters 200 --graph 3
expect_rc bench1-record 0 env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT "$N" record -o "$W/t-bench1" -- "$BENCH" --group 1 --iters 200 --graph 3
check bench1-trace "$W/t-bench1" 'len(f) == 1 and f[0]["route"] == "preload" and f[0]["nccl_version"] >= 22800 and f[0]["clean"] and f[0]["dropped"] == 0 and total("AllReduce") >= 6 * 250 and f[0]["live_seq_ok"] and len(f[0]["comms"]) == 1 and f[0]["comms"][0]["known"] == 1'
check bench1-graph "$W/t-bench1" 'f[0]["templates"] == 3 and f[0]["graph"]["instantiate"] == 1 and f[0]["graph"]["launch"] == 10'
# NCCL prints "commId 0x..." (its commHash of a root communicator) at init: ncclrr's id must match.
nccl_id=$(grep -oE 'commId 0x[0-9a-f]+' "$W/bench1-record.log" | head -n 1 | awk '{print $2}')
if [ -n "$nccl_id" ]; then
  check bench1-commhash-equals-nccl "$W/t-bench1" "int('$nccl_id', 16) in [int(c, 16) for c in s['comm_ids']]"
else
  fail bench1-commhash-equals-nccl "no 'commId 0x...' line in bench1-record.log (NCCL_DEBUG=INFO)"
fi
same_output bench1-results-identical "$W/bench1-plain.log" "$W/bench1-record.log" '^(check|graph) .*'
expect_rc bench1-ring 0 "$N" record --ring 1000 -o "$W/t-bench1-ring" -- "$BENCH" --group 1 --iters 200 --graph 3
same_output bench1-ring-results-identical "$W/bench1-plain.log" "$W/bench1-ring.log" '^(check|graph) .*'
check bench1-ring-trace "$W/t-bench1-ring" 'f[0]["calls"] >= 900 and f[0]["calls"] <= 1100'

# 2. PyTorch, one process (world size 1), plain and with a CUDA graph.
expect_rc torch1-plain 0 env NCCLRR_JOB_GRAPH=1 "$PY" "$ROOT/tests/gpu/interposer_torch_job.py"
expect_rc torch1-record 0 env NCCLRR_JOB_GRAPH=1 "$N" record -o "$W/t-torch1" -- "$PY" "$ROOT/tests/gpu/interposer_torch_job.py"
same_output torch1-results-identical "$W/torch1-plain.log" "$W/torch1-record.log" '(rank [0-9]+ |jax devices [0-9]+ )?checksum [0-9.e+-]+'
# (torch makes no NCCL call for reduce_scatter at world size 1: it copies.)
check torch1-trace "$W/t-torch1" 'len(f) == 1 and f[0]["route"] == "preload" and total("AllReduce") >= 50 and total("AllGather") >= 50 and total("Bcast") >= 50 and f[0]["live_seq_ok"] and f[0]["clean"]'
check torch1-graph "$W/t-torch1" 'f[0]["templates"] >= 3 and f[0]["graph"]["launch"] >= 10'
expect_rc torch1-ring 0 env NCCLRR_JOB_GRAPH=1 "$N" record --ring 64 -o "$W/t-torch1-ring" -- "$PY" "$ROOT/tests/gpu/interposer_torch_job.py"
same_output torch1-ring-results-identical "$W/torch1-plain.log" "$W/torch1-ring.log" '(rank [0-9]+ |jax devices [0-9]+ )?checksum [0-9.e+-]+'

# 3. JAX on one device (XLA may need no NCCL call for one device: reported, not required).
expect_rc jax1-plain 0 "$PY" "$ROOT/tests/gpu/interposer_jax_job.py"
expect_rc jax1-record 0 "$N" record -o "$W/t-jax1" -- "$PY" "$ROOT/tests/gpu/interposer_jax_job.py"
same_output jax1-results-identical "$W/jax1-plain.log" "$W/jax1-record.log" '(rank [0-9]+ |jax devices [0-9]+ )?checksum [0-9.e+-]+'
say "info jax1: $(grep -h 'ncclrr: ' "$W/jax1-record.log" | tail -n 1)"

# 4. ncclrr-example on real NCCL.
if [ -x "$EX" ]; then
  expect_rc example1-plain 0 env NCCLRR_NCCL_LIBRARY=$NCCL_DIR/libnccl.so.2 "$EX" clean --backend nccl --ranks 1 --steps 4
  expect_rc example1-record 0 env NCCLRR_NCCL_LIBRARY=$NCCL_DIR/libnccl.so.2 "$N" record -o "$W/t-example1" -- "$EX" clean --backend nccl --ranks 1 --steps 4
  same_output example1-results-identical "$W/example1-plain.log" "$W/example1-record.log" '(step [0-9]+|total): #wrong [0-9]+'
  check example1-trace "$W/t-example1" 'total("AllReduce") > 0 and all(x["live_seq_ok"] for x in f)'
fi

# 2-GPU variants.
if [ "$NGPU" -ge 2 ]; then
  TR="$PY -m torch.distributed.run --nproc-per-node 2 --master-port 29571"
  expect_rc torch2-plain 0 env NCCLRR_JOB_GRAPH=1 $TR "$ROOT/tests/gpu/interposer_torch_job.py"
  expect_rc torch2-record 0 env NCCLRR_JOB_GRAPH=1 "$N" record -o "$W/t-torch2" -- $TR "$ROOT/tests/gpu/interposer_torch_job.py"
  same_output torch2-results-identical "$W/torch2-plain.log" "$W/torch2-record.log" '(rank [0-9]+ |jax devices [0-9]+ )?checksum [0-9.e+-]+'
  check torch2-trace "$W/t-torch2" 'len(f) == 2 and all(x["clean"] and x["live_seq_ok"] and x["dropped"] == 0 for x in f) and total("Send") >= 100 and total("Recv") >= 100 and total("AllReduce") >= 100 and total("ReduceScatter") >= 100'
  check torch2-comm-ids-equal "$W/t-torch2" 'len({c["id"] for c in f[0]["comms"] if c["nranks"] == 2}) >= 1 and {c["id"] for c in f[0]["comms"] if c["nranks"] == 2} == {c["id"] for c in f[1]["comms"] if c["nranks"] == 2}'
  check torch2-graph "$W/t-torch2" 'all(x["templates"] >= 3 and x["graph"]["launch"] >= 10 for x in f)'
  expect_rc jax2-plain 0 "$PY" "$ROOT/tests/gpu/interposer_jax_job.py"
  expect_rc jax2-record 0 "$N" record -o "$W/t-jax2" -- "$PY" "$ROOT/tests/gpu/interposer_jax_job.py"
  same_output jax2-results-identical "$W/jax2-plain.log" "$W/jax2-record.log" '(rank [0-9]+ |jax devices [0-9]+ )?checksum [0-9.e+-]+'
  check jax2-trace "$W/t-jax2" 'len(f) == 1 and f[0]["route"] == "preload" and total("AllReduce") >= 5 and f[0]["live_seq_ok"]'
  if [ -x "$EX" ]; then
    expect_rc example2-plain 0 env NCCLRR_NCCL_LIBRARY=$NCCL_DIR/libnccl.so.2 "$EX" clean --backend nccl --ranks 2 --group --steps 4
    expect_rc example2-record 0 env NCCLRR_NCCL_LIBRARY=$NCCL_DIR/libnccl.so.2 "$N" record -o "$W/t-example2" -- "$EX" clean --backend nccl --ranks 2 --group --steps 4
    same_output example2-results-identical "$W/example2-plain.log" "$W/example2-record.log" '(step [0-9]+|total): #wrong [0-9]+'
    check example2-trace "$W/t-example2" 'len(f) == 1 and len({c["rank"] for c in f[0]["comms"]}) == 2 and f[0]["live_seq_ok"]'
  fi
  # Two processes of the latency loop, with a graph: ids equal across processes.
  rm -f "$W/id2"
  run bench2-record "$N" record -o "$W/t-bench2" -- sh -c "'$BENCH' --rank 0 --nranks 2 --id '$W/id2' --iters 200 --graph 3 & '$BENCH' --rank 1 --nranks 2 --id '$W/id2' --iters 200 --graph 3; wait"
  grep -q "check ok" "$W/bench2-record.log" && pass "bench2-results" || fail "bench2-results" "see bench2-record.log"
  check bench2-trace "$W/t-bench2" 'len(f) == 2 and len(s["comm_ids"]) == 1 and all(x["templates"] == 3 and x["graph"]["launch"] == 10 and x["live_seq_ok"] for x in f)'
else
  say "SKIP 2-GPU variants: $NGPU GPU(s)"
fi

say "$(grep -c '^PASS' "$W/summary.log") passed, $(grep -c '^FAIL' "$W/summary.log") failed"
exit $FAILED
