// Dynamic-linker helpers: glibc's own dlsym (ncclrr exports a dlsym of its own, see
// dlsym_hook.cc), mapped address ranges of loaded objects, and lookups among objects that are
// already loaded (PyTorch loads NCCL inside an RTLD_LOCAL scope, where RTLD_NEXT cannot see it).
#pragma once
#include <cstdint>
#include <string>

namespace ncclrr::interpose {

// glibc's dlsym. ncclrr code must call this, never `dlsym`, which would reach ncclrr's hook.
void* RealDlsym(void* handle, const char* name);

// [lo, hi) spanning every PT_LOAD segment of one loaded object.
struct AddressRange {
  uintptr_t lo = 0, hi = 0;
  bool Contains(const void* p) const {
    return reinterpret_cast<uintptr_t>(p) - lo < hi - lo;  // one compare; empty range: false
  }
};

// The object that contains `address`: its load base, path and mapped range. False if none.
struct LoadedObject {
  uintptr_t base = 0;
  std::string path;
  AddressRange range;
};
bool ObjectContaining(const void* address, LoadedObject* out);

// ncclrr's own object (libncclrr-interpose.so).
const LoadedObject& SelfObject();

// Searches already loaded objects (not ncclrr's) for `name`; returns the symbol and a handle
// (RTLD_NOLOAD, kept open) of the object that defines it, or nullptr.
void* FindInLoadedObjects(const char* name, void** handle_out);

}  // namespace ncclrr::interpose
