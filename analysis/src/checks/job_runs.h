#pragma once
// Runs of one job recorded into one trace: a launcher that restarts a failed job (torchrun
// --max-restarts, an elastic agent) starts new processes, which record into the same directory
// beside the processes of the run that failed.
#include <vector>

#include "ncclrr/analysis/finding.h"
#include "ncclrr/analysis/model.h"

namespace ncclrr::analysis {

// When the trace's processes fall into runs — processes joined by the communicators they share,
// each run's processes all stopped before the next run's first call, and every run as many
// processes on the same hosts — says on each finding about an earlier run's communicator which
// run it belongs to: how that run ended, not how the job did.
void NoteEarlierRuns(const TraceModel& m, std::vector<Finding>* findings);

}  // namespace ncclrr::analysis
