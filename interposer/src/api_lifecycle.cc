// Wrappers of communicator creation and teardown. A creation call's record carries the new
// communicator's id (InitRank*, InitAll) or the parent's (split, shrink: collective over the
// parent); the child itself is described by its CommRecord (comm_lifecycle.h).
#include <nccl.h>

#include <cstring>

#include "call_path.h"
#include "comm_hash.h"
#include "comm_lifecycle.h"
#include "sketch_hooks.h"

using namespace ncclrr;
using namespace ncclrr::interpose;

namespace {

// Records a root creation: `id` names the communicator on every rank that uses it.
template <typename Forward>
ncclResult_t RecordRootInit(Api api, CommOrigin origin, const void* id, int nranks, int rank,
                            ncclComm_t* newcomm, const ncclConfig_t* config, const void* caller,
                            Forward&& forward) {
  CallBuilder call(api, nullptr, nullptr, caller);
  CommState* cs = NewRootComm(origin, id, nranks, rank, config);
  call.comm = cs;
  call.rec.comm_id = cs->id;
  call.rec.count = static_cast<uint64_t>(nranks);
  if (!cs->blocking) call.rec.flags |= call_flags::kNonblocking;
  if (__builtin_expect(g_sketch_on, 0)) PrepareDataPathsBeforeCommInit();
  const ncclResult_t r = forward();
  PublishCreated(cs, newcomm, r);
  return call.Finish(r);
}

}  // namespace

NCCLRR_API ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  const NcclLibrary* lib = Lib();
  if (lib == nullptr || lib->fn.ncclGetUniqueId == nullptr) return MissingFunction(__func__);
  if (!ShouldRecord(lib, NCCLRR_CALLER)) {
    const ncclResult_t r = lib->fn.ncclGetUniqueId(uniqueId);
    if (t_state.capture_unique_id && r == ncclSuccess && uniqueId != nullptr) {
      std::memcpy(t_state.unique_id, uniqueId, sizeof t_state.unique_id);  // InitAll's own id
      t_state.have_unique_id = true;
    }
    return r;
  }
  CallBuilder call(Api::kGetUniqueId, nullptr, nullptr, NCCLRR_CALLER);
  const ncclResult_t r = lib->fn.ncclGetUniqueId(uniqueId);
  if (r == ncclSuccess && uniqueId != nullptr)  // the communicator this id will create
    call.rec.comm_id = RootCommHash(lib->version, uniqueId);
  return call.Finish(r);
}

NCCLRR_API ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId,
                                         int rank) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclCommInitRank, comm, nranks, commId, rank);
  return RecordRootInit(Api::kCommInitRank, CommOrigin::kInitRank, &commId, nranks, rank, comm,
                        nullptr, NCCLRR_CALLER,
                        [&] { return lib->fn.ncclCommInitRank(comm, nranks, commId, rank); });
}

NCCLRR_API ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId,
                                               int rank, ncclConfig_t* config) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclCommInitRankConfig, comm, nranks, commId, rank, config);
  return RecordRootInit(Api::kCommInitRankConfig, CommOrigin::kInitRankConfig, &commId, nranks,
                        rank, comm, config, NCCLRR_CALLER, [&] {
                          return lib->fn.ncclCommInitRankConfig(comm, nranks, commId, rank, config);
                        });
}

NCCLRR_API ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank,
                                                 int nId, ncclUniqueId* commIds,
                                                 ncclConfig_t* config) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclCommInitRankScalable, newcomm, nranks, myrank, nId, commIds,
                                  config);
  const void* id = nId > 0 && commIds != nullptr ? commIds : nullptr;  // NCCL hashes the first
  return RecordRootInit(Api::kCommInitRankScalable, CommOrigin::kInitRankScalable, id, nranks,
                        myrank, newcomm, config, NCCLRR_CALLER, [&] {
                          return lib->fn.ncclCommInitRankScalable(newcomm, nranks, myrank, nId,
                                                                  commIds, config);
                        });
}

