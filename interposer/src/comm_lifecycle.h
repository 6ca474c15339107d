// Communicator creation, readiness and destruction: the slow paths behind the lifecycle
// wrappers. A communicator's identity is fixed when its creation call is made (comm_hash.h);
// its rank, size and device are learned once NCCL says it is ready, and only then is its
// CommRecord written:
//  * a blocking creation outside a group: when the call returns ncclSuccess;
//  * inside a group: when the outermost ncclGroupEnd returns ncclSuccess;
//  * a nonblocking communicator: when the application's own ncclCommGetAsyncError reports
//    ncclSuccess, or any later call on it returns ncclSuccess.
// Asking NCCL earlier would not be neutral: its queries complete pending group jobs and warn
// about a communicator in use before it is ready.
#pragma once
#include <nccl.h>

#include <mutex>

#include "comm_registry.h"

namespace ncclrr::interpose {

// New root communicator (InitRank*, InitAll) made from `unique_id` (128 bytes; null: unknown).
CommState* NewRootComm(CommOrigin origin, const void* unique_id, int nranks, int rank,
                       const ncclConfig_t* config);
// New child of `parent` (may be null when the parent is unknown). `color` NOCOLOR still counts.
CommState* NewSplitComm(CommState* parent, int color, int key, const ncclConfig_t* config);
CommState* NewShrinkComm(CommState* parent, const int* exclude, int exclude_count,
                         const ncclConfig_t* config);

// After the creation call returned `result`: registers the handle found in *slot (or waits for
// NCCL to fill it in), and writes the CommRecord when the communicator is ready.
void PublishCreated(CommState* cs, ncclComm_t* slot, ncclResult_t result);
// At the thread's outermost ncclGroupEnd that returned ncclSuccess.
void FinalizeGroupCreations();
// ncclCommDestroy / ncclCommAbort succeeded: the address may be reused.
void ForgetComm(ncclComm_t handle);
// The profiler plugin's handshake (handshake.cc): NCCL hashes of communicators recorded here.
void RememberNcclHash(uint64_t hash);
bool KnowsNcclHash(uint64_t hash);
// Guards the creation bookkeeping; taken around fork() (triggers.cc).
std::mutex& LifecycleMutex();

}  // namespace ncclrr::interpose
