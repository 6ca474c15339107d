// libinterposer_workload.so: the workload with NCCL reached by direct link (DT_NEEDED
// libnccl.so.2). Linked into app_direct, or dlopen'ed RTLD_LOCAL by app_local as PyTorch loads
// its NCCL-linked extension, where RTLD_NEXT from a preload cannot see NCCL.
#include "ncclrr/hostnccl.h"
#include "workload.h"

extern "C" __attribute__((visibility("default"))) int ncclrr_test_workload_main(int argc,
                                                                                char** argv) {
  ncclrr::testing::NcclApi api;
#define NCCLRR_TEST_DIRECT(name) api.name = &::name;
  NCCLRR_TEST_API(NCCLRR_TEST_DIRECT)
#undef NCCLRR_TEST_DIRECT
  api.StreamCreate = &ncclrrHostStreamCreate;
  api.StreamSynchronize = &ncclrrHostStreamSynchronize;
  return ncclrr::testing::RunWorkload(api, argc, argv);
}
