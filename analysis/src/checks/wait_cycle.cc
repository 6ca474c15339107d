// FindWaitCycle: "issued before" between collectives, over the last calls of the processes that
// did not end in order. On a view (process file, device) a collective cannot run before the ones
// issued ahead of it complete (one stream, or the host waiting in between), and a view blocked
// inside a call (it never returned) issues nothing after it; a collective completes only once
// every rank ran it. A cycle in that relation is a deadlock whatever else happened: each of its
// collectives waits for the one before it.
#include "checks/wait_cycle.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "checks/checkers.h"
#include "ncclrr/base/parallel_for.h"
#include "ncclrr/trace/describe.h"
#include "report/text_util.h"

namespace ncclrr::analysis {
namespace {

using View = std::pair<int32_t, int>;  // (file, device)

struct TailCall {
  int64_t enter_ns;
  CallRef call;
  uint32_t comm;
  uint64_t seq;
  uint64_t group;
  uint64_t stream;
  bool in_flight;
};

// "From `from` to `to` on `view`": the view issued `from` first (or was blocked in it and never
// issued `to`).
struct Edge {
  uint32_t to;
  uint32_t view;
  CallRef from_call, to_call;
  bool blocked = false;    // to_call is none: never issued
  bool one_stream = true;  // both calls on one stream (or the host blocked between them)
};

struct Hop {
  uint32_t from, to;  // nodes
  uint32_t view;
  CallRef from_call, to_call;
  bool blocked;
  bool one_stream;
};

class Graph {
 public:
  explicit Graph(const TraceModel& m) : m_(m) {}

  // The tails of every file not closed in order, as views in issue order; files on `threads`.
  void ReadTails(int threads) {
    std::vector<uint32_t> unclean;
    for (uint32_t f = 0; f < m_.files().size(); ++f)
      if (!m_.files()[f].clean) unclean.push_back(f);
    std::vector<std::vector<std::pair<View, TailCall>>> per_file(unclean.size());
    ParallelFor(unclean.size(), threads, [&](size_t i) {
      const uint32_t f = unclean[i];
      const int64_t from = m_.TailFromNs(f);
      for (const auto& [ci, rank] : m_.files()[f].ranks) {
        const RankView& r = m_.comms()[ci].ranks[static_cast<size_t>(rank)];
        CallTable::Reader enter(m_.file(f).calls,
                                CallTable::WordsOf(offsetof(CallRecord, enter_ns)));
        for (const CollectiveSlot& s : r.collectives) {
          if (s.launch != 0 || enter[s.call.index].enter_ns < from) continue;
          const CallRecord c = m_.call(s.call);
          per_file[i].push_back({View{r.file, r.device},
                                 {c.enter_ns, s.call, static_cast<uint32_t>(ci), s.seq, c.group_id,
                                  c.stream, (c.flags & call_flags::kInFlight) != 0}});
        }
      }
    });
    for (auto& calls : per_file)
      for (auto& [v, c] : calls) calls_[v].push_back(c);
    for (auto& [v, calls] : calls_) {
      std::sort(calls.begin(), calls.end(), [](const TailCall& a, const TailCall& b) {
        return std::tie(a.enter_ns, a.call) < std::tie(b.enter_ns, b.call);
      });
      views_.push_back(v);
    }
  }

  void Link() {
    for (const auto& [v, calls] : calls_)
      for (const TailCall& c : calls) ids_.try_emplace({c.comm, c.seq}, 0);
    for (auto& [key, id] : ids_) {
      id = static_cast<uint32_t>(nodes_.size());
      nodes_.push_back(key);
    }
    adj_.resize(nodes_.size());
    for (uint32_t vi = 0; vi < views_.size(); ++vi) {
      const std::vector<TailCall>& calls = calls_.at(views_[vi]);
      // Blocks: one call, or a run of calls of one group (launched together).
      std::vector<std::pair<size_t, size_t>> blocks;
      for (size_t i = 0; i < calls.size();) {
        size_t j = i + 1;
        if (calls[i].group)
          while (j < calls.size() && calls[j].group == calls[i].group) ++j;
        blocks.emplace_back(i, j);
        i = j;
      }
      for (size_t b = 0; b + 1 < blocks.size(); ++b)
        for (size_t i = blocks[b].first; i < blocks[b].second; ++i)
          for (size_t j = blocks[b + 1].first; j < blocks[b + 1].second; ++j)
            adj_[Id(calls[i])].push_back({Id(calls[j]), vi, calls[i].call, calls[j].call, false,
                                          calls[i].stream == calls[j].stream});
      if (calls.empty() || !calls.back().in_flight) continue;
      // Blocked in its last call: the next collective of each of its communicators, where
      // another rank issued it, waits for that call.
      std::map<uint32_t, uint64_t> next;
      for (const TailCall& c : calls) next[c.comm] = c.seq + 1;
      const size_t last = blocks.back().first;
      for (const auto& [comm, seq] : next) {
        auto it = ids_.find({comm, seq});
        if (it == ids_.end()) continue;
        for (size_t i = last; i < calls.size(); ++i)
          adj_[Id(calls[i])].push_back({it->second, vi, calls[i].call, {}, true, true});
      }
    }
  }

