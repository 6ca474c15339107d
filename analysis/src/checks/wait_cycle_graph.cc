// WaitGraph: see wait_cycle_graph.h.
#include "checks/wait_cycle_graph.h"

#include <algorithm>
#include <tuple>

#include "ncclrr/base/parallel_for.h"

namespace ncclrr::analysis {
namespace {

constexpr int8_t kInProgress = 7;
// The comm of a node standing between two large blocks of one view (not a collective).
constexpr uint32_t kBetweenBlocks = UINT32_MAX;

}  // namespace

WaitGraph::WaitGraph(const TraceModel& m, int threads) {
  ReadTails(m, threads);
  Link();
}

void WaitGraph::ReadTails(const TraceModel& m, int threads) {
  std::vector<uint32_t> hung;
  for (uint32_t f = 0; f < m.files().size(); ++f)
    if (m.MayHaveHung(f)) hung.push_back(f);
  std::vector<std::vector<std::pair<View, TailCall>>> per_file(hung.size());
  ParallelFor(hung.size(), threads, [&](size_t i) {
    const uint32_t f = hung[i];
    const int64_t from = m.TailFromNs(f);
    for (const auto& [ci, rank] : m.files()[f].ranks) {
      const RankView& r = m.comms()[ci].ranks[static_cast<size_t>(rank)];
      CallTable::Reader enter(m.file(f).calls, CallTable::WordsOf(offsetof(CallRecord, enter_ns)));
      for (const CollectiveSlot& s : r.collectives) {
        if (s.launch != 0 || enter[s.call.index].enter_ns < from) continue;
        const CallRecord c = m.call(s.call);
        per_file[i].push_back(
            {View{r.file, r.device},
             {c.enter_ns, s.call, static_cast<uint32_t>(ci), s.seq, c.group_id, c.stream, c.tid,
              (c.flags & call_flags::kInFlight) != 0, c.result == kInProgress}});
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

void WaitGraph::Link() {
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
      LinkBlocks(vi, blocks[b].first, blocks[b].second, blocks[b + 1].first, blocks[b + 1].second);
    if (calls.empty() || !calls.back().in_flight) continue;
    // Blocked in its last call: that thread never issued the next collective of the
    // communicators it issues on; where another rank issued it, it waits for the blocked call.
    const TailCall& blocked = calls.back();
    std::map<uint32_t, const TailCall*> last_on;
    for (const TailCall& c : calls) last_on[c.comm] = &c;
    for (const auto& [comm, last] : last_on) {
      if (last->tid != blocked.tid) continue;  // another thread was free to issue it
      auto it = ids_.find({comm, last->seq + 1});
      if (it == ids_.end()) continue;
      for (size_t i = blocks.back().first; i < calls.size(); ++i)
        adj_[Id(calls[i])].push_back({it->second, vi, calls[i].call, {}, true, true});
    }
  }
}

void WaitGraph::LinkBlocks(uint32_t view, size_t i0, size_t i1, size_t j0, size_t j1) {
  const std::vector<TailCall>& calls = calls_.at(views_[view]);
  auto certain = [&](const TailCall& a, const TailCall& b) {
    return a.stream == b.stream && !a.in_progress && !b.in_progress;
  };
  if ((i1 - i0) * (j1 - j0) <= 4) {
    for (size_t i = i0; i < i1; ++i)
      for (size_t j = j0; j < j1; ++j)
        adj_[Id(calls[i])].push_back(
            {Id(calls[j]), view, calls[i].call, calls[j].call, false, certain(calls[i], calls[j])});
    return;
  }
  // Two large groups (coalesced collectives): every call of one before every call of the next,
  // through a node of their own, so that edges grow with the calls, not their product. Both of
  // that node's edges are on one view: merging a cycle's hops takes it out.
  bool sure = true;
  for (size_t k = i0; k < j1; ++k) sure = sure && certain(calls[i0], calls[k]);
  const auto between = static_cast<uint32_t>(nodes_.size());
  nodes_.push_back({kBetweenBlocks, between});
  adj_.emplace_back();
  for (size_t i = i0; i < i1; ++i)
    adj_[Id(calls[i])].push_back({between, view, calls[i].call, {}, false, sure});
  for (size_t j = j0; j < j1; ++j)
    adj_[between].push_back({Id(calls[j]), view, {}, calls[j].call, false, sure});
}

std::vector<Hop> WaitGraph::FindCycle(const Accept& accept,
                                      const std::vector<std::set<uint32_t>>& passes) const {
  std::vector<bool> skip(nodes_.size(), false);
  for (const std::set<uint32_t>& leave_out : passes) {
    for (size_t n = 0; n < nodes_.size(); ++n) skip[n] = leave_out.count(nodes_[n].first) > 0;
    if (auto hops = Search(accept, skip); !hops.empty()) return hops;
  }
  skip.assign(nodes_.size(), false);
  return Search(accept, skip);
}

int WaitGraph::Order(const View& view, uint32_t a, uint32_t b) const {
  auto it = calls_.find(view);
  if (it == calls_.end()) return 0;
  int at_a = -1, at_b = -1, i = 0;
  for (const TailCall& c : it->second) {
    const auto key = std::make_pair(c.comm, c.seq);
    if (key == nodes_[a]) at_a = i;
    if (key == nodes_[b]) at_b = i;
    ++i;
  }
  if (at_a < 0 || at_b < 0) return 0;
  return at_a < at_b ? -1 : 1;
}

// Depth first; a cycle `accept` rejects leaves its nodes explored (a search for every cycle
// would grow exponentially): FindCycle's passes leave out what would close such cycles.
std::vector<Hop> WaitGraph::Search(const Accept& accept, const std::vector<bool>& skip) const {
  std::vector<uint8_t> color(nodes_.size(), 0);  // 0 new, 1 on the path, 2 done
  std::vector<size_t> pos(nodes_.size(), 0);
  std::vector<std::pair<uint32_t, size_t>> path;  // node, next edge
  for (uint32_t start = 0; start < nodes_.size(); ++start) {
    if (color[start] || skip[start]) continue;
    color[start] = 1;
    pos[start] = 0;
    path.push_back({start, 0});
    while (!path.empty()) {
      auto& [u, k] = path.back();
      if (k == adj_[u].size()) {
        color[u] = 2;
        path.pop_back();
        continue;
      }
      const Edge& e = adj_[u][k++];
      if (skip[e.to]) continue;
      if (color[e.to] == 0) {
        color[e.to] = 1;
        pos[e.to] = path.size();
        path.push_back({e.to, 0});
        continue;
      }
      if (color[e.to] != 1) continue;
      std::vector<Hop> hops;
      for (size_t i = pos[e.to]; i < path.size(); ++i) {
        const uint32_t n = path[i].first;
        const Edge& x = i + 1 < path.size() ? adj_[n][path[i].second - 1] : e;
        hops.push_back({n, x.to, x.view, x.from_call, x.to_call, x.blocked, x.certain});
      }
      hops = Merged(std::move(hops));
      if (std::any_of(hops.begin(), hops.end(), [&](const Hop& h) {
            return nodes_[h.from].first == kBetweenBlocks || nodes_[h.to].first == kBetweenBlocks;
          }))
        continue;
      Tighten(&hops);
      std::rotate(hops.begin(),
                  std::min_element(hops.begin(), hops.end(),
                                   [](const Hop& a, const Hop& b) { return a.from < b.from; }),
                  hops.end());
      if (accept(hops)) return hops;
    }
  }
  return {};
}

// Consecutive edges of one view are one hop (also across the cycle's wrap), but for an edge out
// of a blocked call: "blocked in" names the call the view hung in.
std::vector<Hop> WaitGraph::Merged(std::vector<Hop> hops) const {
  while (hops.size() > 1 && hops.front().view == hops.back().view && !hops.front().blocked) {
    hops.front().from = hops.back().from;
    hops.front().from_call = hops.back().from_call;
    hops.front().certain = hops.front().certain && hops.back().certain;
    hops.pop_back();
  }
  std::vector<Hop> out;
  for (const Hop& h : hops) {
    if (!out.empty() && out.back().view == h.view && !h.blocked) {
      out.back().to = h.to;
      out.back().to_call = h.to_call;
      out.back().blocked = h.blocked;
      out.back().certain = out.back().certain && h.certain;
      continue;
    }
    out.push_back(h);
  }
  return out;
}

// Where a hop ends on a communicator's call that the next hop starts from, the earliest call of
// that communicator past the hop's start does as well (every rank issues its calls in seq
// order): "col0 seq 10", the first of the step's column calls, rather than the last. A hop
// into or out of a blocked call keeps it.
void WaitGraph::Tighten(std::vector<Hop>* hops) const {
  for (size_t i = 0; i < hops->size(); ++i) {
    Hop& h = (*hops)[i];
    Hop& next = (*hops)[(i + 1) % hops->size()];
    if (h.blocked || next.blocked) continue;
    const std::vector<TailCall>& mine = calls_.at(views_[h.view]);
    const std::vector<TailCall>& theirs = calls_.at(views_[next.view]);
    const uint32_t comm = nodes_[h.to].first;
    const uint64_t seq = nodes_[h.to].second;
    const auto from = std::find_if(mine.begin(), mine.end(),
                                   [&](const TailCall& t) { return t.call == h.from_call; });
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

}  // namespace ncclrr::analysis
