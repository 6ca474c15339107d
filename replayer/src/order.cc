#include "order.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace ncclrr::replay {
namespace {

uint64_t SplitMix(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// (comm, tensor) of the unit's first collective with a known tensor, as one nonzero key.
uint64_t TensorKey(const ReplayPlan& plan, const PlanUnit& u) {
  for (uint32_t idx : u.calls) {
    const PlanCall& c = plan.calls[idx];
    if (!c.collective()) continue;
    const LogicalColl& l = plan.comms[c.comm].logical[c.logical];
    if (l.tensor == kNone) continue;
    return (uint64_t{c.comm + 1} << 32) | l.tensor;
  }
  return 0;
}

uint32_t UnitStep(const ReplayPlan& plan, const PlanUnit& u) {
  for (uint32_t idx : u.calls)
    if (plan.calls[idx].collective()) return plan.calls[idx].step;
  return kNone;
}

uint64_t PairKey(uint64_t a, uint64_t b) {
  // Tensor keys use 16 bits of comm and 16 of tensor id in a pair key; collisions only widen the
  // freedom of a permutation, never break a replay.
  auto small = [](uint64_t k) { return ((k >> 32) & 0xFFFF) << 16 | (k & 0xFFFF); };
  return small(std::min(a, b)) << 32 | small(std::max(a, b));
}

}  // namespace

uint64_t MovedCalls(const ReplayPlan& plan, const IssueOrder& order) {
  uint64_t moved = 0;
  for (size_t a = 0; a < plan.actors.size(); ++a) {
    const auto& rec = plan.actors[a].units;
    const auto& now = order.units_of_actor[a];
    for (size_t i = 0; i < now.size(); ++i)
      if (i >= rec.size() || rec[i] != now[i]) moved += plan.units[now[i]].calls.size();
  }
  return moved;
}

IssueOrder RecordedOrder(const ReplayPlan& plan) {
  IssueOrder o;
  for (const PlanActor& a : plan.actors) o.units_of_actor.push_back(a.units);
  return o;
}

IssueOrder CanonicalOrder(const ReplayPlan& plan) {
  IssueOrder o;
  for (const PlanActor& a : plan.actors) {
    struct Key {
      double time;
      uint32_t comm, logical, recorded;
    };
    std::vector<std::pair<Key, uint32_t>> keyed;
    for (uint32_t i = 0; i < a.units.size(); ++i) {
      const PlanUnit& u = plan.units[a.units[i]];
      Key k{static_cast<double>(u.time_ns), kNone, kNone, i};
      for (uint32_t idx : u.calls) {
        const PlanCall& c = plan.calls[idx];
        Key ck;
        if (c.collective()) {
          ck = {plan.comms[c.comm].logical[c.logical].canonical_key, c.comm, c.logical, i};
        } else if (c.partner != kNone) {
          // A Send and its Recv take one key on both ranks, as a collective does (the earlier
          // of their times): keyed by each rank's own time, a rank's Send could be put after a
          // collective its peer's Recv precedes, and the two would wait for each other.
          const PlanCall& p = plan.calls[c.partner];
          ck = {static_cast<double>(std::min(c.time_ns, p.time_ns)), c.comm,
                kNone / 2 + std::min(idx, c.partner), i};
        } else {
          continue;
        }
        if (k.comm == kNone ||
            std::tie(ck.time, ck.comm, ck.logical) < std::tie(k.time, k.comm, k.logical))
          k = ck;
      }
      keyed.push_back({k, a.units[i]});
    }
    std::stable_sort(keyed.begin(), keyed.end(), [](const auto& x, const auto& y) {
      return std::tie(x.first.time, x.first.comm, x.first.logical, x.first.recorded) <
             std::tie(y.first.time, y.first.comm, y.first.logical, y.first.recorded);
    });
    std::vector<uint32_t> units;
    for (const auto& [k, u] : keyed) units.push_back(u);
    o.units_of_actor.push_back(std::move(units));
  }
  o.moved_calls = MovedCalls(plan, o);
  return o;
}

Permuter::Permuter(const ReplayPlan& plan) : plan_(plan) {
  unit_key_.resize(plan.units.size());
  for (size_t u = 0; u < plan.units.size(); ++u) unit_key_[u] = TensorKey(plan, plan.units[u]);
  // Relative order of two tensors within one step, as seen on any actor: bit 1 = lower key
  // first, bit 2 = higher key first. Both bits: the program does not fix their order.
  std::map<uint64_t, int> seen;
  for (const PlanActor& a : plan.actors) {
    const auto& units = a.units;
    for (size_t i = 0; i < units.size(); ++i) {
      const uint64_t ki = unit_key_[units[i]];
      if (ki == 0) continue;
      const uint32_t si = UnitStep(plan, plan.units[units[i]]);
      for (size_t j = i + 1; j < units.size() && j <= i + kWindow; ++j) {
        const uint64_t kj = unit_key_[units[j]];
        if (kj == 0 || kj == ki || UnitStep(plan, plan.units[units[j]]) != si) continue;
        seen[PairKey(ki, kj)] |= ki < kj ? 1 : 2;
      }
    }
  }
  for (const auto& [pair, bits] : seen)
    if (bits == 3) varying_.push_back(pair);
  for (const PlanActor& a : plan.actors)
    for (size_t i = 0; i < a.units.size(); ++i)
      for (size_t j = i + 1; j < a.units.size() && j <= i + kWindow; ++j)
        freedom_pairs_ += !Ordered(a.units[i], a.units[j]);
}

bool Permuter::Ordered(uint32_t a, uint32_t b) const {
  const PlanUnit& x = plan_.units[a];
  const PlanUnit& y = plan_.units[b];
  // Steps stay in order: a training step ends with work that waits for its collectives.
  const uint32_t sa = UnitStep(plan_, x), sb = UnitStep(plan_, y);
  if (sa != kNone && sb != kNone && sa != sb) return true;
  if (x.tid != y.tid || x.stream != y.stream) return false;
  const uint64_t ka = unit_key_[a], kb = unit_key_[b];
  if (ka == 0 || kb == 0 || ka == kb) return true;
  return !std::binary_search(varying_.begin(), varying_.end(), PairKey(ka, kb));
}

IssueOrder Permuter::Trial(uint64_t seed) const {
  IssueOrder o;
  for (size_t a = 0; a < plan_.actors.size(); ++a) {
    uint64_t state = seed ^ (0x2545f4914f6cdd1dull * (a + 1));
    const auto& rec = plan_.actors[a].units;
    std::vector<bool> placed(rec.size(), false);
    std::vector<uint32_t> out, candidates;
    out.reserve(rec.size());
    size_t front = 0;
    while (out.size() < rec.size()) {
      while (placed[front]) ++front;
      candidates.clear();
      for (size_t j = front; j < rec.size() && j <= front + kWindow; ++j) {
        if (placed[j]) continue;
        bool free = true;
        for (size_t i = front; i < j && free; ++i) free = placed[i] || !Ordered(rec[i], rec[j]);
        if (free) candidates.push_back(static_cast<uint32_t>(j));
      }
      const uint32_t pick = candidates[SplitMix(&state) % candidates.size()];
      placed[pick] = true;
      out.push_back(rec[pick]);
    }
    o.units_of_actor.push_back(std::move(out));
  }
  o.moved_calls = MovedCalls(plan_, o);
  return o;
}

}  // namespace ncclrr::replay