  // The first cycle `accept` takes, in hops (consecutive edges of one view merged), or empty.
  template <typename Accept>
  std::vector<Hop> FindCycle(Accept&& accept) const {
    std::vector<uint8_t> color(nodes_.size(), 0);  // 0 new, 1 on the path, 2 done
    std::vector<size_t> pos(nodes_.size(), 0);
    std::vector<std::pair<uint32_t, size_t>> path;  // node, next edge
    for (uint32_t start = 0; start < nodes_.size(); ++start) {
      if (color[start]) continue;
      color[start] = 1;
      path.push_back({start, 0});
      while (!path.empty()) {
        auto& [u, k] = path.back();
        if (k == adj_[u].size()) {
          color[u] = 2;
          path.pop_back();
          continue;
        }
        const Edge& e = adj_[u][k++];
        if (color[e.to] == 0) {
          color[e.to] = 1;
          pos[e.to] = path.size();
          path.push_back({e.to, 0});
        } else if (color[e.to] == 1) {
          std::vector<Hop> hops;
          for (size_t i = pos[e.to]; i < path.size(); ++i) {
            const uint32_t n = path[i].first;
            const Edge& x = i + 1 < path.size() ? adj_[n][path[i].second - 1] : e;
            hops.push_back({n, x.to, x.view, x.from_call, x.to_call, x.blocked, x.one_stream});
          }
          hops = Merged(std::move(hops));
          Tighten(&hops);
          StartAtSmallest(&hops);
          if (accept(hops)) return hops;
        }
      }
    }
    return {};
  }

  const std::pair<uint32_t, uint64_t>& node(uint32_t n) const { return nodes_[n]; }
  const View& view(uint32_t v) const { return views_[v]; }

 private:
  uint32_t Id(const TailCall& c) const { return ids_.at({c.comm, c.seq}); }

  // Consecutive edges of one view are one hop; the cycle starts at its smallest node.
  static std::vector<Hop> Merged(std::vector<Hop> hops) {
    while (hops.size() > 1 && hops.front().view == hops.back().view) {
      hops.front().from = hops.back().from;
      hops.front().from_call = hops.back().from_call;
      hops.front().one_stream = hops.front().one_stream && hops.back().one_stream;
      hops.pop_back();
    }
    std::vector<Hop> out;
    for (const Hop& h : hops) {
      if (!out.empty() && out.back().view == h.view) {
        out.back().to = h.to;
        out.back().to_call = h.to_call;
        out.back().blocked = h.blocked;
        out.back().one_stream = out.back().one_stream && h.one_stream;
        continue;
      }
      out.push_back(h);
    }
    return out;
  }

  static void StartAtSmallest(std::vector<Hop>* hops) {
    auto first = std::min_element(hops->begin(), hops->end(),
                                  [](const Hop& a, const Hop& b) { return a.from < b.from; });
    std::rotate(hops->begin(), first, hops->end());
  }

  // Where a hop ends on a communicator's call that the next hop starts from, the earliest call of
  // that communicator past the hop's start does as well (every rank issues its calls in seq
  // order): "col0 seq 10", the first of the step's column calls, rather than the last.
  void Tighten(std::vector<Hop>* hops) const {
    for (size_t i = 0; i < hops->size(); ++i) {
      Hop& h = (*hops)[i];
      Hop& next = (*hops)[(i + 1) % hops->size()];
      if (h.blocked) continue;
      const std::vector<TailCall>& mine = calls_.at(views_[h.view]);
      const std::vector<TailCall>& theirs = calls_.at(views_[next.view]);
      const auto [comm, seq] = nodes_[h.to];
      auto at = [](const std::vector<TailCall>& v, CallRef c) {
        return std::find_if(v.begin(), v.end(), [&](const TailCall& t) { return t.call == c; });
      };
      const auto from = at(mine, h.from_call);
      for (auto it = from + 1; it < mine.end() && it->call != h.to_call; ++it) {
        // (A call of the start's group launches with it: not after it.)
        if (it->comm != comm || it->seq >= seq || (it->group && it->group == from->group)) continue;
        auto there = std::find_if(theirs.begin(), theirs.end(), [&](const TailCall& t) {
          return t.comm == comm && t.seq == it->seq;
        });
        if (there == theirs.end()) break;
        h.to = next.from = ids_.at({comm, it->seq});
        h.to_call = it->call;
        next.from_call = there->call;
        break;
      }
    }
  }

