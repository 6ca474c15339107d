#include "ncclrr/analysis/finding.h"

namespace ncclrr::analysis {
namespace {

// clang-format off
constexpr std::string_view kKindNames[kNumFindingKinds] = {
    "op_mismatch",  "count_mismatch", "dtype_mismatch",         "redop_mismatch",  "root_mismatch",
    "p2p_mismatch", "order_swap",     "cross_comm_order",       "missing_call",    "wrong_sum",
    "buffer_race",  "suspected_swap", "graph_capture_mismatch", "lifecycle_error", "nccl_error",
    "output_divergence"};
// clang-format on

}  // namespace

std::string_view FindingKindName(FindingKind k) {
  const auto i = static_cast<size_t>(k);
  return i < kNumFindingKinds ? kKindNames[i] : "unknown";
}

bool FindingKindFromName(std::string_view name, FindingKind* out) {
  for (int i = 0; i < kNumFindingKinds; ++i)
    if (kKindNames[i] == name) {
      *out = static_cast<FindingKind>(i);
      return true;
    }
  return false;
}

std::string_view NoteKindName(NoteKind k) {
  switch (k) {
    case NoteKind::kTraceIncomplete:
      return "trace_incomplete";
    case NoteKind::kRecordsDropped:
      return "records_dropped";
    case NoteKind::kStragglers:
      return "stragglers";
    case NoteKind::kInferred:
      return "inferred";
    case NoteKind::kDataUnchecked:
      return "data_unchecked";
  }
  return "unknown";
}

bool IsIncompleteness(NoteKind k) {
  return k == NoteKind::kTraceIncomplete || k == NoteKind::kRecordsDropped;
}

int Report::ExitCode(bool strict) const {
  if (!usable) return 2;
  if (!findings.empty()) return 1;
  if (!strict) return 0;
  for (const Note& n : notes)
    if (IsIncompleteness(n.kind)) return 1;
  return 0;
}

}  // namespace ncclrr::analysis