NCCLRR_API ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclCommInitAll, comms, ndev, devlist);
  CallBuilder call(Api::kCommInitAll, nullptr, nullptr, NCCLRR_CALLER);
  call.rec.count = static_cast<uint64_t>(ndev);
  // NCCL makes the id itself, through the PLT: the nested call is seen but not recorded.
  t_state.capture_unique_id = true;
  t_state.have_unique_id = false;
  const ncclResult_t r = lib->fn.ncclCommInitAll(comms, ndev, devlist);
  t_state.capture_unique_id = false;
  const void* id = t_state.have_unique_id ? t_state.unique_id : nullptr;
  if ((r == ncclSuccess || r == ncclInProgress) && comms != nullptr && ndev > 0) {
    CommState* first = nullptr;
    for (int i = 0; i < ndev; ++i) {
      CommState* cs = NewRootComm(CommOrigin::kInitAll, id, ndev, i, nullptr);
      if (first == nullptr) {
        first = cs;
      } else {  // one id for all: a stand-in is shared too
        cs->id = first->id;
        cs->nccl_hash = first->nccl_hash;
        cs->hash_known = first->hash_known;
      }
      PublishCreated(cs, &comms[i], r);
    }
    call.rec.comm_id = first->id;
  }
  return call.Finish(r);
}

NCCLRR_API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                      ncclConfig_t* config) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclCommSplit, comm, color, key, newcomm, config);
  CallBuilder call(Api::kCommSplit, comm, nullptr, NCCLRR_CALLER);
  CommState* child = NewSplitComm(call.comm, color, key, config);
  const ncclResult_t r = lib->fn.ncclCommSplit(comm, color, key, newcomm, config);
  if (color != NCCL_SPLIT_NOCOLOR) PublishCreated(child, newcomm, r);
  return call.Finish(r);
}

NCCLRR_API ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList,
                                       int excludeRanksCount, ncclComm_t* newcomm,
                                       ncclConfig_t* config, int shrinkFlags) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclCommShrink, comm, excludeRanksList, excludeRanksCount,
                                  newcomm, config, shrinkFlags);
  CallBuilder call(Api::kCommShrink, comm, nullptr, NCCLRR_CALLER);
  call.rec.count = static_cast<uint64_t>(excludeRanksCount > 0 ? excludeRanksCount : 0);
  call.rec.aux = static_cast<uint8_t>(shrinkFlags);
  CommState* child = NewShrinkComm(call.comm, excludeRanksList, excludeRanksCount, config);
  const ncclResult_t r = lib->fn.ncclCommShrink(comm, excludeRanksList, excludeRanksCount, newcomm,
                                                config, shrinkFlags);
  PublishCreated(child, newcomm, r);
  return call.Finish(r);
}

NCCLRR_API ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclCommFinalize, comm);
  CallBuilder call(Api::kCommFinalize, comm, nullptr, NCCLRR_CALLER);
  return call.Finish(lib->fn.ncclCommFinalize(comm));
}

NCCLRR_API ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclCommDestroy, comm);
  CallBuilder call(Api::kCommDestroy, comm, nullptr, NCCLRR_CALLER);
  const ncclResult_t r = lib->fn.ncclCommDestroy(comm);
  if (r == ncclSuccess || r == ncclInProgress) ForgetComm(comm);
  return call.Finish(r);
}

NCCLRR_API ncclResult_t ncclCommAbort(ncclComm_t comm) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclCommAbort, comm);
  CallBuilder call(Api::kCommAbort, comm, nullptr, NCCLRR_CALLER);
  const ncclResult_t r = lib->fn.ncclCommAbort(comm);
  if (r == ncclSuccess || r == ncclInProgress) ForgetComm(comm);
  return call.Finish(r);
}

NCCLRR_API ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclCommRevoke, comm, revokeFlags);
  CallBuilder call(Api::kCommRevoke, comm, nullptr, NCCLRR_CALLER);
  call.rec.aux = static_cast<uint8_t>(revokeFlags);
  return call.Finish(lib->fn.ncclCommRevoke(comm, revokeFlags));
}
