#pragma once
// Explains a hung replay: for every call at the head of a stream when the replay was aborted,
// which ranks had not issued its position and where those ranks were stuck themselves (a cycle
// of such waits is a deadlock), or, when every rank issued the position, how their calls differ.
#include <vector>

#include "actor_report.h"
#include "ncclrr/replay/report.h"
#include "order.h"

namespace ncclrr::replay {

std::vector<StuckCall> ExplainStuck(const ReplayPlan& plan, const IssueOrder& order,
                                    const std::vector<uint64_t>& positions,
                                    const std::vector<ActorReport>& actors);

}  // namespace ncclrr::replay
