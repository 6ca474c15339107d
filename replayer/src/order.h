#pragma once
// Orderings (docs/design.md "Replay"): for every actor, the order in which it issues its units.
//   recorded   as the trace shows them
//   canonical  every rank issues its collectives in its communicators' logical order, and every
//              actor merges its communicators by one global key, so no two ranks disagree
//   permute    seeded random reorderings of units the trace shows to be unordered
//   file:F     an explicit order (docs/replay.md: the format), e.g. one a permute trial found
#include <cstdint>
#include <string>
#include <vector>

#include "plan.h"

namespace ncclrr::replay {

struct IssueOrder {
  std::vector<std::vector<uint32_t>> units_of_actor;  // PlanUnit indices per actor
  uint64_t moved_calls = 0;  // calls of units that are not at their recorded place
};

IssueOrder RecordedOrder(const ReplayPlan& plan);
IssueOrder CanonicalOrder(const ReplayPlan& plan);

// Which units the trace shows to be unordered: within one step (occurrence of their tensors),
// units issued from different threads or on different streams, or whose logical tensors appear
// in either order in different steps or on different ranks (also across communicators). Steps
// keep their order: a training step ends with work that waits for its collectives. Computed once
// per plan; each trial draws one reordering.
class Permuter {
 public:
  explicit Permuter(const ReplayPlan& plan);
  // A random order that keeps every pair the trace shows to be ordered; units move at most
  // kWindow places. Deterministic per seed.
  IssueOrder Trial(uint64_t seed) const;
  bool any_freedom() const { return freedom_pairs_ > 0; }
  uint64_t freedom_pairs() const { return freedom_pairs_; }  // unordered pairs within the window

  static constexpr size_t kWindow = 32;

 private:
  bool Ordered(uint32_t a, uint32_t b) const;  // units, a recorded before b on one actor
  const ReplayPlan& plan_;
  std::vector<uint64_t> varying_;   // sorted keys of tensor pairs seen in both orders
  std::vector<uint64_t> unit_key_;  // per unit: its (comm, tensor) key, or 0
  uint64_t freedom_pairs_ = 0;
};

// Reads an order file. Errors name the file, where in it (line and column of a syntax error, the
// JSON path of a wrong value: "ranks[1].order[3]"), and what to write instead.
StatusOr<IssueOrder> OrderFromFile(const ReplayPlan& plan, const std::string& path);
// The order as an order file (a "sequence" entry per actor that differs from the recording).
std::string OrderToJson(const ReplayPlan& plan, const IssueOrder& order);

// Counts the calls of units not at their recorded index.
uint64_t MovedCalls(const ReplayPlan& plan, const IssueOrder& order);

}  // namespace ncclrr::replay
