#include "distributed/share_plan.h"

#include <algorithm>
#include <tuple>

namespace ncclrr::analysis {

SharePlan PlanShares(const TraceModel& skeleton, const std::map<uint64_t, uint64_t>& calls_per_id,
                     int members, bool whole) {
  SharePlan plan;
  const std::vector<CommModel>& comms = skeleton.comms();
  if (!whole) {
    // Largest first, each to the member with the fewest calls so far (ties: the lowest member).
    std::vector<std::pair<uint64_t, uint64_t>> by_size;  // (calls, id)
    for (const CommModel& c : comms) {
      auto it = calls_per_id.find(c.id);
      by_size.emplace_back(it == calls_per_id.end() ? 0 : it->second, c.id);
    }
    std::sort(by_size.begin(), by_size.end(), [](const auto& a, const auto& b) {
      return std::tie(b.first, a.second) < std::tie(a.first, b.second);
    });
    std::vector<uint64_t> load(static_cast<size_t>(members), 0);
    for (const auto& [calls, id] : by_size) {
      if (plan.owner_of_id.count(id)) continue;
      const auto m = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
      plan.owner_of_id[id] = m;
      load[static_cast<size_t>(m)] += calls;
    }
  }
  for (const CommModel& c : comms) plan.owner.push_back(plan.OwnerOfId(c.id));
  // The views each comm is held on, as the cross-communicator check finds them.
  std::map<std::pair<int32_t, int>, std::set<uint32_t>> on_view;
  for (size_t ci = 0; ci < comms.size(); ++ci)
    for (const RankView& r : comms[ci].ranks)
      if (r.has_file()) on_view[{r.file, r.device}].insert(static_cast<uint32_t>(ci));
  std::map<std::pair<uint32_t, uint32_t>, std::vector<std::pair<int32_t, int>>> shared;
  for (const auto& [view, cs] : on_view)
    for (auto a = cs.begin(); a != cs.end(); ++a)
      for (auto b = std::next(a); b != cs.end(); ++b) shared[{*a, *b}].push_back(view);
  auto calls_of = [&](uint32_t ci) {
    auto it = calls_per_id.find(comms[ci].id);
    return it == calls_per_id.end() ? 0 : it->second;
  };
  for (const auto& [pair, views] : shared) {
    if (views.size() < 2) continue;
    const auto [x, y] = pair;
    const bool x_hosts = calls_of(x) >= calls_of(y);
    const int host = plan.owner[x_hosts ? x : y];
    plan.pair_host[pair] = host;
    const uint32_t other = x_hosts ? y : x;
    if (plan.owner[other] == host) continue;
    for (const auto& view : views)
      plan.extra[{static_cast<uint32_t>(view.first), comms[other].id}].insert(host);
  }
  // Member 0 looks for cycles of waits across communicators among the last collectives of the
  // processes that may have hung (checks/wait_cycle.cc): it gets those.
  if (members > 1)
    for (uint32_t f = 0; f < skeleton.files().size(); ++f)
      if (skeleton.MayHaveHung(f)) plan.tail_from[f] = skeleton.TailFromNs(f);
  return plan;
}

}  // namespace ncclrr::analysis
