// Submission of operations and NCCL's group semantics: per-thread nesting; calls made inside a
// group take their positions and are queued at the outermost ncclGroupEnd, in call order, one
// task per stream; communicator inits and splits made inside a group complete at that GroupEnd.
#pragma once
#include <functional>
#include <memory>

#include "comm.h"
#include "op.h"

namespace ncclrr::host {

ncclResult_t GroupStart();
ncclResult_t GroupEnd(bool simulate);
bool InGroup();

// Issues one call: at once outside a group, at the outermost GroupEnd inside one.
ncclResult_t Submit(ncclComm_t comm, Op op, cudaStream_t stream);

// A communicator rendezvous (init, split child) that a group defers; outside a group it is driven
// to completion before returning. `nonblocking` comms are left to ncclCommGetAsyncError.
ncclResult_t RunCommStep(std::function<ncclResult_t()> step, bool nonblocking);

// Validates a handle; null when it is not one of ours.
CommRank* Impl(ncclComm_t comm);

// Thread-local text for ncclGetLastError.
void SetLastError(const std::string& text);
const char* LastError();

}  // namespace ncclrr::host
