// One half of a call that ncclrr runs on the call's own stream: the sketches (sketch_jobs.h) and
// the buffer copies (capture_jobs.h) are both StreamJobs of their own part type. sketch_hooks.cc
// decides when each half runs, for both; the backends decide how (host_stream.h on the host
// NCCL; kernels or copies on a GPU, watched by device_poller.h).
#pragma once
#include <cstdint>
#include <memory>

#include "host_stream.h"

namespace ncclrr::interpose {

template <typename Part>
struct StreamJob {
  static constexpr int kMaxParts = 2;  // before: send + device scalar; after: recv (+ race)
  uint64_t call_uid = 0;
  void* stream = nullptr;  // the call's cudaStream_t
  int device = -1;         // the communicator's device (the host NCCL's null stream needs it)
  bool captured = false;   // the call is being captured into a CUDA graph
  // The call only reads these buffers (an out-of-place call's large send side): on a GPU the
  // sketches run on a side stream beside the call, joined once it is enqueued.
  bool beside_call = false;
  int n = 0;
  Part parts[kMaxParts];
  bool empty() const { return n == 0; }
  void Add(const Part& p) { parts[n++] = p; }
};

// Runs `run(job)` on the host NCCL's stream of the job, in stream order, on whichever thread
// drives that stream (it must not call NCCL). The caller checked HostStreamAddCallback().
template <typename Job>
void RunOnHostStream(const Job& job, void (*run)(const Job&)) {
  struct Call {
    Job job;
    void (*run)(const Job&);
  };
  HostStreamAddCallback()(
      job.stream, job.device,
      [](void* arg) {
        std::unique_ptr<Call> call(static_cast<Call*>(arg));
        call->run(call->job);
      },
      new Call{job, run});
}

}  // namespace ncclrr::interpose
