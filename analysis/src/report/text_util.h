#pragma once
// Small text helpers shared by checkers and formatters.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ncclrr/analysis/model.h"

namespace ncclrr::analysis {

std::string Thousands(uint64_t v);                    // 3211 -> "3,211"
std::string RankList(const std::vector<int>& ranks);  // "rank 1", "ranks 0, 2 and 5", "ranks 0-63"
std::string CommLabel(const CommModel& c);            // comm "name" (0x...) or comm 0x...
std::string CommShortName(const CommModel& c);        // "name" or 0x...
std::string FileLabel(const TraceModel& m, size_t f,
                      bool stable);  // "process file X" / "rank 1's file"
std::string Seconds(int64_t ns);     // "1.234 s", "12.5 ms", "830 us"
std::string Plural(uint64_t n, const std::string& one, const std::string& many);
std::string Capitalized(std::string s);  // "rank 1 ..." -> "Rank 1 ..."
// Wraps a paragraph at `width` columns, each line prefixed with `indent`.
std::string Wrap(const std::string& text, size_t width, const std::string& indent);

}  // namespace ncclrr::analysis

namespace ncclrr::analysis {
std::string CompactRanks(const std::vector<int>& ranks);  // "0", "0,2-5" (table cells)
std::string SeqRange(uint64_t first, size_t n);           // "41", "41-42"
// Two call-site stacks ("inner<caller<...") past the frames they share: the first frame where
// each differs ("" past a stack's end).
std::pair<std::string, std::string> PartingFrames(const std::string& a, const std::string& b);
}  // namespace ncclrr::analysis
