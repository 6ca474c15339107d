#pragma once
// Findings of the data checks (docs/sketches.md "Checks"): wrong_sum when an output is not what
// the ranks' inputs combine to, buffer_race when a send buffer changed while NCCL could read it,
// output_divergence when ranks hold different outputs of a call that gives all the same bytes.
// A race in the same call explains its wrong sums, so such a call gives one buffer_race finding
// that names the wrong outputs instead of two findings; a divergent rank's wrong sum is part of
// the output_divergence finding (the more specific statement), never a wrong_sum of its own.
#include <cstdint>
#include <optional>
#include <vector>

#include "checks/output_divergence.h"
#include "ncclrr/analysis/finding.h"
#include "ncclrr/analysis/model.h"
#include "ncclrr/sketch/identity.h"
#include "ncclrr/sketch/race.h"

namespace ncclrr::analysis {

// One rank's part of a checked call.
struct RankDataOutcome {
  int rank = -1;
  CallRef call;
  uint64_t seq = 0;  // collective seq, or per-pair index for p2p
  int64_t time_ns = 0;
  std::optional<sketch::RankVerdict> verdict;  // identity check of its output, if any
  std::optional<sketch::RaceEvidence> race;    // only when its send buffer changed
};

// The outcome of one collective position (every rank) or one Send/Recv pair (sender first,
// receiver second; `peer` = the receiver). Returns the findings it gives (none when clean).
struct CallDataOutcome {
  size_t comm_index = 0;
  uint64_t seq = 0;
  std::optional<int> peer;  // p2p: the receiving rank
  std::vector<RankDataOutcome> ranks;
  std::optional<OutputDivergence> divergence;  // AllReduce/Broadcast/AllGather outputs differ
  // For the divergence's likely causes: the first position of the communicator that a structural
  // finding claimed, when before this one (calls may be mispaired since), and the NCCL versions
  // of the ranks' files when they differ.
  std::optional<uint64_t> mispaired_at;
  std::vector<int32_t> nccl_versions;
};
// `captured_wrong`: the wrong_sum `record --capture`'s buffers prove for this call, if any
// (CheckContext::DeferCaptureWrongSum): a race in the call explains it and absorbs it.
std::vector<Finding> DataFindings(const TraceModel& m, const CallDataOutcome& o,
                                  const Finding* captured_wrong = nullptr);

// "3.2e+01": numbers in data-check messages (error, tolerance, cosines use fixed 2 digits).
std::string Sci(double v);

}  // namespace ncclrr::analysis
