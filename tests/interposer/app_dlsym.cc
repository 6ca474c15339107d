// The workload with NCCL reached like JAX/XLA's nccl stub: dlopen("libnccl.so.2") and dlsym of
// every function on that handle. No NCCL symbol is imported.
#include <dlfcn.h>

#include <cstdio>

#include "workload.h"

int main(int argc, char** argv) {
  void* h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    std::fprintf(stderr, "app_dlsym: %s\n", dlerror());
    return 70;
  }
  ncclrr::testing::NcclApi api;
#define NCCLRR_TEST_DLSYM(name) api.name = reinterpret_cast<decltype(api.name)>(dlsym(h, #name));
  NCCLRR_TEST_API(NCCLRR_TEST_DLSYM)
#undef NCCLRR_TEST_DLSYM
  api.StreamCreate =
      reinterpret_cast<decltype(api.StreamCreate)>(dlsym(h, "ncclrrHostStreamCreate"));
  api.StreamSynchronize =
      reinterpret_cast<decltype(api.StreamSynchronize)>(dlsym(h, "ncclrrHostStreamSynchronize"));
  if (api.ncclAllReduce == nullptr || api.StreamCreate == nullptr) {
    std::fprintf(stderr, "app_dlsym: libnccl.so.2 lacks the functions it needs\n");
    return 72;
  }
  return ncclrr::testing::RunWorkload(api, argc, argv);
}
