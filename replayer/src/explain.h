#pragma once
// How the ranks' orders disagree, from the order alone (before anything runs): per
// communicator, the positions where a rank's logical call differs from the majority's, phrased
// as "seq 4–5, 12–13 swapped on rank 1"; and pairs of communicators that two processes use in
// opposite orders (the cross-communicator deadlock).
#include <string>
#include <vector>

#include "order.h"

namespace ncclrr::replay {

std::vector<std::string> ExplainOrder(const ReplayPlan& plan, const IssueOrder& order,
                                      const std::vector<uint64_t>& positions);

}  // namespace ncclrr::replay
