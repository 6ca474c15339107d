#pragma once
// Turns NCCL's own debug logs (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL) into an ncclrr
// trace, so `check` and the viewer work on logs people already have. One trace file per
// (host, pid) found in the logs; a log may hold one process or many interleaved (torchrun,
// mpirun), each line prefixed by NCCL's "host:pid:tid [dev] NCCL INFO".
//
// What a log cannot say, the trace says it does not know: times are log order unless NCCL
// printed timestamps; communicators created by split carry ncclrr's stand-in id (NCCL does not
// print their commHash); group scopes and return codes are absent.
#include <cstdint>
#include <string>
#include <vector>

#include "ncclrr/status.h"

namespace ncclrr {

struct NcclLogImportResult {
  std::vector<std::string> files;  // trace files written
  uint64_t calls = 0;
  uint64_t comms = 0;
  uint64_t lines = 0;            // lines read
  uint64_t unmatched_calls = 0;  // COLL lines whose communicator was never initialised in the log
  std::vector<std::string> warnings;
};

StatusOr<NcclLogImportResult> ImportNcclLogs(const std::vector<std::string>& log_paths,
                                             const std::string& out_dir);

}  // namespace ncclrr
