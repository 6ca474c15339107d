#pragma once
// Turns NCCL's and RCCL's own debug logs (NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS=COLL, with or
// without INIT) into an ncclrr trace, so `check`, `replay` and the viewer work on logs people
// already have. One trace file per (host, pid) found in the logs; a log may hold one process or
// many interleaved (torchrun, mpirun, Ray, Slurm), with whatever the launcher put in front of
// NCCL's "host:pid:tid [dev] NCCL INFO" prefix. docs/import.md lists the shapes understood.
//
// What a log cannot say, the trace says it does not know: communicators and ranks without
// 'Init COMPLETE' lines are inferred (each communicator's note says from what, and how sure);
// ranks of a communicator no log shows are absent; times are log order; group scopes, return
// codes and buffers' contents are absent.
#include <cstdint>
#include <string>
#include <vector>

#include "ncclrr/base/status.h"

namespace ncclrr {

struct NcclLogImportResult {
  std::vector<std::string> files;  // trace files written
  uint64_t calls = 0;
  uint64_t comms = 0;  // communicators inferred
  uint64_t processes = 0;
  uint64_t lines = 0;                 // lines read
  uint64_t unmatched_calls = 0;       // calls whose communicator has no 'Init COMPLETE' line
  uint64_t skipped_calls = 0;         // COLL lines no process could be found for
  uint64_t attributed_calls = 0;      // prefix-less COLL lines placed by their communicator handle
  std::vector<std::string> notes;     // how each communicator and its ranks were inferred
  std::vector<std::string> warnings;  // lines that could not be used, and why
};

// Notes in an imported trace that say how communicators and ranks were inferred start with this;
// `check` shows them as `inferred` notes.
inline constexpr const char* kNcclLogInferenceNote = "inferred: ";

StatusOr<NcclLogImportResult> ImportNcclLogs(const std::vector<std::string>& log_paths,
                                             const std::string& out_dir);

// Reads and infers as ImportNcclLogs does, from texts in memory, without writing a trace (the
// fuzzer, and tests of the inference).
NcclLogImportResult DescribeNcclLogs(const std::vector<std::string>& texts);

}  // namespace ncclrr
