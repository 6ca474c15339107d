#include "model/gpu_time_index.h"

#include <algorithm>

namespace ncclrr::analysis {

GpuTimeIndex::GpuTimeIndex(const TraceModel& m) : m_(m), files_(m.files().size()) {
  for (uint32_t f = 0; f < files_.size(); ++f) {
    for (const GpuTimeRecord& g : m.file(f).gpu_times)
      if (g.end_ns >= g.start_ns && g.start_ns > 0) files_[f][g.call_uid].push_back(&g);
    for (auto& [uid, v] : files_[f])
      std::sort(v.begin(), v.end(), [](const GpuTimeRecord* a, const GpuTimeRecord* b) {
        return a->start_ns < b->start_ns;
      });
    empty_ = empty_ && files_[f].empty();
  }
}

const GpuTimeRecord* GpuTimeIndex::Of(CallRef call, uint32_t launch) const {
  if (call.file >= files_.size()) return nullptr;
  const FileIndex& idx = files_[call.file];
  auto it = idx.find(m_.call(call).uid);
  if (it == idx.end()) return nullptr;
  const size_t k = launch == 0 ? 0 : launch - 1;  // k-th launch of a template
  return k < it->second.size() ? it->second[k] : nullptr;
}

}  // namespace ncclrr::analysis
