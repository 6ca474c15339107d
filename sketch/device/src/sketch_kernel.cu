// The CUDA sketch kernel: kernel_body.h run with the device execution policy. Compiled by nvcc
// into a fatbin (sm_75 and sm_90 code, compute_90 PTX for newer GPUs) that the library embeds
// and loads through the driver API; see sketch/CMakeLists.txt. Compiled with -fmad=false
// -ftz=false -prec-div=true: the arithmetic must round exactly like the host implementation.
#include "kernel_body.h"

namespace {

struct DeviceExec {
  __device__ int tid() const { return int(threadIdx.x); }
  __device__ uint32_t cta() const { return blockIdx.x; }
  __device__ void sync() { __syncthreads(); }
  __device__ void sync_warp() { __syncwarp(); }
  template <typename T>
  __device__ T shfl_down(T v, int offset) {
    return __shfl_down_sync(0xffffffffu, v, offset);
  }
  __device__ uint32_t atomic_add(uint32_t* p, uint32_t v) { return atomicAdd(p, v); }
  __device__ void fence() { __threadfence(); }
  __device__ void fence_system() { __threadfence_system(); }
  __device__ uint64_t load_cg(const uint64_t* p) {
    return __ldcg(reinterpret_cast<const unsigned long long*>(p));
  }
};

}  // namespace

// One entry point per datatype: ncclrr_sketch_<code>, code = ncclDataType_t.
#define NCCLRR_SKETCH_KERNEL(code, Traits)                                           \
  extern "C" __global__ void __launch_bounds__(ncclrr::sketch::kabi::kThreadsPerCta, \
                                               ncclrr::sketch::kabi::kCtasPerSm)     \
      ncclrr_sketch_##code(const ncclrr::sketch::kabi::Launch launch) {              \
    __shared__ ncclrr::sketch::kbody::CtaShared shared;                              \
    DeviceExec x;                                                                    \
    ncclrr::sketch::kbody::CtaMain<ncclrr::sketch::core::Traits>(x, launch, shared); \
  }
NCCLRR_SKETCH_KERNEL(0, TraitsI8)
NCCLRR_SKETCH_KERNEL(1, TraitsU8)
NCCLRR_SKETCH_KERNEL(2, TraitsI32)
NCCLRR_SKETCH_KERNEL(3, TraitsU32)
NCCLRR_SKETCH_KERNEL(4, TraitsI64)
NCCLRR_SKETCH_KERNEL(5, TraitsU64)
NCCLRR_SKETCH_KERNEL(6, TraitsF16)
NCCLRR_SKETCH_KERNEL(7, TraitsF32)
NCCLRR_SKETCH_KERNEL(8, TraitsF64)
NCCLRR_SKETCH_KERNEL(9, TraitsBf16)
NCCLRR_SKETCH_KERNEL(10, TraitsE4M3)
NCCLRR_SKETCH_KERNEL(11, TraitsE5M2)
