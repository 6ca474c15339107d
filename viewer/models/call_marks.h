#pragma once
// Which calls the analysis named, and how the timeline marks them. The viewer never decides what
// is wrong: every mark here comes from a Finding's involved calls (analysis::Check), except
// "in flight at end", which is what the record itself says (the call never returned).
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ncclrr/analysis/finding.h"

namespace ncclrr::viewer {

using analysis::CallRef;

namespace mark {
inline constexpr uint8_t kFinding = 1u << 0;   // named by a structural finding (mismatch, swap)
inline constexpr uint8_t kWrongSum = 1u << 1;  // wrong_sum, output_divergence: data check failed
inline constexpr uint8_t kRace = 1u << 2;      // buffer_race
inline constexpr uint8_t kHang = 1u << 3;      // missing_call: where ranks stopped agreeing
inline constexpr uint8_t kInFlight = 1u << 4;  // the call had not returned when the trace ended
inline constexpr uint8_t kAnyFinding = kFinding | kWrongSum | kRace | kHang;
}  // namespace mark

// The mark a finding of this kind puts on its calls.
uint8_t MarkOf(analysis::FindingKind kind);
// "mismatch", "wrong sum", "race", "hang", "in flight at end" for the strongest bit of `marks`.
std::string_view MarkName(uint8_t marks);

inline uint64_t CallKey(CallRef r) { return (uint64_t{r.file} << 32) | r.index; }
inline CallRef CallFromKey(uint64_t k) {
  return {static_cast<uint32_t>(k >> 32), static_cast<uint32_t>(k)};
}

class CallMarks {
 public:
  static CallMarks FromReport(const analysis::Report& report);

  uint8_t MarksOf(CallRef r) const;
  // Indices into Report::findings of the findings that name the call (empty when none).
  const std::vector<uint32_t>& FindingsOf(CallRef r) const;
  const std::unordered_map<uint64_t, uint8_t>& all() const { return marks_; }

 private:
  std::unordered_map<uint64_t, uint8_t> marks_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> findings_;
};

}  // namespace ncclrr::viewer
