#!/usr/bin/env bash
# Builds the realjobs programs that are not Python, on the GPU machine (nvcc, mpicc, 16 cores):
#   cpp_sgd_dynamic  tests/gpu/realjobs/cpp_sgd.cu linked against the job's libnccl.so.2
#   cpp_sgd_static   the same with NCCL linked statically (libnccl_static.a built here from
#                    NCCL's source for sm_90, with only the kernels the job uses): NCCL inside
#                    the executable, as in TensorFlow, so only NCCL's profiler plugin can record
#   nccl-tests       all_reduce_perf etc. with MPI, against the job's libnccl.so.2
#   cpp_grid         tests/gpu/realjobs/cpp_grid.cu (MPI + NCCL on a grid of ranks) against the
#                    job's libnccl.so.2
# Sources: tarballs of the public repositories (NVIDIA/nccl at v2.28.9-1, NVIDIA/nccl-tests),
# made where there is a network and carried (the GPU machine has none), e.g.
#   git -C nccl archive --format=tar.gz --prefix=nccl/ v2.28.9-1 >.gpu-src/nccl-2.28.9.tar.gz
#   git -C nccl-tests archive --format=tar.gz --prefix=nccl-tests/ HEAD >.gpu-src/nccl-tests.tar.gz
# Usage: tests/gpu/realjobs/build_extras.sh [static|dynamic|nccl-tests|grid ...]   (default: all)
#   NCCLRR_GPU_SRC   where the tarballs are (default: .gpu-src in the repository)
# Writes build-extras/ in the repository; a part whose source is missing is skipped with a
# message. Exit 1 when a part that had its source failed to build.
set -u
source "$(dirname "$0")/../gputiming_env.sh"
SRC=${NCCLRR_GPU_SRC:-$ROOT/.gpu-src}
X=$ROOT/build-extras
JOB=$ROOT/tests/gpu/realjobs/cpp_sgd.cu
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
PARTS=${*:-"dynamic static nccl-tests grid"}
mkdir -p "$X"
failed=0
log() { echo "build_extras: $*"; }

# The job's NCCL (the Python environment's) as a prefix the linkers understand: include/ and a
# lib/ that also has the unversioned libnccl.so.
NCCL_PREFIX=$X/nccl-prefix
mkdir -p "$NCCL_PREFIX/lib"
ln -sfn "$NCCL_DIR/../include" "$NCCL_PREFIX/include"
ln -sf "$NCCL_DIR/libnccl.so.2" "$NCCL_PREFIX/lib/libnccl.so.2"
ln -sf "$NCCL_DIR/libnccl.so.2" "$NCCL_PREFIX/lib/libnccl.so"

for part in $PARTS; do
  start=$(date +%s)
  case $part in
    dynamic)
      "$NVCC" -O2 -arch=sm_90 "$JOB" -I"$NCCL_PREFIX/include" -o "$X/cpp_sgd_dynamic" \
        -L"$NCCL_PREFIX/lib" -lnccl -Xlinker -rpath="$NCCL_DIR" >"$X/dynamic.log" 2>&1 ||
        { log "cpp_sgd_dynamic failed: $(tail -n 5 "$X/dynamic.log")"; failed=1; continue; }
      ;;
    static)
      tgz=$(ls "$SRC"/nccl-2.*.tar.gz 2>/dev/null | head -n 1)
      [ -n "$tgz" ] || { log "skip static: no $SRC/nccl-2.*.tar.gz"; continue; }
      if [ ! -f "$X/nccl/build/lib/libnccl_static.a" ]; then
        rm -rf "$X/nccl" && tar -xzf "$tgz" -C "$X"
        # Only the kernels cpp_sgd needs: the full set takes far longer than a device call.
        make -C "$X/nccl" -j"$(nproc)" src.staticlib CUDA_HOME=/usr/local/cuda \
          NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" \
          ONLY_FUNCS="AllReduce Sum f32 * *|AllGather * *|Broadcast * *" >"$X/nccl-build.log" 2>&1 ||
          { log "libnccl_static.a failed: $(tail -n 5 "$X/nccl-build.log")"; failed=1; continue; }
      fi
      "$NVCC" -O2 -arch=sm_90 "$JOB" -I"$X/nccl/build/include" -o "$X/cpp_sgd_static" \
        "$X/nccl/build/lib/libnccl_static.a" -lpthread -ldl -lrt >"$X/static.log" 2>&1 ||
        { log "cpp_sgd_static failed: $(tail -n 5 "$X/static.log")"; failed=1; continue; }
      if nm -D "$X/cpp_sgd_static" 2>/dev/null | grep -q ' U ncclAllReduce'; then
        log "cpp_sgd_static imports ncclAllReduce: not a static link"; failed=1
      fi
      ;;
    nccl-tests)
      tgz=$SRC/nccl-tests.tar.gz
      [ -f "$tgz" ] || { log "skip nccl-tests: no $tgz"; continue; }
      command -v mpicc >/dev/null || { log "skip nccl-tests: no mpicc"; continue; }
      # MPI's include and lib directories under one prefix, as nccl-tests' Makefile wants them.
      mpi=$X/mpi-prefix
      mkdir -p "$mpi"
      ln -sfn "$(mpicc --showme:incdirs | awk '{print $1}')" "$mpi/include"
      ln -sfn "$(mpicc --showme:libdirs | awk '{print $1}')" "$mpi/lib"
      rm -rf "$X/nccl-tests" && tar -xzf "$tgz" -C "$X"
      make -C "$X/nccl-tests" -j"$(nproc)" MPI=1 MPI_HOME="$mpi" NCCL_HOME="$NCCL_PREFIX" \
        CUDA_HOME=/usr/local/cuda NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" \
        >"$X/nccl-tests-build.log" 2>&1 ||
        { log "nccl-tests failed: $(tail -n 5 "$X/nccl-tests-build.log")"; failed=1; continue; }
      ;;
    grid)
      command -v mpicc >/dev/null || { log "skip grid: no mpicc"; continue; }
      "$NVCC" -O2 -arch=sm_90 "$ROOT/tests/gpu/realjobs/cpp_grid.cu" -I"$NCCL_PREFIX/include" \
        -I"$(mpicc --showme:incdirs | awk '{print $1}')" -o "$X/cpp_grid" -L"$NCCL_PREFIX/lib" \
        -lnccl -Xlinker -rpath="$NCCL_DIR" -L"$(mpicc --showme:libdirs | awk '{print $1}')" -lmpi \
        >"$X/grid.log" 2>&1 ||
        { log "cpp_grid failed: $(tail -n 5 "$X/grid.log")"; failed=1; continue; }
      ;;
    *) log "unknown part $part (dynamic, static, nccl-tests, grid)"; failed=1; continue ;;
  esac
  log "$part built in $(($(date +%s) - start)) s"
done
exit $failed
