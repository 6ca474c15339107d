// Host streams and the progress engine.
//
// Stream semantics: a stream is a FIFO of tasks (one NCCL call, or the calls one outermost group
// issued on that stream). Only the task at the head of a stream runs; its operations progress
// together, so the sends and receives of one group cannot deadlock each other, while work queued
// behind a blocked collective waits, exactly like kernels on a CUDA stream (this is what makes
// cross-communicator ordering bugs hang as they do on GPUs).
//
// There are no worker threads. Whoever calls into the library drives every stream of the process:
// enqueuing drives until nothing can move, and synchronizing (ncclrrHostStreamSynchronize,
// ncclCommGetAsyncError, destroy) drives until its condition holds. Each stream has a try-lock,
// so concurrent callers never drive the same stream twice. Results do not depend on who drives.
#pragma once
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "op.h"

namespace ncclrr::host {

struct Task {
  std::vector<Op> ops;
  // A host function run in stream order instead of ops (ncclrrHostStreamAddCallback), like
  // cudaLaunchHostFunc: what the interposer uses to sketch buffers before and after a call.
  void (*host_fn)(void*) = nullptr;
  void* host_arg = nullptr;
};

class HostStream {
 public:
  std::mutex mu;  // guards queue and error
  std::deque<std::unique_ptr<Task>> queue;
  ncclResult_t error = ncclSuccess;
  std::atomic<uint64_t> pending{0};
  std::atomic_flag driving = ATOMIC_FLAG_INIT;
};

// The host stream behind a cudaStream_t; the null stream is the default stream of `device`.
HostStream* StreamFor(cudaStream_t handle, int device);
cudaStream_t NewStream();
void ForgetStream(cudaStream_t handle);
bool IsKnownStream(cudaStream_t handle);

// Queues the task; with `drive`, then drives every stream until nothing moves.
void Enqueue(HostStream* s, std::unique_ptr<Task> task, bool drive = true);
// Drives every stream until nothing moves. Returns true if anything progressed.
bool ProgressAll(WaitHint* hint);
// Waits until `s` (or every stream, for null) is empty; returns and clears its first error.
ncclResult_t Synchronize(HostStream* s);
// Drives until `step` returns something other than ncclInProgress.
template <class Step>
ncclResult_t DriveUntil(Step step);
void IdleWait(const WaitHint& hint, int* spins);

template <class Step>
ncclResult_t DriveUntil(Step step) {
  int spins = 0;
  for (;;) {
    ncclResult_t r = step();
    if (r != ncclInProgress) return r;
    WaitHint hint;
    if (!ProgressAll(&hint))
      IdleWait(hint, &spins);
    else
      spins = 0;
  }
}

}  // namespace ncclrr::host
