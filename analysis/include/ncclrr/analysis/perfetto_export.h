#pragma once
// Chrome trace JSON (opens in ui.perfetto.dev and chrome://tracing): a process per rank-file
// (device), a track per stream, a slice per call on the common timeline, flow arrows linking
// the same (comm, seq) across ranks, and findings as instant events on the ranks they name.
#include <cstdint>
#include <ostream>
#include <string>

#include "ncclrr/analysis/finding.h"
#include "ncclrr/analysis/model.h"
#include "ncclrr/status.h"

namespace ncclrr::analysis {

struct PerfettoOptions {
  bool flows = true;  // arrows across ranks per (comm, seq)
};

struct ExportStats {
  uint64_t events = 0;
  uint64_t flows = 0;
  uint64_t bytes = 0;
};

// `report` may be null (no findings track).
Status ExportPerfetto(const TraceModel& model, const Report* report, const PerfettoOptions& o,
                      std::ostream& out, ExportStats* stats = nullptr);
Status ExportPerfettoFile(const TraceModel& model, const Report* report, const PerfettoOptions& o,
                          const std::string& path, ExportStats* stats = nullptr);

}  // namespace ncclrr::analysis
