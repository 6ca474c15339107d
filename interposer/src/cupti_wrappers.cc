// Exported wrappers of the CUPTI entry points a profiler calls first (the PyTorch profiler's
// Kineto, Nsight, a job's own CUPTI client): when the job starts using CUPTI while ncclrr's GPU
// timing holds it, ncclrr hands CUPTI over before the call goes through (GpuTimer::
// OnForeignCuptiUse: flush, disable what ncclrr enabled, continue with CUDA event pairs), so the
// job's client gets its records and ncclrr never competes with it. docs/gpu-timing.md.
//
// Every call is forwarded unchanged to the CUPTI its caller binds to (caller_forward.h; no CUPTI
// header: all arguments are pointers or integers). Calls CUPTI makes to itself are not a job's
// use. Without GPU timing the wrappers only forward.
#include <cstdint>

#include "caller_forward.h"
#include "gpu_timing_hooks.h"
#include "symbols.h"

namespace ncclrr::interpose {
namespace {

constexpr int kCuptiErrorUnknown = 999;  // CUPTI_ERROR_UNKNOWN

int ForwardCupti(CallerHook& hook, const void* caller, uintptr_t a0, uintptr_t a1, uintptr_t a2,
                 uintptr_t a3, uintptr_t a4, uintptr_t a5) {
  const RegisterFn fn = ResolveForCaller(hook, caller);
  if (fn == nullptr) return kCuptiErrorUnknown;
  if (GpuTimingOn()) {
    LoadedObject cupti;
    const bool internal =
        ObjectContaining(reinterpret_cast<const void*>(fn), &cupti) && cupti.range.Contains(caller);
    if (!internal) GpuTimingForeignCupti(hook.name);
  }
  return fn(a0, a1, a2, a3, a4, a5);
}

}  // namespace
}  // namespace ncclrr::interpose

#define NCCLRR_CUPTI_WRAPPER(name)                                                              \
  extern "C" __attribute__((visibility("default"))) int name(                                   \
      uintptr_t a0, uintptr_t a1, uintptr_t a2, uintptr_t a3, uintptr_t a4, uintptr_t a5) {     \
    static ::ncclrr::interpose::CallerHook hook{#name, {}, {}, {}};                             \
    return ::ncclrr::interpose::ForwardCupti(hook, __builtin_return_address(0), a0, a1, a2, a3, \
                                             a4, a5);                                           \
  }

// What starts a CUPTI client: a subscriber (callback API), activity buffers, activity kinds, and
// the teardown that would take ncclrr's records with it.
NCCLRR_CUPTI_WRAPPER(cuptiSubscribe)
NCCLRR_CUPTI_WRAPPER(cuptiActivityRegisterCallbacks)
NCCLRR_CUPTI_WRAPPER(cuptiActivityEnable)
NCCLRR_CUPTI_WRAPPER(cuptiActivityEnableContext)
NCCLRR_CUPTI_WRAPPER(cuptiFinalize)
