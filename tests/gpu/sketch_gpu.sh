#!/usr/bin/env bash
# GPU acceptance of the sketch kernels (one GPU is enough): SketchDevice must equal the host
# implementation bit for bit on every datatype at 1, 7, 4096, 4097, 1 M and 64 M elements (full,
# race and multi-block layouts, misaligned buffers), respect stream order, work inside a CUDA
# graph capture, and report its bandwidth against a read-only kernel and a device copy, plus the
# cost of small sketches against an empty kernel. Builds nothing: run with build/ carried (or
# NCCLRR_BUILD_DIR=build-dev after tests/gpu/build_on_device.sh). Logs: $OUT/sketch.
# Exit: 0 all checks passed, 1 a check failed, 2 could not run.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${NCCLRR_BUILD_DIR:-$ROOT/build}
[ -x "$BUILD/tests/sketch_gpu_check" ] || BUILD=$ROOT/build-dev
OUT=${OUT:-$ROOT/gpu-out}
W=$OUT/sketch
mkdir -p "$W"
export NCCL_NVLS_ENABLE=0
CHECK=$BUILD/tests/sketch_gpu_check
if [ ! -x "$CHECK" ]; then
  echo "sketch_gpu_check not found in $BUILD/tests: build with CUDA (nvcc) first" | tee "$W/summary.log"
  exit 2
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >"$W/nvidia-smi.csv" 2>&1
# The host-side unit tests too (identities, tolerance, emulator), when they were built.
if [ -x "$BUILD/tests/sketch_tests" ]; then
  "$BUILD/tests/sketch_tests" --gtest_brief=1 >"$W/sketch_tests.log" 2>&1
  echo "sketch_tests: exit $? ($(tail -n 1 "$W/sketch_tests.log"))" | tee "$W/summary.log"
fi
timeout 900 "$CHECK" --out "$W" --bench-mb "${SKETCH_BENCH_MB:-1024}" 2>&1 | tee "$W/check.log"
rc=${PIPESTATUS[0]}
echo "sketch_gpu_check: exit $rc" | tee -a "$W/summary.log"
exit "$rc"
