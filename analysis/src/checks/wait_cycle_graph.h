#pragma once
// The graph a cycle of waits across communicators is looked for in (wait_cycle.h): collectives
// (communicator, seq) of the last calls of every process that may have hung, linked by
// "issued before" on one view (process file, device): a collective cannot run before the ones
// issued ahead of it complete (one stream, or the host waiting in between), and a thread blocked
// inside a call (it never returned) issues nothing after it. A collective completes only once
// every rank ran it, so a cycle in that relation is a deadlock whatever else happened: each of
// its collectives waits for the one before it.
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "ncclrr/analysis/model.h"

namespace ncclrr::analysis {

using View = std::pair<int32_t, int>;  // (file, device)

// One view's step round a cycle: it issued `from` before `to` (or, blocked in `from`, never
// issued `to`).
struct Hop {
  uint32_t from, to;  // nodes
  uint32_t view;
  CallRef from_call, to_call;  // to_call: none when blocked
  bool blocked;
  bool certain;  // the two calls ran in this order for sure: one stream, each returned done
};

class WaitGraph {
 public:
  // The tails (TraceModel::TailFromNs) of every file whose process may have hung
  // (TraceModel::MayHaveHung); files on `threads`.
  WaitGraph(const TraceModel& m, int threads);

  // The first cycle `accept` takes, in hops, starting at its smallest node; or empty. One search
  // per entry of `passes`, each leaving out the nodes of those communicators (so that a pass
  // meets no cycle the caller would reject, which would end its search there), then one over
  // every node.
  using Accept = std::function<bool(const std::vector<Hop>&)>;
  std::vector<Hop> FindCycle(const Accept& accept,
                             const std::vector<std::set<uint32_t>>& passes) const;
  // On `view`, whether node `a` was issued before node `b` (-1), after it (1), or not both (0).
  int Order(const View& view, uint32_t a, uint32_t b) const;

  // (comm index, seq) of a node.
  const std::pair<uint32_t, uint64_t>& node(uint32_t n) const { return nodes_[n]; }
  const View& view(uint32_t v) const { return views_[v]; }

 private:
  struct TailCall {
    int64_t enter_ns;
    CallRef call;
    uint32_t comm;
    uint64_t seq;
    uint64_t group;
    uint64_t stream;
    uint32_t tid;
    bool in_flight;
    bool in_progress;  // returned ncclInProgress: a nonblocking communicator enqueues it later
  };
  struct Edge {
    uint32_t to;
    uint32_t view;
    CallRef from_call, to_call;
    bool blocked;
    bool certain;
  };

  void ReadTails(const TraceModel& m, int threads);
  void Link();
  void LinkBlocks(uint32_t view, size_t i0, size_t i1, size_t j0, size_t j1);
  std::vector<Hop> Search(const Accept& accept, const std::vector<bool>& skip) const;
  std::vector<Hop> Merged(std::vector<Hop> hops) const;
  void Tighten(std::vector<Hop>* hops) const;
  uint32_t Id(const TailCall& c) const { return ids_.at({c.comm, c.seq}); }

  std::map<View, std::vector<TailCall>> calls_;  // per view, in issue order
  std::vector<View> views_;
  std::map<std::pair<uint32_t, uint64_t>, uint32_t> ids_;  // (comm, seq) -> node
  std::vector<std::pair<uint32_t, uint64_t>> nodes_;
  std::vector<std::vector<Edge>> adj_;
};

}  // namespace ncclrr::analysis
