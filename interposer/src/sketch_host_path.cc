// Sketches on the host NCCL (replayer/hostnccl: every CPU test, the demo). Its buffers are host
// memory and its streams are emulated: work runs when every rank has issued it, not when the
// call returns. So each half of a call is a host function put on the call's stream with
// ncclrrHostStreamAddCallback (like cudaLaunchHostFunc): the before-half runs once the work
// queued ahead of the call is done, the after-half once the call itself is done — the same
// stream order the GPU kernels get. The callback runs SketchHost and writes the records.
#include <dlfcn.h>

#include <memory>

#include "sketch_jobs.h"
#include "symbols.h"

namespace ncclrr::interpose {
namespace {

using AddCallbackFn = void (*)(void* stream, int device, void (*fn)(void*), void* arg);

AddCallbackFn ResolveAddCallback() {
  const char* name = "ncclrrHostStreamAddCallback";
  if (void* f = RealDlsym(RTLD_DEFAULT, name)) return reinterpret_cast<AddCallbackFn>(f);
  void* handle = nullptr;  // the host NCCL loaded RTLD_LOCAL (dlopen'ed by the program)
  return reinterpret_cast<AddCallbackFn>(FindInLoadedObjects(name, &handle));
}

AddCallbackFn AddCallback() {
  static const AddCallbackFn fn = ResolveAddCallback();
  return fn;
}

// Runs on whichever thread drives the host stream; must not call NCCL.
void RunJob(void* arg) {
  std::unique_ptr<SketchJob> job(static_cast<SketchJob*>(arg));
  for (int i = 0; i < job->n; ++i) {
    const SketchPart& part = job->parts[i];
    auto result = sketch::SketchHost(part.data, part.request);
    if (!result.ok()) {
      CountSkip(SkipReason::kNoPlan, result.status().message());
      continue;
    }
    WriteSketchResult(part, job->call_uid, std::move(*result), 0);
  }
}

}  // namespace

bool HostSketchesAvailable() { return AddCallback() != nullptr; }

void HostSketch(const SketchJob& job) {
  if (job.captured) return CountSkip(SkipReason::kCapturedOnHost);
  AddCallback()(job.stream, job.device, RunJob, new SketchJob(job));
}

}  // namespace ncclrr::interpose
