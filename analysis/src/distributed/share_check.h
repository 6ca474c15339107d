#pragma once
// Steps that a check spread over processes (check_spread.cc) and a check in passes of bounded
// memory (check_in_passes.cc) share: what a file's calls add up to, the skeleton a plan is made
// from, and running the checkers on one member's share of the communicators.
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "distributed/call_routing.h"
#include "distributed/member_result.h"
#include "distributed/share_plan.h"
#include "ncclrr/analysis/check.h"
#include "ncclrr/base/status.h"

namespace ncclrr::analysis {

// What a file's calls add up to, from all of them.
struct FileFacts {
  FileTotals totals;
  bool needs_whole = false;  // calls on a comm or rank no CommRecord of the file announced
  std::map<uint64_t, uint64_t> calls_per_id;
};
FileFacts FactsOf(const TraceFile& t);

// A copy of the files' records but their calls; `d` keeps its calls.
TraceDir WithoutCalls(TraceDir& d);

// Member `member`'s part of the plan, for a model of `ncomms` communicators (comms the plan did
// not see go to member 0: only when everything does). max_issued is left to the caller.
CheckShare ShareOf(const SharePlan& plan, int member, size_t ncomms);

// Runs every checker on `share`'s communicators of `model`. After checker k ran, `after(k, ctx)`
// passes on the claims made on other members' communicators and adds theirs. Findings name
// calls by their rows in the whole file (`rows[f]`: the row of each call of file f held here;
// empty when all of them are).
using AfterChecker = std::function<Status(uint32_t k, CheckContext& ctx)>;
StatusOr<MemberResult> CheckShareOf(const TraceModel& model, const CheckOptions& options,
                                    const CheckShare& share, const FileRows& rows,
                                    const AfterChecker& after);

}  // namespace ncclrr::analysis
