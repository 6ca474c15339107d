#!/usr/bin/env bash
# Configures and builds ncclrr on the GPU machine (16 cores, nvcc, no FlatBuffers/GTest/zstd
# headers): those come from .gpu-deps/usr, a copy of this machine's Debian packages made by
# tests/gpu/make_gpu_deps.sh and carried with the run. Build dir: build-dev.
# NCCLRR_DEVICE_TARGETS="ncclrr ncclrr_interpose ..." builds only those targets.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
export PATH=$ROOT/.gpu-deps/usr/bin:$PATH
cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DNCCLRR_BUILD_VIEWER=OFF \
  -DCMAKE_PREFIX_PATH="$ROOT/.gpu-deps/usr" -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DNCCL_INCLUDE_DIR=${NCCLRR_NCCL_INCLUDE:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/include} >"${OUT:-.}/build.log" 2>&1
# NCCLRR_DEVICE_TARGETS: build only these (e.g. the programs a run needs), not every test.
# shellcheck disable=SC2086
ninja -C build-dev -k 0 ${NCCLRR_DEVICE_TARGETS:-} >>"${OUT:-.}/build.log" 2>&1 ||
  { tail -n 40 "${OUT:-.}/build.log"; exit 1; }
tail -n 2 "${OUT:-.}/build.log"
