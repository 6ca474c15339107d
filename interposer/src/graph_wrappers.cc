// Exported wrappers of the CUDA graph entry points that instantiate, launch and destroy graphs
// (runtime cudaGraph* and driver cuGraph*), so that launches of graphs holding NCCL templates
// are recorded (cuda_graphs.h). This file must not include CUDA headers: the wrappers pass six
// integer registers through untouched, so they stay right across API revisions whose argument
// lists differ (cudaGraphInstantiate of CUDA 11 vs 12), and every argument of these functions is
// a pointer or an integer.
//
// Each call is forwarded to the function the *caller* would have bound to (caller_forward.h): a
// process may hold two CUDA runtimes (say torch's libcudart 13 and another package's 12), and a
// handle of one must never reach the other.
#include <cstdint>

#include "caller_forward.h"
#include "gpu_timing_hooks.h"
#include "graph_events.h"

namespace ncclrr::interpose {
namespace {

constexpr int kNotFound = 999;  // cudaErrorUnknown / CUDA_ERROR_UNKNOWN

enum class Kind { kInstantiate, kUpdate, kLaunch, kExecDestroy, kGraphDestroy };

// Forwards, then tells cuda_graphs.cc what happened (only on success, and only for the
// application's own calls, not for calls the CUDA runtime makes into the driver).
int Forward(CallerHook& hook, Kind kind, const void* caller, uintptr_t a0, uintptr_t a1,
            uintptr_t a2, uintptr_t a3, uintptr_t a4, uintptr_t a5) {
  const RegisterFn fn = ResolveForCaller(hook, caller);
  if (fn == nullptr) return kNotFound;
  const bool outer = EnterGraphCall();
  // GPU timing: the launch's NCCL kernels are tied to the graph's templates.
  const uint64_t timed = kind == Kind::kLaunch && outer && GpuTimingOn() ? TimedGraphOfExec(a0) : 0;
  if (timed != 0) GpuTimingBeforeGraphLaunch(timed);
  const int r = fn(a0, a1, a2, a3, a4, a5);
  if (timed != 0) GpuTimingAfterGraphLaunch();
  LeaveGraphCall();
  if (r != 0 || !outer || !GraphsActive()) return r;
  switch (kind) {
    case Kind::kInstantiate:
      if (a0 != 0) OnGraphInstantiated(a1, *reinterpret_cast<const uintptr_t*>(a0));
      break;
    case Kind::kUpdate:
      OnGraphInstantiated(a1, a0);
      break;
    case Kind::kLaunch:
      OnGraphLaunched(a0, a1);
      break;
    case Kind::kExecDestroy:
      OnGraphExecDestroyed(a0);
      break;
    case Kind::kGraphDestroy:
      OnGraphDestroyed(a0);
      break;
  }
  return r;
}

}  // namespace
}  // namespace ncclrr::interpose

#define NCCLRR_GRAPH_WRAPPER(name, kind)                                                      \
  extern "C" __attribute__((visibility("default"))) int name(                                 \
      uintptr_t a0, uintptr_t a1, uintptr_t a2, uintptr_t a3, uintptr_t a4, uintptr_t a5) {   \
    static ::ncclrr::interpose::CallerHook hook{#name, {}, {}, {}};                           \
    return ::ncclrr::interpose::Forward(hook, ::ncclrr::interpose::Kind::kind,                \
                                        __builtin_return_address(0), a0, a1, a2, a3, a4, a5); \
  }

NCCLRR_GRAPH_WRAPPER(cudaGraphInstantiate, kInstantiate)
NCCLRR_GRAPH_WRAPPER(cudaGraphInstantiateWithFlags, kInstantiate)
NCCLRR_GRAPH_WRAPPER(cudaGraphInstantiateWithParams, kInstantiate)
NCCLRR_GRAPH_WRAPPER(cudaGraphInstantiateWithParams_ptsz, kInstantiate)
NCCLRR_GRAPH_WRAPPER(cudaGraphExecUpdate, kUpdate)
NCCLRR_GRAPH_WRAPPER(cudaGraphLaunch, kLaunch)
NCCLRR_GRAPH_WRAPPER(cudaGraphLaunch_ptsz, kLaunch)
NCCLRR_GRAPH_WRAPPER(cudaGraphExecDestroy, kExecDestroy)
NCCLRR_GRAPH_WRAPPER(cudaGraphDestroy, kGraphDestroy)
NCCLRR_GRAPH_WRAPPER(cuGraphInstantiate, kInstantiate)
NCCLRR_GRAPH_WRAPPER(cuGraphInstantiate_v2, kInstantiate)
NCCLRR_GRAPH_WRAPPER(cuGraphInstantiateWithFlags, kInstantiate)
NCCLRR_GRAPH_WRAPPER(cuGraphInstantiateWithParams, kInstantiate)
NCCLRR_GRAPH_WRAPPER(cuGraphInstantiateWithParams_ptsz, kInstantiate)
NCCLRR_GRAPH_WRAPPER(cuGraphExecUpdate, kUpdate)
NCCLRR_GRAPH_WRAPPER(cuGraphExecUpdate_v2, kUpdate)
NCCLRR_GRAPH_WRAPPER(cuGraphLaunch, kLaunch)
NCCLRR_GRAPH_WRAPPER(cuGraphLaunch_ptsz, kLaunch)
NCCLRR_GRAPH_WRAPPER(cuGraphExecDestroy, kExecDestroy)
NCCLRR_GRAPH_WRAPPER(cuGraphDestroy, kGraphDestroy)
