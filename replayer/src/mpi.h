#pragma once
// --mpi: one process per rank under Open MPI (libmpi loaded at run time). Each process replays
// the actor whose index equals its MPI rank on its local GPU; communicator ids travel by
// MPI_Bcast and per-call outcomes are gathered on MPI rank 0, which builds the report.
#include "ncclrr/analysis/model.h"
#include "ncclrr/replay/options.h"
#include "ncclrr/replay/report.h"

namespace ncclrr::replay {

StatusOr<ReplayReport> ReplayUnderMpi(const analysis::TraceModel& model,
                                      const ReplayOptions& options);

}  // namespace ncclrr::replay
