#pragma once
// What `ncclrr diff` found on one rank at one place, before the ranks of a communicator are
// grouped into Divergences (trace_diff.cc finds them, diff_messages.cc words them).
#include <cstdint>
#include <string>
#include <vector>

#include "diff/diff_data.h"
#include "ncclrr/analysis/trace_diff.h"

namespace ncclrr::analysis {

// A call of one rank's sequence in one run: its position (collective seq, or index among the
// rank's Send/Recv calls) and the call.
struct DiffSlot {
  uint64_t pos = 0;
  CallRef call;
  uint32_t launch = 0;
};

struct DiffEvent {
  int rank = -1;
  std::vector<DiffSlot> a, b;  // the calls of each run involved (empty: none)
  uint64_t a_pos = 0;  // where in run A it happens (for a run-B-only event: the next A call)
  uint64_t b_pos = 0;
  // kData
  DataComparison data;
  // kOrder: how the reordering shows. Same-shape calls have equal signatures; they are told
  // apart by their sketches, or by `check`'s suspected_swap (buffers, call sites) in one run only.
  enum class Evidence : uint8_t { kSignatures, kData, kIdentity } evidence = Evidence::kSignatures;
  bool in_run_a = false;    // kIdentity: the run whose ranks disagree is A, not B
  double confidence = 0;    // kIdentity: the suspected_swap's confidence
  uint64_t extra_more = 0;  // kIdentity: the suspected_swap's repeats
  // kCallSite: the two call sites
  std::string site_a, site_b;
  // kTiming: GPU durations of this rank's call in each run, and the position's cost (the
  // shortest over the ranks) with the runs' medians for the call's signature
  int64_t gpu_a = -1, gpu_b = -1;
  // kMissingCall / kExtraCall at the end of a sequence: the shorter run's trace file of this
  // rank ends without a clean close (the process was killed, crashed or hung)
  bool at_end = false;
  bool short_side_unclean = false;
  // kMissingCall / kExtraCall mid-sequence: the calls repeat, whole, just before them on the run
  // that has them (a step of a loop), so they may as well be any of those repeats from
  // `earliest_pos` on (a position of that run).
  bool repeats_before = false;
  uint64_t earliest_pos = 0;
  // kMissingCall / kExtraCall mid-sequence: the run without the calls agrees again for only
  // `agree_after` calls and then ends (`short_ends`); `agree_launched`: those calls all come
  // from a CUDA graph's launch, so the rank may as well have launched the graph once more
  // where the other run issued these calls, and stopped there.
  uint64_t agree_after = 0;
  bool short_ends = false;
  bool short_ends_unclean = false;
  bool agree_launched = false;
};

// Every event of one kind at the first position a communicator shows it.
struct EventGroup {
  DiffKind kind = DiffKind::kOrder;
  bool p2p = false;
  std::vector<DiffEvent> events;  // by rank
  uint64_t more = 0;
  int nranks = 0;
  // kTiming: the position's cost in each run, and each run's median for the signature
  int64_t cost_a = 0, cost_b = 0, median_a = 0, median_b = 0;
};

struct DiffSide {
  const TraceModel* model = nullptr;
  int comm = -1;
};

// Fills d's texts (short_text, message) and table rows of the event ranks.
void DescribeDivergence(const EventGroup& g, const DiffSide& a, const DiffSide& b, Divergence* d);

// "seq 56 AllReduce(16384 float32, sum)", "seq 56-57 A then B", "p2p #3 Send(...)".
std::string SlotsText(const TraceModel& m, const std::vector<DiffSlot>& slots, bool p2p);

}  // namespace ncclrr::analysis
