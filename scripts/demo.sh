#!/usr/bin/env bash
# The README's first command: installs what is missing, builds, then tells the story of the
# bug ncclrr exists for. Incremental on a second run.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${NCCLRR_BUILD_DIR:-$root/build}"
"$root/scripts/build.sh" >/dev/null
exec "$build/bin/ncclrr" demo "$@"
