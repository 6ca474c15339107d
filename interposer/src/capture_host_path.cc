// Captures on the host NCCL: its buffers are host memory on emulated streams, so each half of a
// call is a host function put on the call's stream (host_stream.h): the send buffer is copied
// once the work queued ahead of the call is done, the recv buffer once the call is done. The copy
// goes to the capture writer thread; this callback never writes files.
#include "capture_jobs.h"
#include "env_config.h"
#include "host_stream.h"

namespace ncclrr::interpose {
namespace {

// Runs on whichever thread drives the host stream; must not call NCCL.
void RunJob(const CaptureJob& job) {
  for (int i = 0; i < job.n; ++i) {
    const CapturePart& p = job.parts[i];
    if (QueuedCaptureBytes() + p.bytes > GetConfig().capture_staging_bytes) {
      CountCaptureSkip(CaptureSkip::kStagingFull, 1, std::to_string(p.bytes) + " bytes");
      continue;
    }
    QueueCapturedBytes(job.call_uid, p.which,
                       std::string(static_cast<const char*>(p.data), p.bytes));
  }
}

}  // namespace

bool HostCapturesAvailable() { return HostStreamAddCallback() != nullptr; }

void HostCapture(const CaptureJob& job) { RunOnHostStream(job, RunJob); }

}  // namespace ncclrr::interpose
