#pragma once
// output_divergence (docs/check.md): NCCL gives every rank of an AllReduce, a Broadcast or an
// AllGather the same bytes (each element is reduced or copied once, then forwarded), so the
// recv sketches taken after such a call must be equal bit for bit on every rank: same data, same
// global indices, same arithmetic. ReduceScatter and Reduce outputs are per rank; the identity
// check (wrong_sum) covers them. A rank whose output differs from the others' got different
// bytes: a faulty GPU, link or memory, or something that wrote its output buffer while NCCL or
// the after-call sketch was still at it.
#include <cstdint>
#include <optional>
#include <vector>

#include "model/call_sketches.h"
#include "ncclrr/sketch/compare.h"

namespace ncclrr::analysis {

struct OutputDivergence {
  // The ranks whose output differs from the reference output: the majority's, or the one output
  // the identity check proves right when it proves every other wrong (this settles a tie).
  // Without a reference (a tie the identity cannot settle), every rank.
  std::vector<int> ranks;
  std::vector<int> reference;  // ranks holding the reference output; empty on an open tie
  bool by_identity = false;    // the reference is the identity's, not (only) the majority's
  int outputs = 0;             // distinct outputs among the ranks
  // The first block where ranks[0] and `other` (a reference rank, or on an open tie a rank with
  // another output) differ, and how.
  int rank = -1, other = -1;
  uint64_t first = 0, count = 0;  // the block's elements in the output buffer
  uint8_t dtype = 0;
  sketch::SketchDifference diff;
  std::optional<uint64_t> element;  // the first sampled element that differs, and its values
  double value = 0, other_value = 0;
};

// AllReduce, Broadcast, AllGather.
bool OutputsIdentical(Api api);

// What the identity check proved about one rank's output: from its sketches (verdict kOk, or a
// wrong_sum verdict) or, for a call verified from captured buffers, exactly.
enum class OutputProof : uint8_t { kNone, kRight, kWrong };

// `sketches[i]`, `ranks[i]` and `proof[i]` belong to the same rank; every rank of the
// communicator is there. nullopt when the outputs are equal or cannot be compared: some rank has
// no recv sketch, or not the same blocks as the others (a partial or dropped sketch says nothing
// about the data).
std::optional<OutputDivergence> CompareOutputs(Api api, const std::vector<CallSketches>& sketches,
                                               const std::vector<int>& ranks,
                                               const std::vector<OutputProof>& proof);

}  // namespace ncclrr::analysis
