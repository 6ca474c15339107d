// The dlopen + dlsym route (JAX/XLA's nccl stub, TensorFlow built with it): such programs never
// reach a preloaded symbol, they ask a handle of libnccl.so.2 for each function. ncclrr exports
// its own dlsym: for a lookup in a specific handle whose answer is one of the NCCL API functions
// ncclrr wraps, it hands out the wrapper instead (and adopts that library as the real NCCL if
// none was found yet). Every other lookup returns exactly what glibc returns, so symbols a newer
// NCCL adds, pnccl* names and everything that is not NCCL pass through untouched.
// docs/recording.md explains why this was chosen over a SONAME shim.
//
// The entry point itself is in dlsym_entry.S: RTLD_DEFAULT and RTLD_NEXT lookups depend on who
// calls dlsym, so for them it jumps to glibc's dlsym without a new stack frame (the caller's
// return address stays the one glibc sees). Lookups in a specific handle do not depend on the
// caller and arrive here.
#include <dlfcn.h>
#include <nccl.h>

#include <cstring>

#include "env_config.h"
#include "nccl_api_list.h"
#include "real_nccl.h"
#include "symbols.h"

namespace ncclrr::interpose {
namespace {

struct Wrapper {
  const char* name;
  void* fn;
};

// ncclrr's own definitions (the library is linked -Bsymbolic: these are never someone else's).
const Wrapper kWrappers[] = {
#define NCCLRR_WRAPPER_ENTRY(name) {#name, reinterpret_cast<void*>(&::name)},
    NCCLRR_FOR_EACH_NCCL_API(NCCLRR_WRAPPER_ENTRY)
#undef NCCLRR_WRAPPER_ENTRY
};

void* WrapperFor(const char* name) {
  for (const Wrapper& w : kWrappers)
    if (std::strcmp(w.name, name) == 0) return w.fn;
  return nullptr;
}

}  // namespace
}  // namespace ncclrr::interpose

extern "C" __attribute__((visibility("hidden"))) void* ncclrr_dlsym_for_handle(void* handle,
                                                                               const char* name) {
  using namespace ncclrr::interpose;
  void* sym = RealDlsym(handle, name);
  if (sym == nullptr || name == nullptr || std::strncmp(name, "nccl", 4) != 0) return sym;
  if (!GetConfig().dlsym_hook) return sym;
  void* wrapper = WrapperFor(name);
  if (wrapper == nullptr || wrapper == sym) return sym;
  return AdoptFromDlsym(sym) ? wrapper : sym;  // a second, different NCCL is left alone
}
