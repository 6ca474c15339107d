#pragma once
// Text (compiler-diagnostic style) and JSON renderings of a Report. JSON follows docs/design.md:
// {"findings":[...],"notes":[...],"summary":{...}} with `comm` as "0x%016x" and `seq` null
// where it does not apply. `stable` leaves out addresses, pids, file paths and times.
#include <string>

#include "ncclrr/analysis/finding.h"
#include "ncclrr/analysis/model.h"

namespace ncclrr::analysis {

struct FormatOptions {
  bool stable = false;
  bool strict = false;  // notes count as findings (stated in the summary line)
};

std::string FormatText(const Report& report, const TraceModel* model, const FormatOptions& o);
std::string FormatJson(const Report& report, const TraceModel* model, const FormatOptions& o);

}  // namespace ncclrr::analysis
