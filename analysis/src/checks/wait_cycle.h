#pragma once
// A cycle of waits across communicators: ranks each of which issued a collective of one
// communicator before one of another that the next rank of the cycle runs first. With three or
// more communicators, each pair shared by one rank (a 2-D grid's rows and columns), no two ranks
// disagree on the order of a pair, so the pairwise cross_comm_order check sees nothing, yet none
// of the collectives can complete.
#include "ncclrr/analysis/check.h"

namespace ncclrr::analysis {

// Looks among the last kTailCollectives collectives of every process that may have hung (its
// file not closed in order, or a communicator aborted: TraceModel::MayHaveHung) and reports the
// first cycle found as a cross_comm_order finding, claiming its positions. A cycle through a
// pair of communicators that two ranks share and order oppositely is the pairwise check's.
// Member 0 of a spread check runs it: it receives those calls (SharePlan).
void FindWaitCycle(CheckContext& ctx, FindingSink& sink);

}  // namespace ncclrr::analysis
