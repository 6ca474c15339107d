#pragma once
// Which communicator of run B is which of run A. NCCL's commHash comes from a random unique id
// (and a split's from its parent's), so ids never agree between two runs; the structure does:
// how a communicator was made (init, split, shrink), its size, its name, its parent's
// counterpart and a split's color. Communicators alike in all of these are matched in the order
// each run created them. Leftovers alike in origin, size and name are matched loosely (a color
// computed from something run-specific), in creation order; the rest have no counterpart.
#include <string>
#include <vector>

#include "ncclrr/analysis/model.h"
#include "ncclrr/analysis/trace_diff.h"

namespace ncclrr::analysis {

// Every communicator of both runs, once: matched pairs in A's creation order, then A's
// unmatched ones, then B's.
std::vector<CommPair> MatchComms(const TraceModel& a, const TraceModel& b);

// "split of comm 0x… (color 3), 4 ranks": how a communicator came to be, for messages.
std::string CommOriginText(const TraceModel& m, const CommModel& c);

// Communicator size as the model knows it (nranks, or the ranks seen when no CommRecord said).
int CommSize(const CommModel& c);

}  // namespace ncclrr::analysis
