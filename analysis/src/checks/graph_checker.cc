// graph_capture_mismatch: CUDA graphs re-issue their captured collectives at every launch, so
// the k-th graph each rank captured on a communicator must hold the same calls and be launched
// the same number of times. Calls issued while a capture was invalidated are reported too.
#include <algorithm>
#include <cctype>
#include <map>
#include <optional>

#include "checks/checkers.h"
#include "report/text_util.h"

namespace ncclrr::analysis {
namespace {

class GraphChecker : public Checker {
 public:
  std::string_view name() const override { return "CUDA graphs"; }

  void Run(CheckContext& ctx, FindingSink& sink) override {
    for (size_t ci = 0; ci < ctx.model().comms().size(); ++ci) {
      if (ctx.Owns(ci)) CompareGraphs(ctx, ci, sink);
    }
    InvalidCaptures(ctx, sink);
  }

 private:
  static std::string Contents(const TraceModel& m, const GraphTemplate& g) {
    std::string s;
    for (CallRef r : g.calls) s += (s.empty() ? "" : " then ") + ShortCall(m.call(r));
    return s.empty() ? "(nothing)" : s;
  }

  // One property per rank (contents of graph k, launches of graph k, number of graphs): the
  // majority value is the expectation; ranks with another value are reported.
  void Compare(CheckContext& ctx, size_t ci, const std::map<int, std::string>& value,
               const std::string& what, const std::string& advice, std::optional<uint64_t> seq,
               FindingSink& sink) {
    std::map<std::string, std::vector<int>> groups;
    for (const auto& [r, v] : value) groups[v].push_back(r);
    if (groups.size() < 2) return;
    const CommModel& c = ctx.model().comms()[ci];
    const std::vector<int>* major = nullptr;
    for (const auto& [v, rs] : groups)
      if (!major || rs.size() > major->size()) major = &rs;
    Finding f = FindingOn(FindingKind::kGraphCaptureMismatch, ctx.model(), ci);
    f.seq = seq;
    f.pattern = what;
    f.first_time = ctx.model().start_ns();
    std::string listing;
    for (const auto& [v, rs] : groups) {
      const bool differs = &rs != major || major->size() * 2 <= value.size();  // ties: all
      if (differs) f.ranks.insert(f.ranks.end(), rs.begin(), rs.end());
      f.table.push_back({CompactRanks(rs), seq ? std::to_string(*seq) : "-", v, differs});
      listing += (listing.empty() ? "" : "; ") + RankList(rs) + ": " + v;
    }
    std::sort(f.ranks.begin(), f.ranks.end());
    f.short_text = "ranks disagree on " + what;
    f.message =
        "The ranks of " + CommLabel(c) + " disagree on " + what + " (" + listing + "). " + advice;
    sink.Add(std::move(f));
  }

  void CompareGraphs(CheckContext& ctx, size_t ci, FindingSink& sink) {
    const TraceModel& m = ctx.model();
    const CommModel& c = m.comms()[ci];
    size_t most = 0;
    bool any = false;
    std::map<int, std::string> count;
    for (const RankView& r : c.ranks) {
      if (!r.has_file()) continue;
      most = std::max(most, r.graphs.size());
      any |= !r.graphs.empty();
      count[r.rank] = Plural(r.graphs.size(), "graph", "graphs");
    }
    if (!any) return;
    Compare(ctx, ci, count, "how many CUDA graphs they captured with calls on it",
            "Every rank must capture the same collectives into graphs (a capture taken on some "
            "ranks only leaves the others' calls unpaired).",
            std::nullopt, sink);
    for (size_t k = 0; k < most; ++k) {
      std::map<int, std::string> contents, launches;
      std::optional<uint64_t> first_seq;
      for (const RankView& r : c.ranks) {
        if (!r.has_file() || k >= r.graphs.size()) continue;
        const GraphTemplate& g = r.graphs[k];
        contents[r.rank] = Contents(m, g);
        launches[r.rank] = "launched " + Plural(g.launch_times_ns.size(), "time", "times");
        for (const CollectiveSlot& s : r.collectives)
          if (s.launch == 1 && m.call(s.call).graph_id == g.graph_id) {
            first_seq = first_seq ? std::min(*first_seq, s.seq) : s.seq;
            break;
          }
      }
      const std::string nth = "the calls captured in graph #" + std::to_string(k + 1);
      Compare(ctx, ci, contents, nth,
              "Each launch re-issues the captured calls, so every launch mispairs them. Capture "
              "the same collectives, in the same order, on every rank.",
              first_seq, sink);
      if (LaunchesBetweenEagerCalls(ctx, ci, k, sink)) continue;
      Compare(ctx, ci, launches, "how often graph #" + std::to_string(k + 1) + " was launched",
              "Each launch issues the graph's collectives again: a rank that launches it less "
              "often leaves the others waiting (a hang).",
              first_seq, sink);
    }
  }

