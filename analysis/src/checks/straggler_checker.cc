// Stragglers, from GPU times (`ncclrr record --gpu-timing`). The kernels of one collective cannot
// finish before every rank's kernel has started: a rank whose kernel starts early spends the
// time until the last rank's kernel starts waiting for it. Per communicator whose ranks have GPU
// times, one note says how long each rank waited in total, which rank arrived last most often,
// and the collectives with the longest waits. Nothing is wrong with such a job, so docs/design.md's
// finding kinds do not fit: it is a note of kind `stragglers`, which never changes the exit
// status (not even under --strict). Under --stable the note leaves out every time.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "checks/checkers.h"
#include "model/gpu_time_index.h"
#include "report/text_util.h"

namespace ncclrr::analysis {
namespace {

constexpr size_t kWorstListed = 5;  // collectives with the longest waits named in the note
constexpr size_t kRanksListed = 8;  // ranks whose total wait is named

struct Arrival {
  int rank;
  int64_t start;  // common timeline
  CallRef call;
};

struct Worst {
  uint64_t seq;
  int64_t wait;  // last start - first start
  int late_rank, early_rank;
  CallRef call;
};

class StragglerChecker : public Checker {
 public:
  std::string_view name() const override { return "stragglers"; }

  void Run(CheckContext& ctx, FindingSink& sink) override {
    const GpuTimeIndex gpu(ctx.model());
    if (gpu.empty()) return;
    for (size_t ci = 0; ci < ctx.model().comms().size(); ++ci)
      if (ctx.Owns(ci)) CheckComm(ctx, ci, gpu, sink);
  }

 private:
  void CheckComm(CheckContext& ctx, size_t ci, const GpuTimeIndex& gpu, FindingSink& sink) {
    const TraceModel& m = ctx.model();
    const CommModel& c = m.comms()[ci];
    std::vector<int> with_file;
    for (const RankView& r : c.ranks)
      if (r.has_file()) with_file.push_back(r.rank);
    if (with_file.size() < 2) return;
    // seq -> the arrivals of every rank with a GPU time there.
    std::map<uint64_t, std::vector<Arrival>> by_seq;
    int source = -1;
    for (const RankView& r : c.ranks)
      for (const CollectiveSlot& s : r.collectives)
        if (const GpuTimeRecord* g = gpu.Of(s.call, s.launch)) {
          by_seq[s.seq].push_back({r.rank, m.CommonTime(s.call.file, g->start_ns), s.call});
          source = source == -1 || source == g->source ? g->source : -2;
        }
    std::map<int, int64_t> total_wait;
    std::map<int, uint64_t> last_count;
    std::vector<Worst> worst;
    uint64_t compared = 0;
    for (const auto& [seq, arrivals] : by_seq) {
      if (arrivals.size() != with_file.size()) continue;  // a rank untimed there: not comparable
      ++compared;
      auto [first, last] =
          std::minmax_element(arrivals.begin(), arrivals.end(),
                              [](const Arrival& a, const Arrival& b) { return a.start < b.start; });
      for (const Arrival& a : arrivals) total_wait[a.rank] += last->start - a.start;
      ++last_count[last->rank];
      worst.push_back({seq, last->start - first->start, last->rank, first->rank, last->call});
    }
    if (compared == 0) return;
    std::partial_sort(worst.begin(), worst.begin() + std::min(kWorstListed, worst.size()),
                      worst.end(), [](const Worst& a, const Worst& b) {
                        return a.wait != b.wait ? a.wait > b.wait : a.seq < b.seq;
                      });
    worst.resize(std::min(kWorstListed, worst.size()));
    Note n = MakeNote(ctx, c, compared, source, total_wait, last_count, worst);
    n.comm_index = static_cast<int64_t>(ci);
    sink.AddNote(std::move(n));
  }

  static Note MakeNote(const CheckContext& ctx, const CommModel& c, uint64_t compared, int source,
                       const std::map<int, int64_t>& total_wait,
                       const std::map<int, uint64_t>& last_count, const std::vector<Worst>& worst) {
    const bool stable = ctx.options().stable;
    const TraceModel& m = ctx.model();
    int straggler = last_count.begin()->first;
    for (const auto& [rank, n] : last_count)
      if (n > last_count.at(straggler)) straggler = rank;
    const char* how = source == static_cast<int>(GpuTimeSource::kCupti)       ? " (CUPTI)"
                      : source == static_cast<int>(GpuTimeSource::kEventPair) ? " (CUDA events)"
                                                                              : "";
    std::string text = CommLabel(c) + ": GPU times" + how + " of " +
                       Plural(compared, "collective", "collectives") +
                       " on every rank show ranks waiting for the last one to arrive. The last "
                       "to arrive was most often rank " +
                       std::to_string(straggler) + " (" + Thousands(last_count.at(straggler)) +
                       " of " + Thousands(compared) + ").";
    if (!stable) {
      std::vector<std::pair<int64_t, int>> waits;
      for (const auto& [rank, ns] : total_wait) waits.push_back({ns, rank});
      std::sort(waits.rbegin(), waits.rend());
      if (waits.size() > kRanksListed) waits.resize(kRanksListed);
      text += " Time spent waiting, in total:";
      for (size_t i = 0; i < waits.size(); ++i)
        text += std::string(i == 0 ? " " : ", ") + "rank " + std::to_string(waits[i].second) + " " +
                Seconds(waits[i].first);
      text += ".";
    }
    text += " Longest waits:";
    for (size_t i = 0; i < worst.size(); ++i) {
      const Worst& w = worst[i];
      text += std::string(i == 0 ? " " : "; ") + "seq " + std::to_string(w.seq) + " " +
              ShortCall(m.call(w.call)) + ", rank " + std::to_string(w.late_rank) + " last";
      if (!stable) text += ", " + Seconds(w.wait) + " after rank " + std::to_string(w.early_rank);
    }
    text +=
        ". A rank that is often last is held up before the collective (its own compute, input "
        "data, host work, a slower GPU or link); the others idle that long.";
    Note n;
    n.kind = NoteKind::kStragglers;
    n.ranks.push_back({c.id, straggler});
    n.count = compared;
    n.message = std::move(text);
    return n;
  }
};

}  // namespace

std::shared_ptr<Checker> MakeStragglerChecker() { return std::make_shared<StragglerChecker>(); }

}  // namespace ncclrr::analysis
