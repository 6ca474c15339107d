#pragma once
// The one way ncclrr opens the CUDA driver, CUPTI and other libraries it never links: a library
// the process already uses wins over loading a second copy.
#include <string>
#include <vector>

namespace ncclrr::dl {

struct OpenedLibrary {
  void* handle = nullptr;
  std::string path;             // where it was found (dladdr), or the name it was opened by
  bool already_loaded = false;  // the process had it before ncclrr looked
};

// Tries `names` with RTLD_NOLOAD first (a library the process already uses wins: two copies of
// CUPTI or libcuda in one process must never happen), then, when `may_load`, opens them in order.
// On failure `tried` says what was attempted and why each failed.
OpenedLibrary OpenFirst(const std::vector<std::string>& names, bool may_load, std::string* tried);

// Looks `name` up in `handle`; false when absent. `*fn` is left null then.
template <typename F>
bool LoadSymbol(void* handle, const char* name, F* fn);

}  // namespace ncclrr::dl

#include <dlfcn.h>

namespace ncclrr::dl {
template <typename F>
bool LoadSymbol(void* handle, const char* name, F* fn) {
  *fn = reinterpret_cast<F>(dlsym(handle, name));
  return *fn != nullptr;
}
}  // namespace ncclrr::dl
