#include "real_nccl.h"

#include <dlfcn.h>

#include <cstdio>
#include <mutex>

#include "env_config.h"

namespace ncclrr::interpose {
namespace {

std::atomic<const NcclLibrary*> g_library{nullptr};
std::mutex g_resolve_mu;
bool g_failed = false;  // under g_resolve_mu

// Fills every entry from `handle` (strong pncclX first: the ncclX names are weak aliases that
// an interposer may shadow) or, with RTLD_NEXT, by the public names so interposers chain.
void FillTable(void* handle, RealNccl* t) {
  const bool next = handle == RTLD_NEXT;
#define NCCLRR_FILL(name)                                    \
  {                                                          \
    void* p = next ? nullptr : RealDlsym(handle, "p" #name); \
    if (p == nullptr) p = RealDlsym(handle, #name);          \
    t->name = reinterpret_cast<decltype(t->name)>(p);        \
  }
  NCCLRR_FOR_EACH_NCCL_API(NCCLRR_FILL)
#undef NCCLRR_FILL
}

// Builds the library from `handle` if it really is an NCCL other than ncclrr itself.
NcclLibrary* TryHandle(void* handle, const char* how) {
  if (handle == nullptr) return nullptr;
  auto* lib = new NcclLibrary();
  FillTable(handle, &lib->fn);
  // NCCL's own code is where its strong symbols live; fall back to the public name.
  void* anchor = handle == RTLD_NEXT ? nullptr : RealDlsym(handle, "pncclAllReduce");
  if (anchor == nullptr) anchor = reinterpret_cast<void*>(lib->fn.ncclAllReduce);
  if (lib->fn.ncclGetVersion == nullptr || anchor == nullptr ||
      !ObjectContaining(anchor, &lib->object) || lib->object.base == SelfObject().base) {
    delete lib;
    return nullptr;
  }
  lib->how = how;
  int v = 0;
  if (lib->fn.ncclGetVersion(&v) == ncclSuccess) lib->version = v;
  lib->host_nccl = RealDlsym(handle == RTLD_NEXT ? RTLD_DEFAULT : handle, "ncclrrHostIsHostNccl");
  return lib;
}

NcclLibrary* Discover() {
  const Config& cfg = GetConfig();
  if (!cfg.nccl_library.empty()) {
    void* h = dlopen(cfg.nccl_library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (NcclLibrary* lib = TryHandle(h, "NCCLRR_NCCL_LIBRARY")) return lib;
    std::fprintf(stderr,
                 "ncclrr: NCCLRR_NCCL_LIBRARY=%s is not an NCCL library (%s); looking for the "
                 "one the job loaded instead\n",
                 cfg.nccl_library.c_str(), h ? "no ncclGetVersion/ncclAllReduce" : dlerror());
  }
  if (NcclLibrary* lib = TryHandle(RTLD_NEXT, "RTLD_NEXT")) return lib;
  if (NcclLibrary* lib =
          TryHandle(dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD), "loaded libnccl.so.2"))
    return lib;
  void* h = nullptr;
  if (FindInLoadedObjects("pncclGetVersion", &h) != nullptr)
    if (NcclLibrary* lib = TryHandle(h, "loaded object defining pncclGetVersion")) return lib;
  return TryHandle(dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL), "dlopen(libnccl.so.2)");
}

void Publish(NcclLibrary* lib) {
  if (GetConfig().verbose)
    std::fprintf(stderr, "ncclrr: forwarding to NCCL %d at %s (found by %s)\n", lib->version,
                 lib->object.path.c_str(), lib->how);
  g_library.store(lib, std::memory_order_release);
}

}  // namespace

const NcclLibrary* RealLibrary() { return g_library.load(std::memory_order_acquire); }

const NcclLibrary* ResolveRealLibrary() {
  if (const NcclLibrary* lib = RealLibrary()) return lib;
  std::lock_guard<std::mutex> lock(g_resolve_mu);
  if (const NcclLibrary* lib = RealLibrary()) return lib;
  if (g_failed) return nullptr;
  if (NcclLibrary* lib = Discover()) {
    Publish(lib);
    return lib;
  }
  g_failed = true;
  std::fprintf(stderr,
               "ncclrr: cannot find the real NCCL library behind this process's NCCL calls "
               "(tried RTLD_NEXT, a loaded libnccl.so.2, every loaded object, and "
               "dlopen(\"libnccl.so.2\")); NCCL calls fail with ncclSystemError. Set "
               "NCCLRR_NCCL_LIBRARY=/path/to/libnccl.so.2.\n");
  return nullptr;
}

bool AdoptFromDlsym(const void* symbol) {
  LoadedObject owner;
  if (!ObjectContaining(symbol, &owner) || owner.base == SelfObject().base) return false;
  if (const NcclLibrary* lib = RealLibrary()) return lib->object.base == owner.base;
  std::lock_guard<std::mutex> lock(g_resolve_mu);
  if (const NcclLibrary* lib = RealLibrary()) return lib->object.base == owner.base;
  void* h = dlopen(owner.path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  NcclLibrary* lib = TryHandle(h, "dlsym of a handle to it (dlopen + dlsym)");
  if (lib == nullptr || lib->object.base != owner.base) {
    delete lib;
    return false;
  }
  g_failed = false;
  Publish(lib);
  return true;
}

}  // namespace ncclrr::interpose
