#pragma once
// Notes for traces imported from NCCL logs (`ncclrr import-nccl-log`): how the importer inferred
// communicators and ranks (`inferred` notes), and for a communicator some of whose ranks no log
// shows, which ranks those are and — when every logged rank stopped at the same call — where
// the logged ranks wait for them if the job hung.
#include <string>
#include <vector>

#include "ncclrr/analysis/check.h"

namespace ncclrr::analysis {

// Whether communicator `ci`'s ranks come from NCCL logs.
bool IsImportedFromLog(const TraceModel& m, size_t ci);

// The `inferred` notes the importer left in the files, once each.
void AddInferenceNotes(const TraceModel& m, FindingSink& sink);

// "8 of 16 ranks logged; ranks 8-15 absent from the logs. Every logged rank's last call on it
// is seq 0 (AllReduce(...)): if the job hung, ranks 0-7 wait there for ranks 8-15."
std::string AbsentFromLogs(const TraceModel& m, size_t ci, const std::vector<int>& absent);

}  // namespace ncclrr::analysis
