#include "model/clock_sync.h"

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>

namespace ncclrr::analysis {
namespace {

int64_t Median(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

// Completion time of a call on its file's monotonic clock: the GPU end when recorded.
class CompletionTimes {
 public:
  explicit CompletionTimes(const TraceDir& dir) : dir_(dir), gpu_end_(dir.files.size()) {
    for (size_t f = 0; f < dir.files.size(); ++f)
      for (const GpuTimeRecord& g : dir.files[f].gpu_times)
        if (g.end_ns > 0) gpu_end_[f][g.call_uid] = g.end_ns;
  }
  int64_t Of(CallRef r) const {
    const CallRecord& c = dir_.files[r.file].calls[r.index];
    const auto& m = gpu_end_[r.file];
    if (!m.empty()) {
      auto it = m.find(c.uid);
      if (it != m.end()) return it->second;
    }
    return c.exit_ns;
  }

 private:
  const TraceDir& dir_;
  std::vector<std::unordered_map<uint64_t, int64_t>> gpu_end_;
};

}  // namespace

int64_t MonotonicToRealtimeOffset(const TraceFile& t) {
  std::vector<int64_t> d;
  d.reserve(t.clocks.size());
  for (const ClockPairRecord& p : t.clocks) d.push_back(p.real_ns - p.mono_ns);
  if (!d.empty()) return Median(std::move(d));
  if (t.header.start_real_ns != 0) return t.header.start_real_ns - t.header.start_mono_ns;
  return 0;
}

namespace {

std::vector<int> HostOfFile(const std::vector<FileView>& files, size_t* hosts) {
  std::map<std::string, int> host_index;
  std::vector<int> host_of(files.size());
  for (size_t f = 0; f < files.size(); ++f)
    host_of[f] =
        host_index.try_emplace(files[f].host, static_cast<int>(host_index.size())).first->second;
  *hosts = host_index.size();
  return host_of;
}

}  // namespace

void RefineClocksAcrossHosts(std::vector<FileView>* files, const std::vector<CommModel>& comms,
                             const TraceDir& dir) {
  ApplyClockCorrections(files, SampleClockDifferences(*files, comms, dir, nullptr));
}

ClockSamples SampleClockDifferences(const std::vector<FileView>& files,
                                    const std::vector<CommModel>& comms, const TraceDir& dir,
                                    const std::vector<bool>* only) {
  size_t hosts = 0;
  const std::vector<int> host_of = HostOfFile(files, &hosts);
  ClockSamples diffs;
  if (hosts < 2) return diffs;
  const CompletionTimes done(dir);
  auto common = [&](CallRef r) { return done.Of(r) + files[r.file].clock_offset_ns; };
  // Differences (reference host - host h) over matched collectives, sampled per comm.
  constexpr uint64_t kMaxSeqsPerComm = 20000;
  for (size_t ci = 0; ci < comms.size(); ++ci) {
    if (only && !(*only)[ci]) continue;
    const CommModel& c = comms[ci];
    const RankView* ref = nullptr;
    for (const RankView& r : c.ranks)
      if (r.file >= 0 && host_of[r.file] == 0) ref = &r;
    if (!ref) continue;
    for (const RankView& r : c.ranks) {
      if (r.file < 0 || host_of[r.file] == 0) continue;
      const uint64_t n = std::min<uint64_t>(ref->collectives.size(), kMaxSeqsPerComm);
      for (uint64_t k = 0; k < n; ++k) {
        const CollectiveSlot& a = ref->collectives[k];
        if (a.launch) continue;
        const CollectiveSlot* b = r.AtSeq(a.seq);
        if (!b || b->launch) continue;
        if (done.Of(a.call) == 0 || done.Of(b->call) == 0) continue;  // in flight: never ended
        diffs[host_of[r.file]].push_back(common(a.call) - common(b->call));
      }
    }
  }
  return diffs;
}

void ApplyClockCorrections(std::vector<FileView>* files, ClockSamples samples) {
  size_t hosts = 0;
  const std::vector<int> host_of = HostOfFile(*files, &hosts);
  for (auto& [h, d] : samples) {
    if (d.empty()) continue;
    const int64_t corr = Median(std::move(d));
    for (size_t f = 0; f < files->size(); ++f)
      if (host_of[f] == h) {
        (*files)[f].clock_offset_ns += corr;
        (*files)[f].offset_refined = true;
      }
  }
}

}  // namespace ncclrr::analysis
