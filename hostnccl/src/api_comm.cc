// Communicator lifecycle, queries, reduction ops, memory and error strings.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "api_visibility.h"
#include "env.h"
#include "group.h"
#include "ncclrr/hostnccl/reduce.h"
#include "stream.h"

using namespace ncclrr::host;

namespace {

// In no-op mode a communicator is only its rank and size, so queries still answer.
ncclComm_t NoopComm(int nranks, int rank) {
  auto impl = std::make_shared<CommRank>();
  impl->nranks = nranks;
  impl->rank = rank;
  impl->device = rank;
  return new ncclComm{kCommMagic, impl};
}

ncclResult_t CheckConfig(const ncclConfig_t* config) {
  if (config != nullptr && (config->magic != 0xcafebeef || config->size < sizeof(size_t) * 2)) {
    SetLastError("ncclConfig_t not initialized with NCCL_CONFIG_INITIALIZER");
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

ncclResult_t InitRank(ncclComm_t* comm, int nranks, const ncclUniqueId& id, int rank,
                      ncclConfig_t* config) {
  if (comm == nullptr) return ncclInvalidArgument;
  if (NoopMode()) {
    *comm = NoopComm(nranks, rank);
    return ncclSuccess;
  }
  if (ncclResult_t r = CheckConfig(config); r != ncclSuccess) return r;
  std::shared_ptr<CommRank> impl;
  if (ncclResult_t r = StartRootRank(id, nranks, rank, config, &impl); r != ncclSuccess) {
    *comm = nullptr;
    return r;
  }
  *comm = new ncclComm{kCommMagic, impl};
  return RunCommStep([impl] { return impl->StepInit(); }, !impl->blocking);
}

// Waits until the rank has no queued work (drains or fails it).
ncclResult_t Drain(CommRank* c) {
  return DriveUntil([c] {
    c->StepInit();
    return c->pending_ops.load() == 0 ? ncclSuccess : ncclInProgress;
  });
}

}  // namespace

extern "C" {

ncclResult_t pncclGetVersion(int* version) {
  if (version == nullptr) return ncclInvalidArgument;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t pncclGetUniqueId(ncclUniqueId* uniqueId) { return MakeUniqueId(uniqueId); }

ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return InitRank(comm, nranks, commId, rank, nullptr);
}

ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                     ncclConfig_t* config) {
  return InitRank(comm, nranks, commId, rank, config);
}

ncclResult_t pncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                       ncclUniqueId* commIds, ncclConfig_t* config) {
  // Several ids only spread NCCL's bootstrap load; the first one names the rendezvous here.
  if (nId < 1 || commIds == nullptr) return ncclInvalidArgument;
  return InitRank(newcomm, nranks, commIds[0], myrank, config);
}

ncclResult_t pncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  if (comms == nullptr || ndev < 1) return ncclInvalidArgument;
  if (NoopMode()) {
    for (int i = 0; i < ndev; ++i) comms[i] = NoopComm(ndev, i);
    return ncclSuccess;
  }
  ncclUniqueId id;
  // Through the PLT, as NCCL does: an interposer sees this nested call.
  if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess) return r;
  GroupStart();
  ncclResult_t first = ncclSuccess;
  for (int i = 0; i < ndev; ++i) {
    const int saved = ThreadDevice();
    ThreadDevice() = devlist != nullptr ? devlist[i] : i;
    ncclResult_t r = InitRank(&comms[i], ndev, id, i, nullptr);
    ThreadDevice() = saved;
    if (r != ncclSuccess && first == ncclSuccess) first = r;
  }
  ncclResult_t r = GroupEnd(false);
  return first != ncclSuccess ? first : r;
}

ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                            ncclConfig_t* config) {
  if (newcomm == nullptr) return ncclInvalidArgument;
  CommRank* c = Impl(comm);
  if (c == nullptr) return ncclInvalidArgument;
  if (NoopMode()) {
    *newcomm = color == NCCL_SPLIT_NOCOLOR ? nullptr : NoopComm(c->nranks, c->rank);
    return ncclSuccess;
  }
  if (ncclResult_t r = CheckConfig(config); r != ncclSuccess) return r;
  *newcomm = nullptr;
  return RunCommStep(MakeSplitStep(comm->impl, color, key, config, newcomm), false);
}

