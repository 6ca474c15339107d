#pragma once
// Turns PyTorch Flight Recorder dumps (one per rank: TORCH_NCCL_TRACE_BUFFER_SIZE with
// TORCH_NCCL_DUMP_ON_TIMEOUT, or torch._C._distributed_c10d._dump_nccl_trace()) into an ncclrr
// trace, one process file per rank, so `check`, `replay --backend host` and the viewer work on
// the dumps people already have. Pickle or JSON, dump versions 2.0 to 2.10.
//
// What a dump holds becomes what a recording would: process groups are communicators (ranks
// from pg_config), an entry not completed is a call in flight, the Python frames are the call
// site. What it lacks (reduction op, root, buffers, streams, the device) the trace says it does
// not know: op -1 and root -1 on every rank, so no check compares them.
#include <cstdint>
#include <string>
#include <vector>

#include "ncclrr/base/status.h"

namespace ncclrr {

struct FrImportResult {
  std::vector<std::string> files;  // trace files written, by rank
  std::vector<int> ranks;          // global rank of each file
  std::string version;             // the dumps' version ("2.10")
  uint64_t calls = 0;
  uint64_t in_flight = 0;  // entries not completed when dumped
  uint64_t comms = 0;      // distinct process groups
  uint64_t skipped = 0;    // entries of operations NCCL has no call for (barrier, coalesced)
  std::vector<std::string> warnings;
};

// `inputs`: dump files, or directories whose files named <prefix><rank> (nccl_trace_rank_3,
// optionally .json/.pkl) are the dumps. The rank comes from the file name (dumps do not hold it).
StatusOr<FrImportResult> ImportFlightRecorder(const std::vector<std::string>& inputs,
                                              const std::string& out_dir);

}  // namespace ncclrr
