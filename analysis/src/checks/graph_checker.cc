// graph_capture_mismatch: CUDA graphs re-issue their captured collectives at every launch, so
// the k-th graph each rank captured on a communicator must hold the same calls and be launched
// the same number of times. Calls issued while a capture was invalidated are reported too.
#include <algorithm>
#include <map>

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
      Compare(ctx, ci, launches, "how often graph #" + std::to_string(k + 1) + " was launched",
              "Each launch issues the graph's collectives again: a rank that launches it less "
              "often leaves the others waiting (a hang).",
              first_seq, sink);
    }
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
