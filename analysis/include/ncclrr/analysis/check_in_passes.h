#pragma once
// `ncclrr check DIR --memory SIZE` (docs/check.md, "Traces larger than memory"): a trace whose
// calls do not fit is checked in passes. A first pass over the files counts each
// communicator's calls and keeps every record but the calls; the communicators are then shared
// out into groups that fit (as `check --mpi` shares them out among processes, check_group.h),
// and each group is checked on its own, from a further pass that keeps only its calls. The
// report is byte for byte the one `ncclrr check DIR` gives.
#include <cstdint>
#include <string>
#include <vector>

#include "ncclrr/analysis/check.h"
#include "ncclrr/base/status.h"

namespace ncclrr::analysis {

struct PassOptions {
  uint64_t memory_bytes = 0;  // what the check may hold; 0: no bound (one pass, in memory)
  int shares = 0;             // > 0: this many groups of communicators, whatever the memory
  // Where the per-call arrays go when one group alone holds more calls than memory_bytes fits
  // (ncclrr/base/spill.h): "" for the trace's directory.
  std::string spill_dir;
  bool spill = true;  // false: such a group is held in memory, above the bound
  // Where the memory cannot be bounded, in groups or spilled, fail with why (the viewer, which
  // must not take the memory its session needs) rather than hold more than memory_bytes.
  bool must_bound = false;
};

struct PassStats {
  int reads = 0;                     // passes over the trace's files
  int shares = 0;                    // groups of communicators checked one at a time
  uint64_t calls = 0;                // call records of the trace
  uint64_t largest_share_calls = 0;  // the most call records held at once
  uint64_t records_bytes = 0;        // memory in use after the first pass: every record but calls
  // The memory needed could not be bounded: a trace with sketches or captured buffers (the data
  // checks tally every communicator at once), or whose calls name communicators its files never
  // announced, was checked whole; or one communicator alone holds more calls than fit.
  bool unbounded = false;
  // Where it could not be bounded, the per-call arrays went to a file on disk instead
  // (ncclrr/base/spill.h): the most bytes there at once. 0: none went.
  uint64_t spilled_bytes = 0;
  uint64_t spill_fallbacks = 0;  // arrays that stayed in memory all the same: the disk was full
  std::string spill_dir;         // where the file was
  std::string spill_error;       // why they could not go to disk (then they stayed in memory)
};

// About what a call costs at the check's peak (its packed record, its slot in the model, the
// logical identity's results): 47–56 B measured on synthetic traces (bench/README.md, "Loading
// and checking"), whose calls pack ~8 B smaller than real jobs' calls; rounded up.
inline constexpr uint64_t kCheckBytesPerCall = 80;

// What checking the trace at `dir` in one pass would hold at its peak, from its files' footers
// (a file without one, as a killed job leaves, counted at one call per byte on disk: more than it
// holds, so that a trace that might not fit is checked in passes). 0 when `dir` names no file.
uint64_t OnePassMemoryEstimate(const std::string& dir, int threads);

StatusOr<Report> CheckInPasses(const std::string& dir, const PassOptions& passes,
                               const CheckOptions& options = {}, PassStats* stats = nullptr);

}  // namespace ncclrr::analysis
