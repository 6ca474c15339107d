// FindWaitCycle: the cycle WaitGraph finds, told as a cross_comm_order finding.
#include "checks/wait_cycle.h"

#include <algorithm>
#include <map>
#include <set>

#include "checks/checkers.h"
#include "checks/wait_cycle_graph.h"
#include "ncclrr/trace/describe.h"
#include "report/text_util.h"

namespace ncclrr::analysis {

namespace {

// A rank of the cycle: "rank 2" (of the communicator that holds every rank of the cycle), or
// where none does, by its ranks in the hop's two communicators: "rank 1 of "A" (rank 0 of "B")".
struct Names {
  std::string Of(const Hop& h) const {
    if (naming >= 0) return "rank " + std::to_string(RankIn(h, static_cast<uint32_t>(naming)));
    const uint32_t from = g->node(h.from).first, to = g->node(h.to).first;
    return "rank " + std::to_string(RankIn(h, from)) + " of " + CommShortName(m->comms()[from]) +
           (to == from ? ""
                       : " (rank " + std::to_string(RankIn(h, to)) + " of " +
                             CommShortName(m->comms()[to]) + ")");
  }
  // The table's cell: "2", or "1 of "A", 0 of "B"".
  std::string Cell(const Hop& h) const {
    if (naming >= 0) return std::to_string(RankIn(h, static_cast<uint32_t>(naming)));
    const uint32_t from = g->node(h.from).first, to = g->node(h.to).first;
    return std::to_string(RankIn(h, from)) + " of " + CommShortName(m->comms()[from]) +
           (to == from
                ? ""
                : ", " + std::to_string(RankIn(h, to)) + " of " + CommShortName(m->comms()[to]));
  }
  int RankIn(const Hop& h, uint32_t comm) const { return rank_in->at(g->view(h.view)).at(comm); }
  const TraceModel* m;
  const WaitGraph* g;
  const std::map<View, std::map<uint32_t, int>>* rank_in;
  int naming;
};

}  // namespace

void FindWaitCycle(CheckContext& ctx, FindingSink& sink) {
  const TraceModel& m = ctx.model();
  bool any_hung = false;
  for (uint32_t f = 0; f < m.files().size() && !any_hung; ++f) any_hung = m.MayHaveHung(f);
  if (!any_hung) return;
  std::map<View, std::map<uint32_t, int>> rank_in;  // view -> comm -> rank
  for (size_t ci = 0; ci < m.comms().size(); ++ci)
    for (const RankView& r : m.comms()[ci].ranks)
      if (r.has_file()) rank_in[{r.file, r.device}][static_cast<uint32_t>(ci)] = r.rank;
  // Pairs of communicators that two or more views share: the pairwise check reads their orders,
  // so a cycle through such a pair that those views order oppositely is its to report.
  // Communicators that cover those pairs (a world communicator beside its rows and columns) are
  // left out of the first search.
  std::set<std::pair<uint32_t, uint32_t>> pairwise;
  {
    std::map<std::pair<uint32_t, uint32_t>, int> views;
    for (const auto& [v, in] : rank_in)
      for (auto a = in.begin(); a != in.end(); ++a)
        for (auto b = std::next(a); b != in.end(); ++b) ++views[{a->first, b->first}];
    for (const auto& [pair, n] : views)
      if (n >= 2) pairwise.insert(pair);
  }
  std::set<uint32_t> hubs;  // greedy: the communicator in the most such pairs, until none is left
  for (std::set<std::pair<uint32_t, uint32_t>> left = pairwise; !left.empty();) {
    std::map<uint32_t, int> in;
    for (const auto& [x, y] : left) ++in[x], ++in[y];
    const uint32_t hub = std::max_element(in.begin(), in.end(), [](const auto& a, const auto& b) {
                           return a.second < b.second;
                         })->first;
    hubs.insert(hub);
    std::erase_if(left, [&](const auto& p) { return p.first == hub || p.second == hub; });
  }
  // Passes: without any hub (no pair two views share is left), then each hub without the other
  // hubs and its own partners in such pairs. A pass meets no cycle through such a pair, so no
  // rejection ends its search early.
  std::vector<std::set<uint32_t>> passes{hubs};
  constexpr size_t kHubPasses = 16;  // each pass reads the whole graph once
  for (uint32_t hub : hubs) {
    if (passes.size() > kHubPasses) break;
    std::set<uint32_t> leave_out = hubs;
    leave_out.erase(hub);
    for (const auto& [x, y] : pairwise)
      if (x == hub || y == hub) leave_out.insert(x == hub ? y : x);
    passes.push_back(std::move(leave_out));
  }
  const WaitGraph g(m, ctx.options().threads);
  // A pair two views share, whose calls of the cycle those views issued in opposite orders:
  // the pairwise check reports it.
  auto pairwise_reports = [&](const std::vector<Hop>& h) {
    std::map<uint32_t, uint32_t> node_of;  // comm -> the cycle's first node on it
    for (const Hop& x : h) node_of.try_emplace(g.node(x.from).first, x.from);
    for (auto a = node_of.begin(); a != node_of.end(); ++a)
      for (auto b = std::next(a); b != node_of.end(); ++b) {
        if (!pairwise.count({a->first, b->first})) continue;
        int seen = 0;
        for (const auto& [v, in] : rank_in)
          if (in.count(a->first) && in.count(b->first))
            if (const int o = g.Order(v, a->second, b->second); o != 0) {
              if (seen != 0 && seen != o) return true;
              seen = o;
            }
      }
    return false;
  };
  const std::vector<Hop> hops = g.FindCycle(
      [&](const std::vector<Hop>& h) {
        std::set<uint32_t> comms;
        for (const Hop& x : h) comms.insert(g.node(x.from).first);
        return h.size() >= 2 && comms.size() >= 2 && !pairwise_reports(h);
      },
      passes);
  if (hops.empty()) return;

  // Ranks are named in the largest communicator that holds every view of the cycle, if any.
  std::set<View> views;
  for (const Hop& h : hops) views.insert(g.view(h.view));
  int naming = -1;
  for (size_t ci = 0; ci < m.comms().size(); ++ci) {
    bool all = true;
    for (const View& v : views) all = all && rank_in[v].count(static_cast<uint32_t>(ci));
    if (all && (naming < 0 || m.comms()[ci].nranks > m.comms()[static_cast<size_t>(naming)].nranks))
      naming = static_cast<int>(ci);
  }
  const Names names{&m, &g, &rank_in, naming};
  auto instance = [&](uint32_t n) {
    return CommShortName(m.comms()[g.node(n).first]) + " seq " + std::to_string(g.node(n).second);
  };

  const uint32_t first_comm = g.node(hops.front().from).first;
  Finding f = FindingOn(FindingKind::kCrossCommOrder, m, first_comm);
  f.seq = g.node(hops.front().from).second;
  f.first_time = INT64_MAX;
  std::set<uint32_t> comms;
  std::vector<int> named;
  std::vector<std::string> each;
  std::string steps, comm_list;
  bool certain = true;
  for (const Hop& h : hops) {
    const uint32_t cf = g.node(h.from).first, ct = g.node(h.to).first;
    if (comms.insert(cf).second)
      comm_list += (comm_list.empty() ? "" : ", ") + CommShortName(m.comms()[cf]);
    certain = certain && h.certain;
    if (naming >= 0) named.push_back(names.RankIn(h, static_cast<uint32_t>(naming)));
    const std::string rank = names.Of(h);
    each.push_back(rank);
    const std::string from_call = ShortCall(m.call(h.from_call));
    f.calls.push_back({h.from_call, rank_in[g.view(h.view)][cf], g.node(h.from).second});
    f.first_time = std::min(f.first_time, m.CallTime(h.from_call));
    std::string what;
    if (h.blocked) {
      what = instance(h.from) + ", blocked (never issued " + instance(h.to) + ")";
      steps += (steps.empty() ? "" : "; ") + rank + " was blocked in " + instance(h.from) + " (" +
               from_call + "; it never returned), so it never issued " + instance(h.to);
    } else {
      what = instance(h.from) + " then " + instance(h.to);
      f.calls.push_back({h.to_call, rank_in[g.view(h.view)][ct], g.node(h.to).second});
      steps += (steps.empty() ? "" : "; ") + rank + " issued " + instance(h.from) + " (" +
               from_call + ") before " + instance(h.to) + " (" + ShortCall(m.call(h.to_call)) + ")";
    }
    f.table.push_back({names.Cell(h), "-", what, true});
  }
  for (const auto& [v, in] : rank_in)
    if (views.count(v) && in.count(first_comm)) f.ranks.push_back(in.at(first_comm));
  std::sort(f.ranks.begin(), f.ranks.end());
  f.pattern = "cycle";
  for (uint32_t c : comms) f.pattern += ":" + Hex64(m.comms()[c].id);
  std::string who;
  if (naming >= 0) {
    std::sort(named.begin(), named.end());
    who = RankList(named) + " of " + CommShortName(m.comms()[static_cast<size_t>(naming)]);
  } else {
    for (size_t k = 0; k < each.size(); ++k)
      who += (k == 0 ? "" : k + 1 == each.size() ? " and " : ", ") + each[k];
  }
  const std::string n_comms = std::to_string(comms.size()) + " communicators";
  bool shares_pair = false;
  for (auto a = comms.begin(); a != comms.end(); ++a)
    for (auto b = std::next(a); b != comms.end(); ++b) shares_pair |= pairwise.count({*a, *b}) > 0;
  f.short_text =
      who + " wait for each other round a cycle through " + n_comms + " (" + comm_list + ")";
  f.message =
      "Each device runs its collectives in issue order (one stream, or the host waiting between "
      "them), and a collective completes only once every rank of its communicator ran it. " +
      Capitalized(steps) +
      ". Round the cycle each of these collectives waits for the one before it, so none can "
      "complete: " +
      (certain ? std::string("a deadlock")
               : std::string("a deadlock, or one waiting to happen where separate streams (or a "
                             "nonblocking communicator's deferred launch) happen to let them "
                             "overlap")) +
      ". " +
      (shares_pair ? std::string()
                   : "No two of these ranks share two of the " + n_comms +
                         ", so no pair of ranks disagrees on an order by itself: only the cycle "
                         "through all of them deadlocks. ") +
      "Issue the collectives of different communicators in one global order on every "
      "rank (for a grid of communicators, e.g. every row collective of a step before every "
      "column one), or put them in one ncclGroupStart/ncclGroupEnd.";
  // The hang that follows on every communicator of the cycle is this finding's consequence.
  for (const Hop& h : hops) ctx.Claim(g.node(h.from).first, g.node(h.from).second, kNoSeq);
  sink.Add(std::move(f));
}

}  // namespace ncclrr::analysis
