// The real NCCL behind the wrappers, found without user flags (docs/recording.md "How the real
// NCCL is found"): NCCLRR_NCCL_LIBRARY if set; else RTLD_NEXT (NCCL linked into the global
// scope); else an already loaded libnccl.so.2 (dlopen RTLD_NOLOAD: PyTorch's RTLD_LOCAL case,
// where RTLD_NEXT is NULL); else any loaded object defining pncclGetVersion; else the
// libnccl.so.2 that the dynamic linker would load. A library adopted through the dlsym hook
// (JAX's dlopen + dlsym) wins if nothing was resolved before.
#pragma once
#include <nccl.h>

#include <atomic>
#include <string>

#include "nccl_api_list.h"
#include "symbols.h"

namespace ncclrr::interpose {

struct RealNccl {
#define NCCLRR_REAL_FN(name) decltype(&::name) name = nullptr;
  NCCLRR_FOR_EACH_NCCL_API(NCCLRR_REAL_FN)
#undef NCCLRR_REAL_FN
};

struct NcclLibrary {
  RealNccl fn;
  LoadedObject object;     // where NCCL's code lives: calls from inside it are NCCL's own
  int version = 0;         // ncclGetVersion()
  bool host_nccl = false;  // ncclrr's host NCCL (no CUDA behind its streams)
  const char* how = "";    // how it was found, for the trace's notes
};

// Null until resolved; then immutable for the life of the process.
const NcclLibrary* RealLibrary();
// Resolves on first use (thread-safe). Null when no NCCL can be found (said once on stderr).
const NcclLibrary* ResolveRealLibrary();
// The dlsym hook saw `symbol` (named `name`) handed out from a library: adopts that library when
// nothing was resolved yet. True when `symbol` belongs to the library the wrappers forward to.
bool AdoptFromDlsym(const void* symbol);

}  // namespace ncclrr::interpose
