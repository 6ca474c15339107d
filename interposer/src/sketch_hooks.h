// `record --sketch` (NCCLRR_SKETCH=1): data sketches of the buffers of every collective and
// Send/Recv (docs/design.md "Data checks", docs/sketches.md "Integration"). The send side is
// sketched in stream order before the call, the recv side (and, out of place, the send
// buffer's race sample) after it. Inside a group nothing runs before the outermost GroupEnd, so
// both halves wait for it; on a nonblocking communicator whose call returned ncclInProgress the
// after-half waits (on a GPU) for ncclCommGetAsyncError to report ncclSuccess.
//
// The per-call path pays one predictable branch on g_sketch_on when sketches are off. Nothing
// here may change what the job computes: a call that cannot be sketched safely is skipped and
// counted in a note.
#pragma once
#include <nccl.h>

#include "ncclrr/trace/records.h"

namespace ncclrr::interpose {

class CallBuilder;
struct CommState;
struct NcclLibrary;

// Set once, when recording starts with NCCLRR_SKETCH=1 or NCCLRR_CAPTURE_BYTES > 0: the hooks
// below then plan and run the call's sketches and captures (capture_jobs.h) alike.
extern bool g_sketch_on;

// At recording start (after the exit handlers of triggers.cc are installed).
void InitSketches(const NcclLibrary& lib);

// A collective or Send/Recv whose record is filled, just before it is forwarded.
void SketchBeforeCall(CallBuilder& call);
// From CallBuilder::Finish: the after-half of the call sketched by SketchBeforeCall, if any.
void SketchAfterCall(const CallRecord& rec, ncclResult_t result);
// Around the real ncclGroupEnd: the application's outermost one runs the queued halves.
void SketchGroupEndBefore();
void SketchGroupEndAfter(ncclResult_t result);
// ncclCommGetAsyncError saw `value` for `comm`: after-halves parked on it go (or are dropped).
void SketchAsyncError(ncclComm_t comm, ncclResult_t value);
// Before a communicator is created on this thread's device (record --sketch or --capture): the
// GPU sketch context and capture staging are allocated now. Allocating pinned or device memory
// at the first call instead can wait for the GPU's work to finish, and with one thread per GPU
// that work can be another GPU's NCCL kernel waiting for this thread.
void PrepareDataPathsBeforeCommInit();

}  // namespace ncclrr::interpose

#define NCCLRR_SKETCH_BEFORE(call)                           \
  if (__builtin_expect(::ncclrr::interpose::g_sketch_on, 0)) \
  ::ncclrr::interpose::SketchBeforeCall(call)
