// Exported wrappers of the CUDA graph entry points that instantiate, launch and destroy graphs
// (runtime cudaGraph* and driver cuGraph*), so that launches of graphs holding NCCL templates
// are recorded (cuda_graphs.h). This file must not include CUDA headers: the wrappers pass six
// integer registers through untouched, so they stay right across API revisions whose argument
// lists differ (cudaGraphInstantiate of CUDA 11 vs 12), and every argument of these functions is
// a pointer or an integer.
//
// Each call is forwarded to the function the *caller* would have bound to (looked up in the
// caller's own dependency scope): a process may hold two CUDA runtimes (say torch's libcudart 13
// and another package's 12), and a handle of one must never reach the other.
#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <mutex>

#include "graph_events.h"
#include "symbols.h"

namespace ncclrr::interpose {
namespace {

using Fn = int (*)(uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t);
constexpr int kNotFound = 999;  // cudaErrorUnknown / CUDA_ERROR_UNKNOWN

struct Hook {
  const char* name;
  struct Entry {
    std::atomic<uintptr_t> lo{0}, hi{0};
    std::atomic<Fn> fn{nullptr};
  };
  static constexpr int kEntries = 8;
  Entry entries[kEntries];
  std::atomic<int> next{0};
  std::mutex mu;
};

Fn Lookup(const char* name, const LoadedObject& caller) {
  void* fn = nullptr;
  if (void* h =
          dlopen(caller.path.empty() ? nullptr : caller.path.c_str(), RTLD_LAZY | RTLD_NOLOAD)) {
    fn = RealDlsym(h, name);  // what the caller's own scope binds `name` to
    dlclose(h);
  }
  LoadedObject owner;
  if (fn != nullptr && ObjectContaining(fn, &owner) && owner.base == SelfObject().base)
    fn = nullptr;  // the global scope found ncclrr itself
  if (fn == nullptr) fn = RealDlsym(RTLD_NEXT, name);
  if (fn == nullptr) {
    void* handle = nullptr;
    fn = FindInLoadedObjects(name, &handle);
  }
  return reinterpret_cast<Fn>(fn);
}

// Callers are few objects (the CUDA runtime's users): each gets an entry, filled once and never
// replaced, so readers need no lock. Past kEntries callers, lookups take the slow path.
Fn Resolve(Hook& hook, const void* caller) {
  const auto a = reinterpret_cast<uintptr_t>(caller);
  for (Hook::Entry& e : hook.entries) {
    const uintptr_t hi = e.hi.load(std::memory_order_acquire);
    if (hi == 0) break;
    const uintptr_t lo = e.lo.load(std::memory_order_relaxed);
    if (a - lo < hi - lo) return e.fn.load(std::memory_order_relaxed);
  }
  std::lock_guard<std::mutex> lock(hook.mu);
  LoadedObject obj;
  if (!ObjectContaining(caller, &obj)) obj = {};
  const Fn fn = Lookup(hook.name, obj);
  const int slot = hook.next.load();
  if (fn != nullptr && obj.range.hi > obj.range.lo && slot < Hook::kEntries) {
    Hook::Entry& e = hook.entries[slot];
    e.fn.store(fn, std::memory_order_relaxed);
    e.lo.store(obj.range.lo, std::memory_order_relaxed);
    e.hi.store(obj.range.hi, std::memory_order_release);  // publishes the entry
    hook.next.store(slot + 1);
  }
  return fn;
}

enum class Kind { kInstantiate, kUpdate, kLaunch, kExecDestroy, kGraphDestroy };

// Forwards, then tells cuda_graphs.cc what happened (only on success, and only for the
// application's own calls, not for calls the CUDA runtime makes into the driver).
int Forward(Hook& hook, Kind kind, const void* caller, uintptr_t a0, uintptr_t a1, uintptr_t a2,
            uintptr_t a3, uintptr_t a4, uintptr_t a5) {
  const Fn fn = Resolve(hook, caller);
  if (fn == nullptr) return kNotFound;
  const bool outer = EnterGraphCall();
  const int r = fn(a0, a1, a2, a3, a4, a5);
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
    static ::ncclrr::interpose::Hook hook{#name, {}, {}, {}};                                 \
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
