#!/usr/bin/env bash
# Builds the trace-reader fuzzer with clang (libFuzzer + ASan + UBSan) in build-fuzz/ and runs
# it for SECONDS (default 30), seeded with real traces. Exit status is the fuzzer's.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-30}"
build="$root/build-fuzz"
"$root/scripts/install-deps.sh"
if [ ! -f "$build/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DNCCLRR_BUILD_FUZZERS=ON -DNCCLRR_BUILD_VIEWER=OFF -DCMAKE_CUDA_COMPILER=OFF >/dev/null
fi
cmake --build "$build" --target reader_fuzzer >/dev/null
corpus="$build/fuzz-corpus"
mkdir -p "$corpus"
# Seeds: real traces from the main build's demo, when it exists.
ncclrr="${NCCLRR_BUILD_DIR:-$root/build}/bin/ncclrr"
if [ -z "$(ls -A "$corpus")" ] && [ -x "$ncclrr" ]; then
  "$ncclrr" demo -o "$build/fuzz-seed" >/dev/null 2>&1 || true
  find "$build/fuzz-seed" -name '*.ncclrr' -exec cp {} "$corpus/" \; 2>/dev/null || true
fi
echo "== fuzzing the trace reader for ${seconds}s"
"$build/bin/reader_fuzzer" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 \
  -print_final_stats=1 "$corpus" 2>&1 | tail -n 12
