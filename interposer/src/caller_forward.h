// Forwarding an exported wrapper of someone else's library (the CUDA graph entry points, CUPTI)
// to the function its *caller* would have bound to without ncclrr: looked up in the caller's own
// dependency scope first (PyTorch's libraries sit in RTLD_LOCAL scopes that RTLD_NEXT cannot
// see, and a process may hold two CUDA runtimes), then RTLD_NEXT, then any loaded object.
//
// The wrappers pass six integer registers through untouched: every argument of the functions
// wrapped this way is a pointer or an integer, so no CUDA or CUPTI header is needed and the
// wrappers stay right across API revisions whose argument lists differ.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>

namespace ncclrr::interpose {

using RegisterFn = int (*)(uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t);

// One per wrapped name (a function-local static): the functions found, per calling object.
struct CallerHook {
  const char* name;
  struct Entry {
    std::atomic<uintptr_t> lo{0}, hi{0};
    std::atomic<RegisterFn> fn{nullptr};
  };
  static constexpr int kEntries = 8;
  Entry entries[kEntries];
  std::atomic<int> next{0};
  std::mutex mu;
};

// The function `hook.name` the object containing `caller` binds to; never ncclrr's own wrapper.
// nullptr when no loaded object defines it. Lock-free once the caller's object was seen.
RegisterFn ResolveForCaller(CallerHook& hook, const void* caller);

}  // namespace ncclrr::interpose
