#pragma once
// Aligns one rank's per-communicator signature sequence to the reference rank's and explains
// each disagreement as the smallest edit: a reordering of a short run (order_swap), calls one
// side skipped or added (missing_call), or a single differing call (a per-position mismatch).
// NCCL pairs by position, so positions are compared as seqs; the alignment only decides what
// the user meant, to report the cause once instead of every mispaired position after it.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ncclrr::analysis {

// Signature 0 means "unknown here" (dropped record): it matches anything.
inline constexpr uint64_t kUnknownSignature = 0;

struct AlignParams {
  size_t reorder_window = 64;  // longest run a reordering may permute
  size_t resync = 8;           // calls that must agree after an edit for it to count
  size_t max_indel = 3;        // longest run of skipped or added calls considered
  // The sequences end where a hang stopped them (calls in flight at their ends): how many calls
  // each side issued then depends on where each one blocked, not on what it skipped.
  bool ends_in_hang = false;
  // Optional, index for index with the sequences: their shapes, and the rank's calls whose
  // tensor is too weakly known to tell apart from another of the same shape (fresh buffers).
  // Such a call counts as agreeing with a reference call of its shape in the calls that must
  // follow an edit (a step's fresh gradients would otherwise hide every skip), never at the
  // place of the edit itself.
  std::span<const uint64_t> ref_shape, seq_shape;
  std::span<const uint8_t> seq_weak;
};

struct AlignOp {
  // kBlockedSwap: the last call of both sides differs, and each side's call is what the other
  // side's own history says comes at the other's place: two calls issued in the opposite order,
  // with the job hung at the first of them (the second never reached NCCL).
  // kRankWentOn / kRefWentOn: a mismatch from which the sequences never agree again, after the
  // same calls on both sides: one side (the rank's, or the reference's) went on issuing what its
  // own earlier steps issue next, the other issued something else there (it left the loop, or
  // took a branch the first did not).
  enum Type { kReorder, kSkip, kExtra, kMismatch, kBlockedSwap, kRankWentOn, kRefWentOn } type;
  size_t pos = 0;      // index into `seq` where it starts
  size_t ref_pos = 0;  // index into `ref` where it starts
  size_t len = 1;      // calls on the rank's side (kSkip: 0)
  size_t ref_len = 1;  // calls on the reference side (kExtra: 0)
  // A kRankWentOn/kRefWentOn whose stopping side issued its every-few-steps block a step early
  // (it may have skipped a step instead): `usual` > 0 steps between the blocks before, `issued`
  // since the last one (at `landmark`), `at` the parting, `skip_pos` the first step after the
  // block. A kSkip: `skip_pos` the earliest start at which the same calls could be the skipped
  // ones (a whole step of a loop repeats).
  size_t at = 0, landmark = 0, issued = 0, usual = 0, skip_pos = 0;
  bool ref_skipped = false;
};

std::vector<AlignOp> AlignSequences(std::span<const uint64_t> ref, std::span<const uint64_t> seq,
                                    const AlignParams& params);

}  // namespace ncclrr::analysis
