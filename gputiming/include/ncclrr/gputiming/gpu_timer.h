#pragma once
// GpuTimer: when NCCL's kernels ran on the GPU, per recorded call, on the host's CLOCK_MONOTONIC.
//
// Two sources, chosen at Start and reported in every GpuTimeRecord:
//  * kCupti: CUPTI's activity API (CONCURRENT_KERNEL records of NCCL kernels, each tied to the
//    call or group whose scope was open on the launching thread; see ApiRecords). Exact
//    kernel start/end, converted from CUPTI's clock onto CLOCK_MONOTONIC by calibration.
//  * kEventPair: CUDA events recorded on the call's stream before and after it. Used when CUPTI
//    is missing, or when another component of the process uses CUPTI (the PyTorch profiler,
//    Nsight: ncclrr never takes CUPTI away from the job). The start is when the stream reached
//    the call, which includes waiting for earlier work on that stream. Calls captured into
//    graphs or on nonblocking communicators are not timed this way.
//
// Nothing is linked: libcupti and libcuda are reached through dlopen. Without a GPU Start returns
// a Status that says why. All methods are thread-safe; the Begin*/End*/Add* methods are called on
// the thread that makes the NCCL call and keep their state thread-local.
//
// How a recorder calls it (see docs/gpu-timing.md):
//   a call outside a group:   BeginCall(c); forward the call; EndCall();
//   a call inside a group:    AddGroupMember(c); forward the call;
//   the outermost GroupEnd:   BeginGroupEnd(); forward ncclGroupEnd; EndGroupEnd();
//   ncclGroupSimulateEnd:     DiscardGroup() after forwarding it (nothing was launched)
//   a captured call:          AddGraphTemplate(graph, c, group_id) as well as the above
//   cudaGraphLaunch:          BeginGraphLaunch(graph); forward; EndGraphLaunch();
// Records reach `GpuTimerOptions::sink` from the timer's own collector thread (or from Collect /
// Stop), never from inside the Begin/End calls.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "ncclrr/base/status.h"
#include "ncclrr/trace/records.h"
#include "ncclrr/trace/trace_data.h"

namespace ncclrr::gputiming {

// One NCCL call whose kernels are to be timed.
struct TimedCall {
  uint64_t uid = 0;          // CallRecord.uid; must not have bit 63 or 62 set
  int32_t device = -1;       // CUDA device of the communicator (-1: unknown)
  uint64_t stream = 0;       // the cudaStream_t passed to NCCL
  bool captured = false;     // captured into a CUDA graph: it runs at graph launches only
  bool nonblocking = false;  // nonblocking communicator: NCCL launches on its own thread
};

enum class SourceChoice : uint8_t { kAuto = 0, kCupti, kEventPair };

// How CUPTI ties a kernel to the call that launched it. Both narrow ways are widened to every
// API record when NCCL kernels come and no launch was tied to a call for two rounds.
enum class ApiRecords : uint8_t {
  kAuto = 0,      // CUPTI callbacks at the launch entry points (work whenever the job made its
                  // CUDA context; other API calls cost nothing); kLaunchesOnly where refused
  kLaunchesOnly,  // API records of the launch entry points only (CUPTI 12.6+); they never come
                  // for a CUDA context made before CUPTI started (PyTorch, JAX)
  kAll,           // every driver and runtime API record (what the PyTorch profiler enables)
};

struct GpuTimerOptions {
  SourceChoice choice = SourceChoice::kAuto;
  std::string cupti_library;           // a path; empty: the loaded one, then the usual places
  std::string cuda_driver_library;     // a path; empty: the libcuda.so.1 the process loaded
  uint32_t collect_interval_ms = 200;  // 0: no collector thread, the caller calls Collect()
  ApiRecords api_records = ApiRecords::kAuto;
  // GPU progress for `ncclrr status`: start marks (GpuTimeRecords with end_ns 0) for calls seen
  // running on the GPU. Event pairs give them for free; CUPTI reports a kernel only when it ends,
  // so beside it one CUDA event is recorded before each call on its stream when `progress` is
  // set (about 1 us per call on an H200; a call captured into a graph or on a nonblocking
  // communicator gets none).
  bool progress = false;
  std::function<void(const GpuTimeRecord&)> sink;           // required
  std::function<void(NoteLevel, const std::string&)> note;  // optional: what the trace says
};

struct GpuTimerStats {
  uint64_t nccl_kernels = 0;         // NCCL kernel records seen (CUPTI) or event pairs completed
  uint64_t matched_kernels = 0;      // of those, attributed to a call
  uint64_t unmatched_kernels = 0;    // NCCL kernels no recorded call explains
  uint64_t records = 0;              // GpuTimeRecords emitted
  uint64_t skipped_calls = 0;        // calls that could not be timed (captured or nonblocking in
                                     // event-pair mode, no event available)
  uint64_t cupti_dropped = 0;        // activity records CUPTI reported dropped
  uint64_t launch_correlations = 0;  // CUPTI: launches that carried an ncclrr correlation id
  uint64_t start_marks = 0;  // GpuTimeRecords with end_ns 0: calls seen running (GPU progress)
};

// Parses NCCLRR_GPU_TIMING_SOURCE ("auto", "cupti", "events"); kAuto for anything else.
SourceChoice SourceChoiceFromString(const std::string& text);
const char* SourceName(GpuTimeSource source);

class GpuTimer {
 public:
  // Starts the best available source (or the one `options.choice` demands). Fails with a Status
  // that says what is missing when no source can run (no GPU, no libcuda in the process).
  static StatusOr<std::unique_ptr<GpuTimer>> Start(GpuTimerOptions options);
  ~GpuTimer();  // Stop()
  GpuTimer(const GpuTimer&) = delete;
  GpuTimer& operator=(const GpuTimer&) = delete;

  // The source in use now. kCupti can become kEventPair (OnForeignCuptiUse), never back.
  GpuTimeSource source() const;
  // One sentence for the trace: the source, the library, why a fallback was taken.
  std::string Describe() const;

  void BeginCall(const TimedCall& call);
  void EndCall();
  void AddGroupMember(const TimedCall& call);
  void BeginGroupEnd();
  void EndGroupEnd();
  void DiscardGroup();

  void AddGraphTemplate(uint64_t graph, const TimedCall& call, uint64_t group_id);
  void BeginGraphLaunch(uint64_t graph);
  void EndGraphLaunch();
  void ForgetGraph(uint64_t graph);  // the graph was destroyed

  // Another component is about to call `api` of CUPTI (cuptiSubscribe,
  // cuptiActivityRegisterCallbacks, cuptiActivityEnable, cuptiFinalize...): ncclrr hands CUPTI
  // over (flushes, disables what it enabled) and continues with event pairs.
  void OnForeignCuptiUse(const char* api);

  // Emits what completed since the last collection (the collector thread calls this too).
  void Collect();
  // Flushes everything, emits it, releases CUPTI and the events. Idempotent.
  Status Stop();

  GpuTimerStats Stats() const;

  class Impl;

 private:
  explicit GpuTimer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ncclrr::gputiming
