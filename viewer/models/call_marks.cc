#include "models/call_marks.h"

namespace ncclrr::viewer {

uint8_t MarkOf(analysis::FindingKind kind) {
  using analysis::FindingKind;
  switch (kind) {
    case FindingKind::kWrongSum:
    case FindingKind::kOutputDivergence:
      return mark::kWrongSum;
    case FindingKind::kBufferRace:
      return mark::kRace;
    case FindingKind::kMissingCall:
      return mark::kHang;
    default:
      return mark::kFinding;
  }
}

std::string_view MarkName(uint8_t marks) {
  if (marks & mark::kWrongSum) return "wrong sum";
  if (marks & mark::kRace) return "race";
  if (marks & mark::kHang) return "hang";
  if (marks & mark::kFinding) return "mismatch";
  if (marks & mark::kInFlight) return "in flight at end";
  return "";
}

CallMarks CallMarks::FromReport(const analysis::Report& report) {
  CallMarks m;
  for (uint32_t i = 0; i < report.findings.size(); ++i) {
    const analysis::Finding& f = report.findings[i];
    for (const analysis::InvolvedCall& c : f.calls) {
      const uint64_t k = CallKey(c.call);
      m.marks_[k] |= MarkOf(f.kind);
      auto& list = m.findings_[k];
      if (list.empty() || list.back() != i) list.push_back(i);
    }
  }
  return m;
}

uint8_t CallMarks::MarksOf(CallRef r) const {
  auto it = marks_.find(CallKey(r));
  return it == marks_.end() ? 0 : it->second;
}

const std::vector<uint32_t>& CallMarks::FindingsOf(CallRef r) const {
  static const std::vector<uint32_t> kNone;
  auto it = findings_.find(CallKey(r));
  return it == findings_.end() ? kNone : it->second;
}

}  // namespace ncclrr::viewer
