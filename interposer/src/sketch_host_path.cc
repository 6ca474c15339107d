// Sketches on the host NCCL (hostnccl: every CPU test, the demo). Its buffers are host
// memory and its streams are emulated: work runs when every rank has issued it, not when the
// call returns. So each half of a call is a host function put on the call's stream with
// ncclrrHostStreamAddCallback (like cudaLaunchHostFunc): the before-half runs once the work
// queued ahead of the call is done, the after-half once the call itself is done — the same
// stream order the GPU kernels get. The callback runs SketchHost and writes the records.
#include "host_stream.h"
#include "sketch_jobs.h"

namespace ncclrr::interpose {
namespace {

// Runs on whichever thread drives the host stream; must not call NCCL.
void RunJob(const SketchJob& job) {
  for (int i = 0; i < job.n; ++i) {
    const SketchPart& part = job.parts[i];
    auto result = sketch::SketchHost(part.data, part.request);
    if (!result.ok()) {
      CountSkip(SkipReason::kNoPlan, result.status().message());
      continue;
    }
    WriteSketchResult(part, job.call_uid, std::move(*result), 0);
  }
}

}  // namespace

bool HostSketchesAvailable() { return HostStreamAddCallback() != nullptr; }

void HostSketch(const SketchJob& job) {
  if (job.captured) return CountSkip(SkipReason::kCapturedOnHost);
  RunOnHostStream(job, RunJob);
}

}  // namespace ncclrr::interpose
