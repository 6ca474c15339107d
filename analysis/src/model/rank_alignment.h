#pragma once
// One rank's calls in two runs, aligned: AlignSequences (the cross-rank alignment of `check`)
// explains each disagreement of the two signature sequences as the smallest edit, and this turns
// its edits into pairs of calls (what run B issued for each call of run A) and the edits
// themselves, including the tail one run issued and the other did not.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ncclrr::analysis {

struct RankEdit {
  enum Type { kReorder, kMissing, kExtra, kArguments } type;
  size_t a = 0, a_len = 0;  // indices into run A's sequence
  size_t b = 0, b_len = 0;  // indices into run B's sequence
};

struct CallPair {
  size_t a = 0, b = 0;
  bool same_signature = true;  // false: an `arguments` edit paired them
};

struct RankAlignment {
  std::vector<CallPair> pairs;  // in A's order
  std::vector<RankEdit> edits;  // in A's order
};

RankAlignment AlignRuns(std::span<const uint64_t> a, std::span<const uint64_t> b,
                        size_t reorder_window);

}  // namespace ncclrr::analysis
