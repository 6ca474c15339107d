#pragma once
// GPU times from CUPTI's activity API: CONCURRENT_KERNEL records of NCCL's kernels, attributed to
// calls through external correlation ids (CUSTOM2) pushed around the launching code, and the
// launch API records (only the launch entry points, where CUPTI can narrow it) that
// carry those ids. Timestamps are CUPTI's clock, mapped onto CLOCK_MONOTONIC by a ClockMap.
//
// CUPTI's activity buffers and callbacks are process-wide: one CuptiSource at a time.
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "cupti_api.h"
#include "ncclrr/gputiming/clock_map.h"
#include "ncclrr/gputiming/kernel_correlator.h"
#include "timing_source.h"

namespace ncclrr::gputiming {

class CuptiSource : public TimingSource {
 public:
  // Fails when CUPTI is missing, when another CUPTI client holds its subscriber slot (the job's
  // own profiler: ncclrr then stays away from CUPTI), or when CUPTI cannot enable kernel records
  // (no GPU or driver).
  // `all_api_records`: every driver and runtime API record, not only the launches' (diagnosis).
  static StatusOr<std::unique_ptr<CuptiSource>> Start(const std::string& library,
                                                      bool all_api_records = false);
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
  void Stop(const EmitFn& emit, const NoteFn& note) override;
  void AddStats(GpuTimerStats* stats) const override;

  // Parses one completed activity buffer (CUPTI's callback; tests call it directly).
  void ParseBuffer(uint8_t* buffer, size_t valid_size);

 private:
  explicit CuptiSource(cupti::Api api);
  static void OnBufferRequested(uint8_t** buffer, size_t* size, size_t* max_records);
  static void OnBufferCompleted(void* context, uint32_t stream_id, uint8_t* buffer, size_t size,
                                size_t valid_size);
  uint64_t Push(uint64_t ext_id);
  // Under collect_mu_: when NCCL kernels wait and no launch ever carried ncclrr's id for two
  // rounds, the narrowed API records do not work here: enable them all.
  void WidenIfLaunchesUnseen(const NoteFn& note);

  cupti::Api api_;
  ClockMap clock_;
  std::vector<int> enabled_kinds_;
  bool narrow_api_ = false;  // only the launch entry points produce API records
  bool widened_ = false;     // under collect_mu_: every API record after all
  int unseen_rounds_ = 0;    // under collect_mu_
  std::atomic<bool> stopped_{false};
  std::mutex collect_mu_;  // one Collect or Stop at a time
  mutable std::mutex mu_;  // correlator_
  KernelCorrelator correlator_;
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> push_failures_{0};
  std::atomic<uint64_t> launch_correlations_{0};  // CUSTOM2 external correlation records
};

}  // namespace ncclrr::gputiming