  // One rank's launches of graph k, counted between its eager calls: counts[i] launches before
  // its i-th eager collective, and `tail` after its last one.
  struct LaunchCounts {
    std::vector<const CollectiveSlot*> eager;
    std::vector<uint64_t> counts;
    uint64_t tail = 0;
    std::vector<const CollectiveSlot*> first_launch;  // per interval (tail last): or nullptr
  };

  static LaunchCounts CountLaunches(const TraceModel& m, const RankView& r, size_t k) {
    LaunchCounts lc;
    const GraphTemplate& g = r.graphs[k];
    std::optional<CallRef> head;  // the graph's first captured collective marks each launch
    for (CallRef ref : g.calls)
      if (IsCollective(static_cast<Api>(m.call(ref).api))) {
        head = ref;
        break;
      }
    const CollectiveSlot* first = nullptr;
    for (const CollectiveSlot& s : r.collectives) {
      if (s.launch == 0) {
        lc.eager.push_back(&s);
        lc.counts.push_back(lc.tail);
        lc.first_launch.push_back(first);
        lc.tail = 0;
        first = nullptr;
      } else if (head && s.call == *head) {
        ++lc.tail;
        if (!first) first = &s;
      }
    }
    lc.first_launch.push_back(first);
    return lc;
  }

  // The first stretch between two eager calls where a rank launched graph k more often than the
  // others: found, it is reported (and claims the positions from there on) instead of the
  // launch totals, because it says where the ranks parted. Ranks whose trace ends inside the
  // stretch count when they launched more than the others did in all of it.
  bool LaunchesBetweenEagerCalls(CheckContext& ctx, size_t ci, size_t k, FindingSink& sink) {
    const TraceModel& m = ctx.model();
    const CommModel& c = m.comms()[ci];
    std::map<int, LaunchCounts> per_rank;
    for (const RankView& r : c.ranks)
      if (r.has_file() && k < r.graphs.size()) per_rank[r.rank] = CountLaunches(m, r, k);
    if (per_rank.size() < 2) return false;
    size_t most = 0;
    for (const auto& [r, lc] : per_rank) most = std::max(most, lc.eager.size());
    for (size_t i = 0; i < most; ++i) {
      std::map<uint64_t, std::vector<int>> by_count;  // ranks with an i-th eager call
      for (const auto& [r, lc] : per_rank)
        if (i < lc.eager.size()) by_count[lc.counts[i]].push_back(r);
      if (by_count.empty()) break;
      const std::vector<int>* major = nullptr;
      uint64_t expected = 0;
      for (const auto& [n, rs] : by_count)
        if (!major || rs.size() > major->size()) {
          major = &rs;
          expected = n;
        }
      // A tie has no majority: every side is reported.
      size_t with_eager = 0;
      for (const auto& [n, rs] : by_count) with_eager += rs.size();
      const bool tie = major->size() * 2 <= with_eager && by_count.size() > 1;
      std::map<uint64_t, std::vector<int>> over;  // launches -> ranks that launched more
      std::map<uint64_t, std::vector<int>> under;
      for (const auto& [r, lc] : per_rank) {
        const bool ended = i >= lc.eager.size();
        const uint64_t n = ended ? lc.tail : lc.counts[i];
        if (n > expected) over[n].push_back(r);
        if (!ended && n < expected) under[n].push_back(r);
      }
      if (over.empty() && under.empty()) continue;
      Report(ctx, ci, k, i, *major, expected, tie, over, under, per_rank, sink);
      return true;
    }
    return false;
  }

