// What `record --sketch` hands to a sketch backend: one half of a call (the send side before
// it, or the recv side and the send race sample after it), already planned (plan.h), with the
// label each result is written under. sketch_hooks.cc decides when a half runs; the backends
// decide how: the host NCCL's buffers are host memory sketched by SketchHost in stream order
// (sketch_host_path.cc), real CUDA buffers by SketchDevice kernels on the call's stream
// (sketch_device_path.cc).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ncclrr/sketch/sketch.h"
#include "ncclrr/trace/trace_data.h"
#include "stream_job.h"

namespace ncclrr::interpose {

struct SketchPart {
  const void* data = nullptr;
  sketch::SketchRequest request;
  SketchWhich blocks_as = SketchWhich::kSendBefore;     // label of the per-block sketches
  SketchWhich race_as = SketchWhich::kSendAfterSample;  // label of the race sample
};

using SketchJob = StreamJob<SketchPart>;

// Why a call's sketches were not taken; each reason is counted and noted in the trace.
enum class SkipReason : int {
  kNoPlan = 0,      // PlanCall refused (unknown dtype, rank/root not known yet)
  kNoBackend,       // no GPU sketches (no driver, no kernels) and not the host NCCL
  kSlotsInFlight,   // SketchDevice had no free slot
  kDeviceError,     // SketchDevice refused the request (see the note's first message)
  kCapturedOnHost,  // a captured call on the host NCCL (nothing runs at capture)
  kCallFailed,      // NCCL returned an error: the after-half is not taken
  kQueueFull,       // too many calls queued in one group or pending on a nonblocking comm
  kCount
};
void CountSkip(SkipReason reason, const std::string& detail = {});

// Backends. Each takes the job and reports skips itself.
bool HostSketchesAvailable();  // the host NCCL exports ncclrrHostStreamAddCallback
void HostSketch(const SketchJob& job);
bool DeviceSketchesAvailable();  // SketchDevice::Create succeeded (tried once, lazily)
// Sets up the current device's sketch context (see SketchDevice::Prepare).
void PrepareDeviceSketches();
void DeviceSketch(const SketchJob& job);
void DeviceSketchAtExit();  // a last poll of the slots in flight, within a short wait
// After the call is forwarded: the call's stream waits for this thread's sketches that ran
// beside it (SketchJob::beside_call), if any.
void JoinDeviceSketchesBesideCall();
// While one is alive on a thread, that thread's DeviceSketch calls are held and enqueued when
// it ends, fused: up to 16 parts per launch per stream (the halves of one NCCL group). Nested
// batches join the outermost one.
class DeviceSketchBatch {
 public:
  DeviceSketchBatch();
  ~DeviceSketchBatch();
  DeviceSketchBatch(const DeviceSketchBatch&) = delete;
  DeviceSketchBatch& operator=(const DeviceSketchBatch&) = delete;

 private:
  std::vector<SketchJob> jobs_;
};
// Nothing can launch `graph` any more (cuda_graphs.cc): the slots of the calls captured into it
// (call uids up to last_uid; a reused graph handle has later ones) are released once the
// `launches` seen have published and been read.
void DeviceSketchGraphGone(uint64_t graph, uint64_t last_uid, uint64_t launches);

struct NcclLibrary;
// Picks the backend for the NCCL the wrappers forward to (sketch_hooks.cc).
void ChooseSketchBackend(const NcclLibrary& lib);

// Writes the results of one part under the call's uid (SketchHost or SketchDevice output).
void WriteSketchResult(const SketchPart& part, uint64_t call_uid, sketch::SketchResult result,
                       uint64_t launch);

}  // namespace ncclrr::interpose
