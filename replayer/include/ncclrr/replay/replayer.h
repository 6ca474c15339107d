#pragma once
// ncclrr_replay: re-executes a recorded trace (docs/design.md "Replay"). The replayer rebuilds the
// communicators, gives every recorded (process, device) its own thread, and issues each rank's
// calls in the chosen order on the chosen backend; every call's output is checked against an
// fp64 host reference of what the logical order should combine.
//
// One process per rank instead (--mpi under mpirun; --processes, or more ranks than GPUs on the
// nccl backend: children of this process, several per GPU when needed) gives the same report.
//
// NCCL is never linked: the host NCCL and the real one (with the CUDA runtime) are loaded with
// dlopen when a replay needs them, so this library builds and runs anywhere.
#include "ncclrr/analysis/model.h"
#include "ncclrr/base/status.h"
#include "ncclrr/replay/options.h"
#include "ncclrr/replay/report.h"

namespace ncclrr::replay {

// Replays every ordering of `options.orders` in turn. A failing ordering (wrong results, a hang)
// is a result, not an error; errors are traces that cannot be replayed (a rank without a file,
// buffers that do not fit ranks sharing a GPU, no captured data for --data captured) and
// backends that cannot be loaded. In a child of a one-process-per-rank replay it replays that
// child's rank and returns a `secondary` report.
StatusOr<ReplayReport> Replay(const analysis::TraceModel& model, const ReplayOptions& options);

// Whether this process is a child of a one-process-per-rank replay (it then prints nothing but
// errors: the parent writes the report).
bool IsReplayChild();

}  // namespace ncclrr::replay
