#pragma once
// Synthetic traces: a training-like loop of collectives written through the real TraceWriter,
// one file per rank, with optional injected bugs. Used by the demo before real capture exists,
// by golden tests of the analysis, and by benchmarks that need millions of calls.
#include <cstdint>
#include <string>
#include <vector>

#include "ncclrr/status.h"

namespace ncclrr {

struct SyntheticTraceOptions {
  std::string dir;
  int ranks = 2;
  int steps = 4;
  std::vector<uint64_t> counts = {1728, 36864, 36864, 512};  // allreduces per step (floats)
  int swap_rank = -1;  // this rank issues calls swap_index and swap_index+1 swapped ...
  int swap_index = 1;
  std::vector<int> swap_steps;  // ... in these steps
  int missing_rank = -1;        // this rank stops issuing calls at missing_step/missing_index
  int missing_step = 0;
  int missing_index = 0;
  int count_delta_rank = -1;  // this rank's call count_delta_index has count + count_delta ...
  int count_delta_index = 0;
  int64_t count_delta = 0;
  int count_delta_step = 0;  // ... in this step
  uint64_t base_comm_id = 0x5a17c0de00000000ull;
  bool compress = true;
  bool close_files = true;  // false: leave files without footer (as a killed job would)
};

struct SyntheticTraceResult {
  std::vector<std::string> files;
  uint64_t calls = 0;
};

StatusOr<SyntheticTraceResult> WriteSyntheticTrace(const SyntheticTraceOptions& options);

}  // namespace ncclrr
