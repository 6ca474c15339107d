#pragma once
// GPU times from CUPTI's activity API: CONCURRENT_KERNEL records of NCCL's kernels, attributed to
// the call (or group, or graph launch) whose scope was open on the thread that launched them.
// How a kernel's correlation id reaches that scope (CuptiCorrelation):
//  * launch callbacks (the default): CUPTI's callback API calls ncclrr at each launch entry
//    point; inside a scope, the launch's correlation id is paired with the scope's id there.
//    Works whether the job's CUDA context came before or after CUPTI; the job's other API calls
//    cost nothing.
//  * launch API records: an external correlation id (CUSTOM2) pushed around the launching code
//    and CUPTI's API records of the launch entry points (CUPTI 12.6+), which carry it. They never
//    come for a context made before CUPTI started (PyTorch, JAX).
//  * all API records: the same with every driver and runtime API record (1.9x on a PyTorch loop).
// Either narrow way is widened to all API records when NCCL kernels come and no launch was
// correlated for two rounds. Timestamps are CUPTI's clock, mapped onto CLOCK_MONOTONIC by a
// ClockMap.
//
// CUPTI's activity buffers and callbacks are process-wide: one CuptiSource at a time.
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "cupti_api.h"
#include "ncclrr/gputiming/clock_map.h"
#include "ncclrr/gputiming/kernel_correlator.h"
#include "timing_source.h"

namespace ncclrr::gputiming {

enum class CuptiCorrelation : uint8_t { kLaunchCallbacks, kLaunchRecords, kAllRecords };

class CuptiSource : public TimingSource {
 public:
  // Fails when CUPTI is missing, when another CUPTI client holds its subscriber slot (the job's
  // own profiler: ncclrr then stays away from CUPTI), or when CUPTI cannot enable kernel records
  // (no GPU or driver). Launch callbacks fall back to launch records where CUPTI refuses them.
  static StatusOr<std::unique_ptr<CuptiSource>> Start(
      const std::string& library, CuptiCorrelation how = CuptiCorrelation::kLaunchCallbacks);
  ~CuptiSource() override;

  GpuTimeSource kind() const override { return GpuTimeSource::kCupti; }
  std::string Describe() const override;
  uint64_t BeginScope(uint64_t ext_id, const TimedCall* members, size_t n) override;
  void EndScope(uint64_t ext_id, uint64_t token, const TimedCall* members, size_t n) override;
  void AddGraphTemplate(uint64_t graph, const TimedCall& call, uint64_t group_id) override;
  uint64_t BeginGraphLaunch(uint64_t ext_id, uint64_t graph) override;
  void EndGraphLaunch(uint64_t ext_id, uint64_t token) override;
  void ForgetGraph(uint64_t graph) override;
  void Collect(bool final, const EmitFn& emit, const NoteFn& note) override;
  void FlushHeldRecords() override { flush_held_.store(true); }
  void Stop(const EmitFn& emit, const NoteFn& note) override;
  void AddStats(GpuTimerStats* stats) const override;

  // Parses one completed activity buffer (CUPTI's callback; tests call it directly).
  void ParseBuffer(uint8_t* buffer, size_t valid_size);

 private:
  explicit CuptiSource(cupti::Api api);
  static void OnBufferRequested(uint8_t** buffer, size_t* size, size_t* max_records);
  static void OnBufferCompleted(void* context, uint32_t stream_id, uint8_t* buffer, size_t size,
                                size_t valid_size);
  // CUPTI's API callback (launch entry points only), on the launching thread.
  static void OnLaunch(void* userdata, int domain, uint32_t cbid, const void* data);
  // Calls enable(domain, cbid) for every launch entry point: true when the driver's all took
  // (the runtime's are best effort: an older CUPTI does not know the newest).
  static bool EnableLaunchIds(const std::function<bool(int, uint32_t)>& enable);
  // OnLaunch (subscribed at Start) for every launch entry point; false where CUPTI refuses (Start
  // then unsubscribes).
  bool EnableLaunchCallbacks();
  uint64_t Push(uint64_t ext_id);
  // Launches paired by OnLaunch since the last call, into the correlator (mu_ held).
  void TakeLaunches();
  // Under collect_mu_: when NCCL kernels wait and no launch ever carried ncclrr's id for two
  // rounds, the narrowed API records do not work here: enable them all.
  void WidenIfLaunchesUnseen(const NoteFn& note);

  cupti::Api api_;
  ClockMap clock_;
  std::vector<int> enabled_kinds_;
  CuptiCorrelation how_ = CuptiCorrelation::kLaunchCallbacks;
  void* subscriber_ = nullptr;  // launch callbacks: held until Stop (the job may want it then)
  // CUSTOM2 ids are pushed for API records to carry (not needed by launch callbacks alone).
  std::atomic<bool> push_external_{true};
  bool widened_ = false;   // under collect_mu_: every API record after all
  int unseen_rounds_ = 0;  // under collect_mu_
  std::atomic<bool> stopped_{false};
  std::mutex collect_mu_;  // one Collect or Stop at a time
  std::atomic<bool> flush_held_{false};
  mutable std::mutex mu_;  // correlator_
  KernelCorrelator correlator_;
  std::mutex launch_mu_;  // launches_: taken by each correlated launch, briefly
  std::vector<std::pair<uint32_t, uint64_t>> launches_;  // (correlation id, scope id)
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> push_failures_{0};
  // Launches tied to a scope: CUSTOM2 external correlation records, or launch callbacks inside a
  // scope (a runtime launch can count twice: its callback and its driver call's).
  std::atomic<uint64_t> launch_correlations_{0};
};

}  // namespace ncclrr::gputiming
