// GPU timing in the preload (NCCLRR_GPU_TIMING=1, set by `ncclrr record --gpu-timing`): a
// gputiming::GpuTimer started with the trace says when each collective's and p2p call's kernels
// ran on the GPU; its GpuTime records reach the trace through the writer, from the timer's own
// collector thread. docs/gpu-timing.md lists the calls made here and why.
//
// Off (the default), every hook below is one relaxed load and a branch not taken. On, a call
// outside a group costs what GpuTimer::BeginCall/EndCall cost (a CUPTI push and pop, or two
// cuEventRecord). Nothing here may crash or block the job: without CUDA (ncclrr's host NCCL, a
// CPU-only process) or when the timer cannot start, the trace gets one note saying why and the
// job runs on untimed.
#pragma once
#include <atomic>
#include <cstdint>

#include "ncclrr/trace/records.h"

namespace ncclrr::interpose {

struct NcclLibrary;

extern std::atomic<bool> g_gpu_timing_on;
inline bool GpuTimingOn() { return g_gpu_timing_on.load(std::memory_order_relaxed); }

// At recording start (StartRecordingSlow): starts the timer when NCCLRR_GPU_TIMING asks for it.
void StartGpuTiming(const NcclLibrary& lib);
// After a communicator is created: when the process had no CUDA driver loaded at recording
// start (its first NCCL call came before CUDA), tries once more. Cheap when nothing is pending.
void RetryGpuTiming();
// At exit, on a thread whose ring is still alive (the housekeeping thread): emits what the timer
// holds and releases CUPTI and the events.
void StopGpuTiming();

// The per-call path (CallBuilder), for collectives and p2p calls: before forwarding (a call
// inside a group only joins the group: its kernels launch at the outermost ncclGroupEnd) and
// after it.
void GpuTimingBeforeCall(const CallRecord& rec, int32_t device);
void GpuTimingAfterCall(const CallRecord& rec);

// The application's outermost ncclGroupEnd: the group's kernels launch inside it.
void GpuTimingBeforeGroupEnd();
void GpuTimingAfterGroupEnd();
// ncclGroupSimulateEnd ended the group: nothing was launched.
void GpuTimingDiscardGroup();

// CUDA graphs (cuda_graphs.cc): `graph` is the template set's timing id (never a CUgraph handle,
// which CUDA reuses after destroy).
void GpuTimingAddTemplate(uint64_t graph, const CallRecord& rec);
void GpuTimingBeforeGraphLaunch(uint64_t graph);
void GpuTimingAfterGraphLaunch();
void GpuTimingForgetGraph(uint64_t graph);

// The job is about to call CUPTI itself (cupti_wrappers.cc): hand CUPTI over.
void GpuTimingForeignCupti(const char* api);

// The application's outermost ncclGroupEnd, timed when GPU timing is on (api_other.cc).
class GpuGroupEndScope {
 public:
  explicit GpuGroupEndScope(bool outermost) : on_(outermost && GpuTimingOn()) {
    if (__builtin_expect(on_, 0)) GpuTimingBeforeGroupEnd();
  }
  ~GpuGroupEndScope() {
    if (__builtin_expect(on_, 0)) GpuTimingAfterGroupEnd();
  }
  GpuGroupEndScope(const GpuGroupEndScope&) = delete;
  GpuGroupEndScope& operator=(const GpuGroupEndScope&) = delete;

 private:
  const bool on_;
};

}  // namespace ncclrr::interpose
