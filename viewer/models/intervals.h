#pragma once
// Intervals sorted by begin with a prefix maximum of their ends, and the O(pixels) run
// computation the timeline paints from (Qt Creator's tracing library does the same: range query,
// merge what is narrower than a pixel). No Qt.
//
// A frame never walks every call in view: the first visible interval is a binary search on the
// prefix maximum, and after a pixel column whose intervals are all narrower than a pixel, the
// next column is found with another binary search. A frame costs O(pixels * log n) whatever the
// number of calls.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "models/time_axis.h"

namespace ncclrr::viewer {

struct Intervals {
  std::vector<int64_t> begin;    // sorted ascending
  std::vector<int64_t> end;      // >= begin
  std::vector<int64_t> max_end;  // max(end[0..i])

  size_t size() const { return begin.size(); }
  void Add(int64_t b, int64_t e) {
    begin.push_back(b);
    end.push_back(e);
  }
  // Sorts by begin (stable: equal begins keep insertion order) and fills max_end. `perm`, when
  // given, receives the permutation applied (new position -> old position).
  void Finish(std::vector<uint32_t>* perm = nullptr);
  // First position whose interval may reach `t` (every earlier one ends before t).
  size_t FirstReaching(int64_t t) const;
  // First position with begin >= t, searching from `from`.
  size_t FirstBeginningAt(int64_t t, size_t from = 0) const;
};

// What one run of pixels shows: either one interval at least a pixel wide, or the intervals that
// start in one pixel column merged (coalesced with neighbouring merged runs of the same look).
struct PixelRun {
  double x0 = 0, x1 = 0;  // pixels, x1 >= x0 + 1 for merged runs
  uint32_t first = 0;     // positions [first, first + count) of the intervals it shows
  uint32_t count = 0;
  uint8_t style = 0;
  uint8_t flags = 0;  // OR of the flags of the intervals it shows
  bool merged = false;
};

// Optional per-interval look for ComputeRuns: style per position, and the few flagged positions.
struct RunLook {
  const std::vector<uint8_t>* style = nullptr;      // parallel to the intervals, or null (0)
  const std::vector<uint32_t>* flagged = nullptr;   // ascending positions with flags
  const std::vector<uint8_t>* flag_bits = nullptr;  // parallel to `flagged`
};

// Appends to `out` the runs of `iv` visible on `axis` (x in [-1, width + 1]).
void ComputeRuns(const Intervals& iv, const RunLook& look, const TimeAxis& axis,
                 std::vector<PixelRun>* out);

// OR of the flags of positions [from, to).
uint8_t FlagsIn(const RunLook& look, size_t from, size_t to);

}  // namespace ncclrr::viewer
