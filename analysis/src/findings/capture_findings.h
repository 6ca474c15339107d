#pragma once
// The wrong_sum finding of the exact data checks (capture_checker.cc): which ranks' outputs
// differ from what their captured inputs combine to, the first differing element with its
// expected and observed values, and how many elements differ.
#include <optional>
#include <string>
#include <vector>

#include "checks/capture_verify.h"
#include "ncclrr/analysis/finding.h"
#include "ncclrr/analysis/model.h"

namespace ncclrr::analysis {

// One rank's captured buffers of a call, read.
struct RankBuffers {
  int rank = -1;
  CallRef call;
  int64_t time_ns = 0;
  std::string send, recv;
  double scalar = 1;  // PreMulSum
};

// `ranks`: every rank of the collective (sender, receiver for a Send/Recv pair with `peer` the
// receiver); `checks`: the outputs VerifyCaptured compared; `wrong`: those that differ.
Finding CaptureWrongSum(const TraceModel& m, size_t ci, uint64_t seq, std::optional<int> peer,
                        const std::vector<RankBuffers>& ranks,
                        const std::vector<OutputCheck>& checks,
                        const std::vector<const OutputCheck*>& wrong);

}  // namespace ncclrr::analysis