ncclResult_t pncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                             ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  CommRank* c = Impl(comm);
  if (c == nullptr || newcomm == nullptr || (excludeRanksCount > 0 && !excludeRanksList)) {
    return ncclInvalidArgument;
  }
  if (ncclResult_t r = CheckConfig(config); r != ncclSuccess) return r;
  std::vector<bool> excluded(c->nranks, false);
  for (int i = 0; i < excludeRanksCount; ++i) {
    const int x = excludeRanksList[i];
    if (x < 0 || x >= c->nranks) return ncclInvalidArgument;
    excluded[x] = true;
  }
  if (excluded[c->rank]) return ncclInvalidArgument;
  int new_rank = 0, new_n = 0;
  for (int q = 0; q < c->nranks; ++q) {
    if (excluded[q]) continue;
    if (q < c->rank) ++new_rank;
    ++new_n;
  }
  if (NoopMode()) {
    *newcomm = NoopComm(new_n, new_rank);
    return ncclSuccess;
  }
  if (shrinkFlags & NCCL_SHRINK_ABORT) {
    c->revoked.store(true);  // fail the parent's in-flight work first
    c->seg.Bump();
  }
  const std::string lineage = c->seg_name + "/shrink" + std::to_string(c->shrink_count++);
  const uint64_t h = NcclHash(lineage.data(), int(lineage.size()));
  std::shared_ptr<CommRank> child;
  ncclResult_t r =
      StartChildRank(SegmentNameFromNonce(h), h, new_n, new_rank, c->device, config, &child);
  if (r != ncclSuccess) return r;
  *newcomm = new ncclComm{kCommMagic, child};
  return RunCommStep([child] { return child->StepInit(); }, false);
}

ncclResult_t pncclCommFinalize(ncclComm_t comm) {
  CommRank* c = Impl(comm);
  if (c == nullptr) return ncclInvalidArgument;
  if (NoopMode()) return ncclSuccess;
  Drain(c);
  return c->AsyncError() == ncclRemoteError ? ncclSuccess : c->AsyncError();
}

ncclResult_t pncclCommDestroy(ncclComm_t comm) {
  CommRank* c = Impl(comm);
  if (c == nullptr) return comm == nullptr ? ncclSuccess : ncclInvalidArgument;
  if (!NoopMode()) Drain(c);
  comm->magic = 0;
  delete comm;
  return ncclSuccess;
}

ncclResult_t pncclCommAbort(ncclComm_t comm) {
  CommRank* c = Impl(comm);
  if (c == nullptr) return comm == nullptr ? ncclSuccess : ncclInvalidArgument;
  if (!NoopMode()) {
    c->aborted.store(true);
    int none = -1;
    c->seg.hdr().aborted_by.compare_exchange_strong(none, c->rank);
    c->seg.Bump();
    // Every queued op of this rank fails as it reaches the head of its stream; those behind
    // another communicator's blocked op fail once that one fails or completes. Waiting for them
    // here would wait forever where two communicators share a stream and deadlock (as an
    // abort on a GPU returns while its kernels sit behind another's).
    ProgressAll(nullptr);
  }
  comm->magic = 0;
  delete comm;
  return ncclSuccess;
}

ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  CommRank* c = Impl(comm);
  if (c == nullptr || revokeFlags != NCCL_REVOKE_DEFAULT) return ncclInvalidArgument;
  if (NoopMode()) return ncclSuccess;
  c->revoked.store(true);
  c->seg.Bump();
  ProgressAll(nullptr);
  return ncclSuccess;
}

ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  CommRank* c = Impl(comm);
  if (c == nullptr || asyncError == nullptr) return ncclInvalidArgument;
  if (NoopMode()) {
    *asyncError = ncclSuccess;
    return ncclSuccess;
  }
  ncclResult_t init = c->StepInit();
  ProgressAll(nullptr);  // also where timeouts of this process's stuck work fire
  if (init == ncclInProgress) {
    *asyncError = c->AsyncError() != ncclSuccess ? c->AsyncError() : ncclInProgress;
    if (*asyncError == ncclInProgress) {
      WaitHint hint;
      hint.comm = comm->impl;
      hint.epoch = c->seg.hdr().epoch.load();
      int spins = 0;
      IdleWait(hint, &spins);  // a polling loop should not starve the ranks it waits for
    }
    return ncclSuccess;
  }
  *asyncError = c->AsyncError();
  return ncclSuccess;
}

ncclResult_t pncclCommCount(const ncclComm_t comm, int* count) {
  CommRank* c = Impl(comm);
  if (c == nullptr || count == nullptr) return ncclInvalidArgument;
  *count = c->nranks;
  return ncclSuccess;
}

ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device) {
  CommRank* c = Impl(comm);
  if (c == nullptr || device == nullptr) return ncclInvalidArgument;
  *device = c->device;
  return ncclSuccess;
}

ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank) {
  CommRank* c = Impl(comm);
  if (c == nullptr || rank == nullptr) return ncclInvalidArgument;
  *rank = c->rank;
  return ncclSuccess;
}

ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                       ncclScalarResidence_t residence, ncclComm_t comm) {
  CommRank* c = Impl(comm);
  if (c == nullptr || op == nullptr || scalar == nullptr || DtypeSize(datatype) == 0) {
    return ncclInvalidArgument;
  }
  PreMulOp pm;
  pm.live = true;
  pm.dtype = datatype;
  if (residence == ncclScalarHostImmediate)
    pm.value = LoadAsDouble(datatype, scalar);
  else
    pm.device = scalar;
  size_t idx = 0;
  while (idx < c->premul.size() && c->premul[idx].live) ++idx;
  if (idx == c->premul.size())
    c->premul.push_back(pm);
  else
    c->premul[idx] = pm;
  *op = ncclRedOp_t(ncclNumOps + idx);
  return ncclSuccess;
}

ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  CommRank* c = Impl(comm);
  const size_t idx = size_t(op) - ncclNumOps;
  if (c == nullptr || op < ncclNumOps || idx >= c->premul.size() || !c->premul[idx].live) {
    return ncclInvalidArgument;
  }
  c->premul[idx].live = false;
  return ncclSuccess;
}

ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff, size_t, void** handle) {
  if (Impl(comm) == nullptr || handle == nullptr) return ncclInvalidArgument;
  *handle = buff != nullptr ? buff : reinterpret_cast<void*>(1);  // registration is a no-op here
  return ncclSuccess;
}

