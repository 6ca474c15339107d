#pragma once
// GPU times from CUDA events recorded on the call's stream before and after the launching code
// (the fallback when CUPTI is missing or belongs to the job). The start is when the stream reached
// the call, so it includes waiting for the stream's earlier work; the end follows NCCL's kernel.
//
// Events are never recorded into a stream that is being captured (a captured call runs later, at
// graph launch) nor around a nonblocking communicator's call (NCCL enqueues it later from its own
// thread): those calls are counted as not timed. The collector reads events in relaxed
// stream-capture mode, so it cannot disturb a capture running on another thread.
//
// Event times become CLOCK_MONOTONIC through a reference event per CUDA context, recorded on a
// private stream and waited for (at most a few ms, never under the lock the calls' threads take),
// renewed every second (cuEventElapsedTime is a float of ms). The pending pairs are read
// outside that lock too: a call never waits for the collector's driver calls.
//
// GPU progress (`ncclrr status`): a call whose start event the GPU reached but whose end it has
// not, in two collections in a row, gets a start mark (a GpuTimeRecord with end_ns 0) once, so a
// reader of the growing trace tells "issued, not started on the GPU" from "running". Calls that
// end within a collection round never get one.
//
// Markers only (Mode::kProgressMarkers, beside CUPTI, which reports a kernel only when it ends):
// one start event per call and no end event. A stream runs its work in order, so a call's kernels
// are done once a later call's start event on the same stream completed; the newest completed
// marker of a stream that stays newest for two collections gets the start mark.
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "cuda_driver_api.h"
#include "timing_source.h"

namespace ncclrr::gputiming {

class EventPairSource : public TimingSource {
 public:
  enum class Mode { kTiming, kProgressMarkers };
  static StatusOr<std::unique_ptr<EventPairSource>> Start(const std::string& driver_library,
                                                          Mode mode = Mode::kTiming);
  ~EventPairSource() override;

  GpuTimeSource kind() const override { return GpuTimeSource::kEventPair; }
  std::string Describe() const override;
  uint64_t BeginScope(uint64_t ext_id, const TimedCall* members, size_t n) override;
  void EndScope(uint64_t ext_id, uint64_t token, const TimedCall* members, size_t n) override;
  void AddGraphTemplate(uint64_t, const TimedCall&, uint64_t) override {}
  uint64_t BeginGraphLaunch(uint64_t ext_id, uint64_t graph) override;
  void EndGraphLaunch(uint64_t, uint64_t) override {}
  void ForgetGraph(uint64_t) override {}
  void Collect(bool final, const EmitFn& emit, const NoteFn& note) override;
  void Stop(const EmitFn& emit, const NoteFn& note) override;
  void AddStats(GpuTimerStats* stats) const override;
  // Markers: the last collection saw a call issued over a second ago that its stream has not
  // reached (the GPU stalls, or runs far behind the host).
  bool Stalled() const { return stalled_.load(std::memory_order_relaxed); }

 private:
  struct Pair {
    std::vector<uint64_t> uids;
    cuda::Context ctx = nullptr;
    cuda::Stream stream = nullptr;
    cuda::Event start = nullptr, end = nullptr;
    int64_t host_ns = 0;          // when the start event was recorded
    int64_t started_seen_ns = 0;  // first collection that saw it started and not ended
    bool start_marked = false;    // its start mark was emitted
  };
  struct Ref {
    cuda::Event event;
    int64_t mono_ns;
  };
  struct ContextState {
    std::vector<cuda::Event> free_events;
    std::vector<Ref> refs;  // increasing mono_ns
    cuda::Stream private_stream = nullptr;
  };

  EventPairSource(cuda::Driver api, Mode mode) : api_(std::move(api)), mode_(mode) {}
  cuda::Event TakeEvent(cuda::Context ctx);  // mu_ held
  // collect_mu_ held, mu_ not held: it can wait for the GPU (bounded).
  // kReady: the context has a reference; kLater: its reference did not come within kRefWaitNs
  // (the GPU is busy: try next round); kFailed: none can be taken.
  enum class RefState { kReady, kLater, kFailed };
  RefState EnsureRef(ContextState& cs, cuda::Context ctx, int64_t now);
  // collect_mu_ held (it guards cs.refs).
  bool TimeOf(const ContextState& cs, cuda::Event e, int64_t host_ns, int64_t* out);
  void Release(const Pair& p);  // mu_ held
  // Collect's work on pairs taken out of pending_, per mode; `have_ref(ctx)` says whether the
  // context's reference is ready, `later(ctx)` whether it may still come.
  struct Round;
  void CollectTiming(Round& r);
  void CollectMarkers(Round& r);
  // A start mark for `p` once it has been seen started in two collections (collect_mu_ held).
  void MaybeMarkStart(Pair& p, const ContextState& cs, bool have_ref, Round& r);

  cuda::Driver api_;
  const Mode mode_;
  std::mutex collect_mu_;  // Collect and Stop; guards each ContextState's refs and private_stream
  mutable std::mutex mu_;  // the rest; taken after collect_mu_
  std::unordered_map<cuda::Context, ContextState> contexts_;
  std::deque<Pair> pending_;
  uint64_t completed_ = 0, records_ = 0, skipped_ = 0, failed_ = 0, start_marks_ = 0;
  bool stopped_ = false;
  std::atomic<bool> stalled_{false};
};

}  // namespace ncclrr::gputiming
