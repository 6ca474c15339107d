#pragma once
// ncclrr_replay: re-executes a recorded trace (DESIGN.md "Replay"). The replayer rebuilds the
// communicators, gives every recorded (process, device) its own thread, and issues each rank's
// calls in the chosen order on the chosen backend; every call's output is checked against an
// fp64 host reference of what the logical order should combine.
//
// NCCL is never linked: the host NCCL and the real one (with the CUDA runtime) are loaded with
// dlopen when a replay needs them, so this library builds and runs anywhere.
#include "ncclrr/analysis/model.h"
#include "ncclrr/replay/options.h"
#include "ncclrr/replay/report.h"
#include "ncclrr/status.h"

namespace ncclrr::replay {

// Replays every ordering of `options.orders` in turn. A failing ordering (wrong results, a hang)
// is a result, not an error; errors are traces that cannot be replayed (a rank without a file,
// more ranks than GPUs on the nccl backend, no captured data for --data captured) and backends
// that cannot be loaded.
StatusOr<ReplayReport> Replay(const analysis::TraceModel& model, const ReplayOptions& options);

}  // namespace ncclrr::replay
