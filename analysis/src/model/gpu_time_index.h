#pragma once
// GPU times (`ncclrr record --gpu-timing`) by call: each file's complete GpuTimeRecords indexed
// by call uid, in start order (a CUDA-graph template has one per launch).
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "ncclrr/analysis/model.h"

namespace ncclrr::analysis {

class GpuTimeIndex {
 public:
  explicit GpuTimeIndex(const TraceModel& m);
  bool empty() const { return empty_; }
  // The GPU time of a call (`launch`: CollectiveSlot::launch, 0 for eager calls); nullptr when
  // the trace has none.
  const GpuTimeRecord* Of(CallRef call, uint32_t launch = 0) const;

 private:
  using FileIndex = std::unordered_map<uint64_t, std::vector<const GpuTimeRecord*>>;
  const TraceModel& m_;
  std::vector<FileIndex> files_;
  bool empty_ = true;
};

}  // namespace ncclrr::analysis
