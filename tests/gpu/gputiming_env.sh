# Sourced by the tests/gpu scripts: where things are on the GPU test machine. The build is
# NCCLRR_BUILD_DIR, else build-dev when tests/gpu/build_on_device.sh made one, else build.
# Overridable: NCCLRR_BUILD_DIR, OUT, NCCLRR_NCCL_DIR, PYTHON.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DEFAULT_BUILD=$ROOT/build
[ -x "$ROOT/build-dev/bin/ncclrr" ] && DEFAULT_BUILD=$ROOT/build-dev
BUILD=$(cd "${NCCLRR_BUILD_DIR:-$DEFAULT_BUILD}" && pwd)
OUT=${OUT:-$ROOT/gpu-out}
mkdir -p "$OUT"
NCCL_DIR=${NCCLRR_NCCL_DIR:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib}
PY=${PYTHON:-/opt/torch/.venv/bin/python3}
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH=$NCCL_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
[ -x "$PY" ] || PY=python3  # a machine without the PyTorch venv (the host NCCL runs)

# finding_kinds TRACE: the sorted "kind@seq" of every finding `ncclrr check` reports, space
# separated; UNREADABLE when check gives no JSON.
finding_kinds() {
  "$BUILD/bin/ncclrr" check "$1" --json 2>/dev/null | "$PY" -c '
import json, sys
try:
    r = json.load(sys.stdin)
except Exception:
    print("UNREADABLE"); sys.exit()
print(" ".join(sorted("%s@%s" % (f["kind"], f["seq"]) for f in r["findings"])))'
}
