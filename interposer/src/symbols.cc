#include "symbols.h"

#include <dlfcn.h>
#include <link.h>

#include <vector>

namespace ncclrr::interpose {

using DlsymFn = void* (*)(void*, const char*);

// Read by the dlsym entry point (dlsym_entry.S); hidden so the assembly reaches it directly.
extern "C" {
__attribute__((visibility("hidden"))) DlsymFn ncclrr_real_dlsym = nullptr;
}

namespace {
void* NoDlsym(void*, const char*) { return nullptr; }
}  // namespace

extern "C" __attribute__((visibility("hidden"))) DlsymFn ncclrr_resolve_real_dlsym() {
  DlsymFn fn = ncclrr_real_dlsym;
  if (fn != nullptr) return fn;
  // dlvsym is not interposed; RTLD_NEXT from here skips ncclrr and finds glibc's dlsym.
  for (const char* version : {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17", "GLIBC_2.0"}) {
    fn = reinterpret_cast<DlsymFn>(dlvsym(RTLD_NEXT, "dlsym", version));
    if (fn != nullptr) break;
  }
  if (fn == nullptr) fn = NoDlsym;  // never crash: lookups then fail as for a missing symbol
  __atomic_store_n(&ncclrr_real_dlsym, fn, __ATOMIC_RELEASE);
  return fn;
}

void* RealDlsym(void* handle, const char* name) {
  DlsymFn fn = __atomic_load_n(&ncclrr_real_dlsym, __ATOMIC_ACQUIRE);
  if (fn == nullptr) fn = ncclrr_resolve_real_dlsym();
  return fn(handle, name);
}

namespace {

struct RangeQuery {
  uintptr_t base;
  AddressRange range;
  bool found = false;
};

int FillRange(dl_phdr_info* info, size_t, void* data) {
  auto* q = static_cast<RangeQuery*>(data);
  if (info->dlpi_addr != q->base) return 0;
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    if (start < lo) lo = start;
    if (start + ph.p_memsz > hi) hi = start + ph.p_memsz;
  }
  if (hi > lo) {
    q->range = {lo, hi};
    q->found = true;
    return 1;
  }
  return 0;
}

}  // namespace

bool ObjectContaining(const void* address, LoadedObject* out) {
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fbase == nullptr) return false;
  RangeQuery q{reinterpret_cast<uintptr_t>(info.dli_fbase), {}};
  dl_iterate_phdr(FillRange, &q);
  if (!q.found) return false;
  out->base = q.base;
  out->path = info.dli_fname != nullptr ? info.dli_fname : "";
  out->range = q.range;
  return true;
}

const LoadedObject& SelfObject() {
  static const LoadedObject self = [] {
    LoadedObject o;
    ObjectContaining(reinterpret_cast<const void*>(&RealDlsym), &o);
    return o;
  }();
  return self;
}

namespace {
int CollectPaths(dl_phdr_info* info, size_t, void* data) {
  auto* paths = static_cast<std::vector<std::string>*>(data);
  if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') paths->push_back(info->dlpi_name);
  return 0;
}
}  // namespace

void* FindInLoadedObjects(const char* name, void** handle_out) {
  // Collect first: dlopen must not run inside dl_iterate_phdr's callback (loader lock).
  std::vector<std::string> paths;
  dl_iterate_phdr(CollectPaths, &paths);
  const std::string& self = SelfObject().path;
  for (const std::string& path : paths) {
    if (path == self) continue;
    void* h = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (h == nullptr) continue;
    if (void* sym = RealDlsym(h, name); sym != nullptr) {
      LoadedObject owner;
      if (ObjectContaining(sym, &owner) && owner.base != SelfObject().base) {
        *handle_out = h;
        return sym;
      }
    }
    dlclose(h);
  }
  return nullptr;
}

}  // namespace ncclrr::interpose
