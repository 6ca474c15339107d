#!/usr/bin/env bash
# Configures (once) and builds ncclrr into build/. Incremental on later runs.
# Environment: NCCLRR_BUILD_DIR (default build), NCCLRR_WERROR=ON in CI, NCCLRR_JOBS.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${NCCLRR_BUILD_DIR:-$root/build}"
"$root/scripts/install-deps.sh"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DNCCLRR_WERROR="${NCCLRR_WERROR:-OFF}" ${NCCLRR_CMAKE_ARGS:-} >/dev/null
fi
cmake --build "$build" -j "${NCCLRR_JOBS:-$(nproc)}"
