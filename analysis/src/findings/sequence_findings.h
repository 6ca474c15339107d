#pragma once
// Turns the sequence alignment's edits into findings with per-rank tables and messages.
#include <string>
#include <vector>

#include "findings/thread_interleaving.h"
#include "model/flat_map.h"
#include "model/sequence_align.h"
#include "ncclrr/analysis/check.h"

namespace ncclrr::analysis {

struct SequenceContext {
  CheckContext& ctx;
  size_t ci;  // comm index
  int ref;    // reference rank
  // The ranks' calls by thread, read once per rank that a finding names.
  mutable ThreadCache threads{};

  // Full signature of a slot: shape and logical identity (never kUnknownSignature).
  uint64_t Sig(int rank, size_t slot) const {
    const CommIdentity& id = ctx.identity().comm(ci);
    return Mix64(id.shapes[rank][slot], id.ids[rank][slot]) | 1;
  }
};

// The least logical-identity confidence of a same-shape mismatch at one position (no reordering)
// that is reported under buffer identity.
inline constexpr float kMismatchIdentityFloor = 0.75f;
// Aligned calls below which a rank's buffer agreement with the reference says nothing.
inline constexpr uint32_t kAgreementSample = 16;

// One edit, merged over the ranks that made the same one at the same place.
struct RawEvent {
  AlignOp op;
  uint64_t seq = 0;                        // first seq on the deviating ranks' side
  uint64_t ref_seq = 0;                    // first seq on the reference side
  std::vector<uint32_t> slots, ref_slots;  // slot indices (first rank's side, reference side)
  std::vector<int> ranks;
  std::vector<std::vector<uint32_t>> rank_slots;  // per entry of `ranks`
  std::string pattern;
};

std::string EventPattern(const SequenceContext& sc, int rank, const RawEvent& e);
void EmitFinding(SequenceContext& sc, const RawEvent& e, FindingSink& sink);

}  // namespace ncclrr::analysis
