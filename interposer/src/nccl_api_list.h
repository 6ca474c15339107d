// The NCCL API that ncclrr wraps: every entry point of nccl.h 2.28 (the host-side functions of
// nccl_device.h are not wrapped: the device API is invisible to any interposer). X-macro lists so
// that the table of real functions, its resolution and the dlsym hook stay in step.
#pragma once

#define NCCLRR_FOR_EACH_NCCL_API(X) \
  X(ncclGetVersion)                 \
  X(ncclGetUniqueId)                \
  X(ncclCommInitRank)               \
  X(ncclCommInitRankConfig)         \
  X(ncclCommInitRankScalable)       \
  X(ncclCommInitAll)                \
  X(ncclCommSplit)                  \
  X(ncclCommShrink)                 \
  X(ncclCommFinalize)               \
  X(ncclCommDestroy)                \
  X(ncclCommAbort)                  \
  X(ncclCommRevoke)                 \
  X(ncclCommGetAsyncError)          \
  X(ncclCommCount)                  \
  X(ncclCommCuDevice)               \
  X(ncclCommUserRank)               \
  X(ncclGetErrorString)             \
  X(ncclGetLastError)               \
  X(ncclCommRegister)               \
  X(ncclCommDeregister)             \
  X(ncclCommWindowRegister)         \
  X(ncclCommWindowDeregister)       \
  X(ncclMemAlloc)                   \
  X(ncclMemFree)                    \
  X(ncclRedOpCreatePreMulSum)       \
  X(ncclRedOpDestroy)               \
  X(ncclAllReduce)                  \
  X(ncclBroadcast)                  \
  X(ncclBcast)                      \
  X(ncclReduce)                     \
  X(ncclAllGather)                  \
  X(ncclReduceScatter)              \
  X(ncclAlltoAll)                   \
  X(ncclGather)                     \
  X(ncclScatter)                    \
  X(ncclSend)                       \
  X(ncclRecv)                       \
  X(ncclGroupStart)                 \
  X(ncclGroupEnd)                   \
  X(ncclGroupSimulateEnd)