  const TraceModel& m_;
  std::map<View, std::vector<TailCall>> calls_;
  std::vector<View> views_;
  std::map<std::pair<uint32_t, uint64_t>, uint32_t> ids_;  // (comm, seq) -> node
  std::vector<std::pair<uint32_t, uint64_t>> nodes_;
  std::vector<std::vector<Edge>> adj_;
};

}  // namespace

void FindWaitCycle(CheckContext& ctx, FindingSink& sink) {
  const TraceModel& m = ctx.model();
  bool any_unclean = false;
  for (const FileView& f : m.files()) any_unclean = any_unclean || !f.clean;
  if (!any_unclean) return;
  std::map<View, std::map<uint32_t, int>> rank_in;  // view -> comm -> rank
  for (size_t ci = 0; ci < m.comms().size(); ++ci)
    for (const RankView& r : m.comms()[ci].ranks)
      if (r.has_file()) rank_in[{r.file, r.device}][static_cast<uint32_t>(ci)] = r.rank;
  Graph g(m);
  g.ReadTails(ctx.options().threads);
  g.Link();
  auto shared_views = [&](uint32_t x, uint32_t y) {
    int n = 0;
    for (const auto& [v, in] : rank_in) n += in.count(x) && in.count(y);
    return n;
  };
  const std::vector<Hop> hops = g.FindCycle([&](const std::vector<Hop>& h) {
    std::set<uint32_t> comms;
    for (const Hop& x : h) comms.insert(g.node(x.from).first);
    if (h.size() < 2 || comms.size() < 2) return false;
    // Two communicators that two ranks share: the pairwise check reads their orders.
    return comms.size() > 2 || shared_views(*comms.begin(), *comms.rbegin()) < 2;
  });
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
  auto who = [&](const Hop& h) {
    const View& v = g.view(h.view);
    const uint32_t in = naming >= 0 ? static_cast<uint32_t>(naming) : g.node(h.from).first;
    return rank_in[v][in];
  };
  const std::string of_naming =
      naming >= 0 ? " of " + CommShortName(m.comms()[static_cast<size_t>(naming)]) : "";
  auto instance = [&](uint32_t n) {
    return CommShortName(m.comms()[g.node(n).first]) + " seq " + std::to_string(g.node(n).second);
  };

  const uint32_t first_comm = g.node(hops.front().from).first;
  Finding f = FindingOn(FindingKind::kCrossCommOrder, m, first_comm);
  f.seq = g.node(hops.front().from).second;
  f.first_time = INT64_MAX;
  std::set<uint32_t> comms;
  std::vector<int> named;
  std::string steps, comm_list;
  bool certain = true;
  for (const Hop& h : hops) {
    const uint32_t cf = g.node(h.from).first, ct = g.node(h.to).first;
    if (comms.insert(cf).second)
      comm_list += (comm_list.empty() ? "" : ", ") + CommShortName(m.comms()[cf]);
    certain = certain && h.one_stream;
    const int r = who(h);
    named.push_back(r);
    const std::string rank =
        "rank " + std::to_string(r) + (naming >= 0 ? "" : " of " + CommShortName(m.comms()[cf]));
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
    f.table.push_back({std::to_string(r), "-", what, true});
  }
  for (const auto& [v, in] : rank_in)
    if (views.count(v) && in.count(first_comm)) f.ranks.push_back(in.at(first_comm));
  std::sort(f.ranks.begin(), f.ranks.end());
  f.pattern = "cycle";
  for (uint32_t c : comms) f.pattern += ":" + Hex64(m.comms()[c].id);
  std::vector<int> sorted = named;
  std::sort(sorted.begin(), sorted.end());
  const std::string n_comms = std::to_string(comms.size()) + " communicators";
  f.short_text = RankList(sorted) + of_naming + " wait for each other round a cycle through " +
                 n_comms + " (" + comm_list + ")";
  f.message =
      "Each device runs its collectives in issue order (one stream, or the host waiting between "
      "them), and a collective completes only once every rank of its communicator ran it. " +
      Capitalized(steps) +
      ". Round the cycle each of these collectives waits for the one before "
      "it, so none can complete: " +
      (certain ? std::string("a deadlock")
               : std::string("a deadlock, or one waiting to happen where separate streams "
                             "happen to overlap")) +
      ". " +
      (comms.size() > 2 ? "No two of these ranks share two of the " + n_comms +
                              ", so no pair of ranks disagrees on an order by itself: only the "
                              "cycle through all of them deadlocks. "
                        : std::string()) +
      "Issue the collectives of different communicators in one global order on every rank (for "
      "a grid of communicators, e.g. every row collective of a step before every column one), "
      "or put them in one ncclGroupStart/ncclGroupEnd.";
  // The hang that follows on every communicator of the cycle is this finding's consequence.
  for (const Hop& h : hops) ctx.Claim(g.node(h.from).first, g.node(h.from).second, kNoSeq);
  sink.Add(std::move(f));
}

}  // namespace ncclrr::analysis
