#include "caller_forward.h"

#include <dlfcn.h>

#include "symbols.h"

namespace ncclrr::interpose {
namespace {

RegisterFn Lookup(const char* name, const LoadedObject& caller) {
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
  return reinterpret_cast<RegisterFn>(fn);
}

}  // namespace

// Callers are few objects (the CUDA runtime's users): each gets an entry, filled once and never
// replaced, so readers need no lock. Past kEntries callers, lookups take the slow path.
RegisterFn ResolveForCaller(CallerHook& hook, const void* caller) {
  const auto a = reinterpret_cast<uintptr_t>(caller);
  for (CallerHook::Entry& e : hook.entries) {
    const uintptr_t hi = e.hi.load(std::memory_order_acquire);
    if (hi == 0) break;
    const uintptr_t lo = e.lo.load(std::memory_order_relaxed);
    if (a - lo < hi - lo) return e.fn.load(std::memory_order_relaxed);
  }
  std::lock_guard<std::mutex> lock(hook.mu);
  LoadedObject obj;
  if (!ObjectContaining(caller, &obj)) obj = {};
  const RegisterFn fn = Lookup(hook.name, obj);
  const int slot = hook.next.load();
  if (fn != nullptr && obj.range.hi > obj.range.lo && slot < CallerHook::kEntries) {
    CallerHook::Entry& e = hook.entries[slot];
    e.fn.store(fn, std::memory_order_relaxed);
    e.lo.store(obj.range.lo, std::memory_order_relaxed);
    e.hi.store(obj.range.hi, std::memory_order_release);  // publishes the entry
    hook.next.store(slot + 1);
  }
  return fn;
}

}  // namespace ncclrr::interpose