ncclResult_t pncclCommDeregister(const ncclComm_t comm, void*) {
  return Impl(comm) == nullptr ? ncclInvalidArgument : ncclSuccess;
}

ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                     int) {
  if (Impl(comm) == nullptr || win == nullptr) return ncclInvalidArgument;
  // Windows only serve the device API, which the host NCCL does not implement; a token suffices.
  *win = reinterpret_cast<ncclWindow_t>(new std::pair<void*, size_t>(buff, size));
  return ncclSuccess;
}

ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  if (Impl(comm) == nullptr) return ncclInvalidArgument;
  delete reinterpret_cast<std::pair<void*, size_t>*>(win);
  return ncclSuccess;
}

ncclResult_t pncclMemAlloc(void** ptr, size_t size) {
  if (ptr == nullptr) return ncclInvalidArgument;
  if (posix_memalign(ptr, 4096, size == 0 ? 1 : size) != 0) return ncclSystemError;
  return ncclSuccess;
}

ncclResult_t pncclMemFree(void* ptr) {
  std::free(ptr);
  return ncclSuccess;
}

const char* pncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

const char* pncclGetLastError(ncclComm_t) { return LastError(); }

// The host-only C API (include/ncclrr/hostnccl.h).
int ncclrrHostIsHostNccl(void) { return 1; }

cudaStream_t ncclrrHostStreamCreate(void) { return NewStream(); }

ncclResult_t ncclrrHostStreamSynchronize(cudaStream_t stream) {
  if (NoopMode()) return ncclSuccess;
  return Synchronize(stream == nullptr ? nullptr : StreamFor(stream, -1));
}

void ncclrrHostStreamDestroy(cudaStream_t stream) { ForgetStream(stream); }

int ncclrrHostStreamBusy(cudaStream_t stream) {
  if (NoopMode() || stream == nullptr) return 0;
  ProgressAll(nullptr);
  return StreamFor(stream, -1)->pending.load() != 0;
}

void ncclrrHostSetDevice(int device) { ThreadDevice() = device; }

void ncclrrHostStreamAddCallback(cudaStream_t stream, int device, void (*fn)(void*), void* arg) {
  if (fn == nullptr) return;
  if (NoopMode()) return fn(arg);
  auto task = std::make_unique<Task>();
  task->host_fn = fn;
  task->host_arg = arg;
  Enqueue(StreamFor(stream, device), std::move(task));
}

}  // extern "C"

NCCLRR_WEAK_ALIAS(ncclGetVersion)
NCCLRR_WEAK_ALIAS(ncclGetUniqueId)
NCCLRR_WEAK_ALIAS(ncclCommInitRank)
NCCLRR_WEAK_ALIAS(ncclCommInitRankConfig)
NCCLRR_WEAK_ALIAS(ncclCommInitRankScalable)
NCCLRR_WEAK_ALIAS(ncclCommInitAll)
NCCLRR_WEAK_ALIAS(ncclCommSplit)
NCCLRR_WEAK_ALIAS(ncclCommShrink)
NCCLRR_WEAK_ALIAS(ncclCommFinalize)
NCCLRR_WEAK_ALIAS(ncclCommDestroy)
NCCLRR_WEAK_ALIAS(ncclCommAbort)
NCCLRR_WEAK_ALIAS(ncclCommRevoke)
NCCLRR_WEAK_ALIAS(ncclCommGetAsyncError)
NCCLRR_WEAK_ALIAS(ncclCommCount)
NCCLRR_WEAK_ALIAS(ncclCommCuDevice)
NCCLRR_WEAK_ALIAS(ncclCommUserRank)
NCCLRR_WEAK_ALIAS(ncclRedOpCreatePreMulSum)
NCCLRR_WEAK_ALIAS(ncclRedOpDestroy)
NCCLRR_WEAK_ALIAS(ncclCommRegister)
NCCLRR_WEAK_ALIAS(ncclCommDeregister)
NCCLRR_WEAK_ALIAS(ncclCommWindowRegister)
NCCLRR_WEAK_ALIAS(ncclCommWindowDeregister)
NCCLRR_WEAK_ALIAS(ncclMemAlloc)
NCCLRR_WEAK_ALIAS(ncclMemFree)
NCCLRR_WEAK_ALIAS(ncclGetErrorString)
NCCLRR_WEAK_ALIAS(ncclGetLastError)
