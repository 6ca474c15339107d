#pragma once
// Timeline exports of a trace for ui.perfetto.dev, both with a process per (trace file, device)
// named after its rank, a track per stream, a slice per call on the common timeline, flows
// linking the calls NCCL paired (same communicator and seq) across ranks, and the findings of
// `check` as instant events on the ranks they name:
//   - ExportPerfetto: Perfetto's own protobuf trace (TracePackets of TrackDescriptors and
//     TrackEvents, names interned); about a third of the JSON's size.
//   - ExportChromeJson: Chrome trace JSON (also read by chrome://tracing).
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

#include "ncclrr/analysis/finding.h"
#include "ncclrr/analysis/model.h"
#include "ncclrr/base/status.h"

namespace ncclrr::analysis {

struct ExportOptions {
  bool flows = true;  // arrows across ranks per (comm, seq)
};

struct ExportStats {
  uint64_t events = 0;  // JSON events; protobuf TracePackets
  uint64_t flows = 0;
  uint64_t bytes = 0;
};

// `report` may be null (no findings).
Status ExportPerfetto(const TraceModel& model, const Report* report, const ExportOptions& o,
                      std::ostream& out, ExportStats* stats = nullptr);
Status ExportChromeJson(const TraceModel& model, const Report* report, const ExportOptions& o,
                        std::ostream& out, ExportStats* stats = nullptr);

// Runs `write` (one of the above, bound to its arguments) into a new file at `path`.
Status ExportToFile(const std::string& path, const std::function<Status(std::ostream&)>& write);

}  // namespace ncclrr::analysis
