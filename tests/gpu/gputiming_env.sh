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
