#!/usr/bin/env bash
# Builds the fuzzers with clang (libFuzzer + ASan + UBSan) in build-fuzz/ and runs each for
# SECONDS (default 30), seeded with real traces:
#   reader_fuzzer      arbitrary bytes as a trace file (the reader's framing and checksums)
#   structured_fuzzer  checksum-valid mutations of real traces through every reading path
#                      (reader, follower, model, checkers, replay plan, export, live status)
#   fr_fuzzer          arbitrary bytes as a PyTorch Flight Recorder dump (pickle and JSON readers)
#   nccl_log_fuzzer    arbitrary bytes as NCCL/RCCL console logs (import-nccl-log's reader and
#                      inference; half the time, seeded with tests/data/nccl-logs)
# Exit status: the first fuzzer that failed, else 0. FUZZ_RUNS=N runs the structured fuzzer for
# N inputs instead (reports the count); crashers land in build-fuzz/crashes/.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-30}"
build="$root/build-fuzz"
"$root/scripts/install-deps.sh"
flags="-fsanitize=address,undefined -fsanitize=fuzzer-no-link"
if [ ! -f "$build/build.ninja" ] || ! grep -q "CMAKE_CXX_FLAGS:STRING=$flags\$" "$build/CMakeCache.txt"; then
  rm -rf "$build"
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DNCCLRR_BUILD_FUZZERS=ON -DNCCLRR_BUILD_VIEWER=OFF -DCMAKE_CUDA_COMPILER=OFF \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" >/dev/null
fi
cmake --build "$build" --target reader_fuzzer structured_fuzzer fr_fuzzer nccl_log_fuzzer \
  >"$build/build.log" 2>&1 ||
  { tail -n 30 "$build/build.log"; exit 1; }
corpus="$build/fuzz-corpus"
mkdir -p "$corpus" "$build/crashes"
# Seeds: real traces from the main build's demo, and the real-job traces of tests/data/real.
ncclrr="${NCCLRR_BUILD_DIR:-$root/build}/bin/ncclrr"
if [ -z "$(ls -A "$corpus")" ]; then
  if [ -x "$ncclrr" ]; then
    "$ncclrr" demo -o "$build/fuzz-seed" >/dev/null 2>&1 || true
    find "$build/fuzz-seed" -name '*.ncclrr' -exec cp {} "$corpus/" \; 2>/dev/null || true
  fi
  find "$root/tests/data/real" -name '*.ncclrr' -size -12k | while read -r f; do
    cp "$f" "$corpus/$(basename "$(dirname "$f")")-$(basename "$f")"
  done
fi
export UBSAN_OPTIONS=print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1
status=0
echo "== fuzzing the trace reader for ${seconds}s"
"$build/bin/reader_fuzzer" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 \
  -artifact_prefix="$build/crashes/" -print_final_stats=1 "$corpus" 2>&1 | tail -n 12 ||
  status=$?
fr_seconds=$((seconds < 10 ? seconds : 10))  # a small reader: a few seconds cover it
echo "== fuzzing the Flight Recorder dump readers for ${fr_seconds}s"
frcorpus="$build/fr-corpus"
mkdir -p "$frcorpus"
find "$root/tests/data/fr" -name 'nccl_trace_rank_*' -size -64k | while read -r f; do
  cp "$f" "$frcorpus/$(basename "$(dirname "$f")")-$(basename "$f")"
done
"$build/bin/fr_fuzzer" -max_total_time="$fr_seconds" -max_len=65536 -rss_limit_mb=2048 \
  -artifact_prefix="$build/crashes/" -print_final_stats=1 "$frcorpus" 2>&1 | tail -n 12 ||
  status=$?
limit="-max_total_time=$seconds"
[ -n "${FUZZ_RUNS:-}" ] && limit="-runs=$FUZZ_RUNS"
echo "== structure-aware fuzzing of every reading path (${FUZZ_RUNS:-${seconds}s})"
scorpus="$build/structured-corpus"
mkdir -p "$scorpus"
# -entropic=0: with this many coverage features libFuzzer's entropic scheduling took 60% of the
# time (3x fewer inputs a second).
"$build/bin/structured_fuzzer" "$limit" -entropic=0 -max_len=16384 -rss_limit_mb=4096 -timeout=20 \
  -artifact_prefix="$build/crashes/" -print_final_stats=1 "$scorpus" "$corpus" 2>&1 |
  grep -E "^(Done|==|SUMMARY|stat::number_of_executed_units|stat::peak_rss)" | tail -n 12 ||
  status=$?
echo "== fuzzing the NCCL log reader for $(((seconds + 1) / 2))s"
lcorpus="$build/nccl-log-corpus"
mkdir -p "$lcorpus"
cp "$root"/tests/data/nccl-logs/*.log "$lcorpus/" 2>/dev/null || true
"$build/bin/nccl_log_fuzzer" -max_total_time="$(((seconds + 1) / 2))" -max_len=16384 \
  -rss_limit_mb=2048 -timeout=10 -artifact_prefix="$build/crashes/" -print_final_stats=1 \
  "$lcorpus" 2>&1 | grep -E "^(Done|==|SUMMARY|stat::number_of_executed_units|stat::peak_rss)" |
  tail -n 12 || status=$?
exit "$status"
