#include "export/export_layout.h"

#include <algorithm>
#include <unordered_map>

namespace ncclrr::analysis {

std::map<ProcessKey, ProcessRank> ProcessRanks(const TraceModel& m) {
  std::map<ProcessKey, ProcessRank> best;
  for (const CommModel& c : m.comms())
    for (const RankView& r : c.ranks) {
      if (r.file < 0) continue;
      ProcessRank& b = best[{static_cast<uint32_t>(r.file), r.device}];
      if (c.nranks > b.nranks) b = {c.nranks, r.rank};
    }
  return best;
}

std::string ProcessLabel(const FileView& file, int device, int rank) {
  return "rank " + std::to_string(rank) + " (" + file.host + " pid " + std::to_string(file.pid) +
         " dev " + std::to_string(device) + ")";
}

void ForEachCallSpan(const TraceModel& m, uint32_t f,
                     const std::function<void(const CallRecord&, uint32_t, int64_t, int64_t)>& fn) {
  const TraceFile& t = m.file(f);
  std::unordered_map<uint64_t, const GpuTimeRecord*> gpu;
  for (const GpuTimeRecord& g : t.gpu_times)
    if (g.end_ns > 0) gpu[g.call_uid] = &g;
  for (uint32_t i = 0; i < t.calls.size(); ++i) {
    const CallRecord& c = t.calls[i];
    if (c.capture == 1) continue;  // templates run at their graph's launches
    int64_t start = c.enter_ns, end = c.exit_ns;
    if (auto it = gpu.find(c.uid); it != gpu.end()) {
      start = it->second->start_ns;
      end = it->second->end_ns;
    }
    fn(c, i, m.CommonTime(f, start), end - start);
  }
}

void ForEachGraphLaunch(const TraceModel& m, const std::function<void(const CollectiveSlot&)>& fn) {
  for (const CommModel& c : m.comms())
    for (const RankView& r : c.ranks)
      for (const CollectiveSlot& s : r.collectives)
        if (s.launch) fn(s);
}

int64_t SlotTime(const TraceModel& m, const CollectiveSlot& s) { return m.SlotTime(s); }

void ForEachPairedGroup(
    const TraceModel& m,
    const std::function<void(uint64_t, const std::vector<const CollectiveSlot*>&)>& fn) {
  std::vector<const CollectiveSlot*> at;
  for (const CommModel& c : m.comms()) {
    if (c.ranks.size() < 2) continue;
    // Walk all ranks' sequences together by seq.
    std::vector<size_t> pos(c.ranks.size(), 0);
    while (true) {
      uint64_t seq = kNoSeq;
      for (size_t r = 0; r < c.ranks.size(); ++r)
        if (pos[r] < c.ranks[r].collectives.size())
          seq = std::min(seq, c.ranks[r].collectives[pos[r]].seq);
      if (seq == kNoSeq) break;
      at.clear();
      for (size_t r = 0; r < c.ranks.size(); ++r) {
        const auto& v = c.ranks[r].collectives;
        if (pos[r] < v.size() && v[pos[r]].seq == seq) at.push_back(&v[pos[r]++]);
      }
      if (at.size() >= 2) fn(seq, at);
    }
  }
}

}  // namespace ncclrr::analysis