  void Report(CheckContext& ctx, size_t ci, size_t k, size_t i, const std::vector<int>& major,
              uint64_t expected, bool tie, const std::map<uint64_t, std::vector<int>>& over,
              const std::map<uint64_t, std::vector<int>>& under,
              const std::map<int, LaunchCounts>& per_rank, FindingSink& sink) {
    const TraceModel& m = ctx.model();
    const CommModel& c = m.comms()[ci];
    const LaunchCounts& ref = per_rank.at(major.front());
    const CollectiveSlot* before = i > 0 ? ref.eager[i - 1] : nullptr;
    const CollectiveSlot* after = ref.eager[i];
    const uint64_t start = before ? before->seq + 1 : 0;
    const std::string graph = "graph #" + std::to_string(k + 1);
    const std::string where = before
                                  ? "after the eager call at seq " + std::to_string(before->seq) +
                                        " (" + ShortCall(m.call(before->call)) + ")"
                                  : "before the first eager call";
    Finding f = FindingOn(FindingKind::kGraphCaptureMismatch, m, ci);
    f.seq = start;
    f.pattern = "launches of " + graph + " between eager calls";
    f.first_time = INT64_MAX;
    std::string odd;
    auto group = [&](const std::map<uint64_t, std::vector<int>>& g) {
      for (const auto& [n, rs] : g) {
        f.ranks.insert(f.ranks.end(), rs.begin(), rs.end());
        const LaunchCounts& lc = per_rank.at(rs.front());
        const bool ended = i >= lc.eager.size();
        f.table.push_back(
            {CompactRanks(rs),
             std::to_string(start) + "-" + (ended ? "" : std::to_string(lc.eager[i]->seq)),
             "launched " + graph + " " + Plural(n, "time", "times") +
                 (ended ? ", and the trace ends"
                        : ", then " + ShortCall(m.call(lc.eager[i]->call))),
             true});
        odd +=
            (odd.empty() ? "" : "; ") + RankList(rs) + " launched it " + Plural(n, "time", "times");
        for (int r : rs) {
          const LaunchCounts& its = per_rank.at(r);
          const CollectiveSlot* s = its.first_launch[std::min(i, its.first_launch.size() - 1)];
          if (!s) continue;
          f.calls.push_back({s->call, r, s->seq});
          f.first_time = std::min(f.first_time, m.SlotTime(*s));
        }
      }
    };
    f.table.push_back({CompactRanks(major),
                       std::to_string(start) + "-" + std::to_string(after->seq),
                       "launched " + graph + " " + Plural(expected, "time", "times") + ", then " +
                           ShortCall(m.call(after->call)),
                       tie});
    if (tie) f.ranks = major;
    group(over);
    group(under);
    std::sort(f.ranks.begin(), f.ranks.end());
    if (f.first_time == INT64_MAX) f.first_time = m.SlotTime(*after);
    const std::string ref_ranks = RankList(major);
    std::string where_cap = where;
    where_cap[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(where_cap[0])));
    f.short_text = "ranks launched " + graph + " a different number of times " + where;
    f.message =
        "Each launch of " + graph + " issues its captured calls on " + CommLabel(c) +
        " again, and NCCL pairs them by position like eager calls. " + where_cap + ", " +
        ref_ranks + " launched " + graph + " " + Plural(expected, "time", "times") + " before " +
        ShortCall(m.call(after->call)) + " at seq " + std::to_string(after->seq) + "; " + odd +
        ". From there the ranks' calls are paired with the wrong launches: silently wrong "
        "results while the paired calls are alike, a hang or garbage where they differ. A "
        "launch that depends on a condition only some ranks see (a step retried or skipped "
        "after a loss spike or an overflow check) does this: decide it on every rank together "
        "(e.g. all-reduce the flag) and launch the graph the same number of times everywhere.";
    ctx.Claim(ci, start, kNoSeq);
    NoteMismatch(ctx, f);
    sink.Add(std::move(f));
  }

  void InvalidCaptures(CheckContext& ctx, FindingSink& sink) {
    const TraceModel& m = ctx.model();
    for (const FlaggedCall& fc : m.flagged_calls()) {
      const CallRecord& call = m.call(fc.call);
      if (call.capture != 2 || !IsCollective(static_cast<Api>(call.api))) continue;
      if (!ctx.Owns(fc.comm_index)) continue;
      const RankView& r = m.comms()[fc.comm_index].ranks[fc.rank];
      const CollectiveSlot* s = r.AtSeq(call.seq);
      if (!s || s->call != fc.call) continue;
      Finding f = FindingOn(FindingKind::kGraphCaptureMismatch, m, fc.comm_index);
      f.seq = s->seq;
      f.ranks = {r.rank};
      f.first_time = m.SlotTime(*s);
      f.calls = {{s->call, r.rank, s->seq}};
      f.pattern = "invalidated";
      f.table.push_back({std::to_string(r.rank), std::to_string(s->seq), ShortCall(call), true});
      f.short_text = ShortCall(call) + " was issued while its stream's capture was invalidated";
      f.message = "Rank " + std::to_string(r.rank) + " issued " + ShortCall(call) +
                  " on a stream whose CUDA graph capture had been invalidated: the call is "
                  "neither captured nor run, so the other ranks' seq " +
                  std::to_string(s->seq) +
                  " has no partner. Fix the capture error that invalidated it (an illegal call "
                  "during capture) first.";
      sink.Add(std::move(f));
    }
  }
};

}  // namespace

std::shared_ptr<Checker> MakeGraphChecker() { return std::make_shared<GraphChecker>(); }

}  // namespace ncclrr::analysis
