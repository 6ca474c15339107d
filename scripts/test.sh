#!/usr/bin/env bash
# The README's second command: installs what is missing, builds, runs every test with ctest and
# prints ctest's summary. Exit status is ctest's.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${NCCLRR_BUILD_DIR:-$root/build}"
"$root/scripts/build.sh"
cd "$build"
ctest --output-on-failure -j "${NCCLRR_JOBS:-$(nproc)}" --timeout 300 "$@"
