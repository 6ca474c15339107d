// A workload that reaches the NCCL API only through a table of function pointers, so the same
// calls can be made by each loading style the interposer must handle: direct link
// (workload_lib.cc fills the table with its own references), dlopen + dlsym (app_dlsym.cc), and
// from inside an RTLD_LOCAL-loaded library (app_local.cc loads libinterposer_workload.so).
#pragma once
#include <nccl.h>

namespace ncclrr::testing {

struct NcclApi {
// clang-format does not settle on one layout for this list.
// clang-format off
#define NCCLRR_TEST_API(X)                                                                        \
  X(ncclGetVersion)                                                                               \
  X(ncclGetUniqueId) X(ncclCommInitRank) X(ncclCommInitRankConfig) X(ncclCommInitAll)             \
      X(ncclCommSplit) X(ncclCommShrink) X(ncclCommDestroy) X(ncclCommAbort) X(ncclCommFinalize)  \
          X(ncclCommGetAsyncError) X(ncclCommCount) X(ncclCommCuDevice) X(ncclCommUserRank)       \
              X(ncclGetErrorString) X(ncclCommRegister) X(ncclCommDeregister) X(ncclMemAlloc)     \
                  X(ncclMemFree) X(ncclRedOpCreatePreMulSum) X(ncclRedOpDestroy) X(ncclAllReduce) \
                      X(ncclBroadcast) X(ncclBcast) X(ncclReduce) X(ncclAllGather)                \
                          X(ncclReduceScatter) X(ncclAlltoAll) X(ncclGather) X(ncclScatter)       \
                              X(ncclSend) X(ncclRecv) X(ncclGroupStart) X(ncclGroupEnd)           \
                                  X(ncclGroupSimulateEnd)
// clang-format on
#define NCCLRR_TEST_FIELD(name) decltype(&::name) name = nullptr;
  NCCLRR_TEST_API(NCCLRR_TEST_FIELD)
#undef NCCLRR_TEST_FIELD
  // The host NCCL's stream calls (hostnccl/include/ncclrr/hostnccl.h).
  cudaStream_t (*StreamCreate)() = nullptr;
  ncclResult_t (*StreamSynchronize)(cudaStream_t) = nullptr;
};

// Runs the scenario named by argv[1] (see workload.cc); returns the process exit code: 0 when
// every result was right.
int RunWorkload(const NcclApi& api, int argc, char** argv);

}  // namespace ncclrr::testing
