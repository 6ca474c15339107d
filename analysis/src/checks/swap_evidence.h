#pragma once
// Data evidence for a same-shape reordering (suspected_swap): the 256 sampled values of each
// send buffer sit at the same indices on every rank, so their cosine estimates how alike two
// buffers are. Gradients of one tensor correlate across data-parallel ranks; different tensors
// do not. For every position the deviating rank moved, its data is compared with a peer's at
// the same position and at the position where the peer issued the same tensor
// (sketch::AssessSwap): "rank 1's seq 12 looks like rank 0's seq 13 (0.91) rather than its
// seq 12 (0.03)".
#include <string>
#include <vector>

#include "findings/sequence_findings.h"

namespace ncclrr::analysis {

struct DataSwapVerdict {
  enum Kind {
    kNoData,         // no usable sketches: the metadata suspicion stands alone
    kConfirmed,      // a moved position correlates with the peer's other position (≥ 99 %)
    kUninformative,  // the ranks' data do not correlate at all: the sketches cannot tell
    kWeak,           // the data correlate but point neither way clearly: confidence Φ(z)
    kContradicted,   // every moved position looks like the peer's same position: no swap
  };
  Kind kind = kNoData;
  double confidence = 0;  // Φ(z) of the most swap-like position
  std::string sentence;   // the comparison, for the message
};

// The first (lowest global index) send block sketched before the call at `seq` of `r`, or null.
const SketchData* SendSketch(const TraceModel& m, const RankView& r, uint64_t seq);

// A cosine as findings print it ("0.91").
std::string Cos(double c);

// `peers`: ranks that issued what the reference issued (the reference first).
DataSwapVerdict AssessSwapFromSketches(const SequenceContext& sc, const RawEvent& e,
                                       const std::vector<int>& peers);

}  // namespace ncclrr::analysis
