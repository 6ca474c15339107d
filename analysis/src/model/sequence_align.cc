#include "model/sequence_align.h"

#include <algorithm>

namespace ncclrr::analysis {
namespace {

bool Same(uint64_t a, uint64_t b) {
  return a == b || a == kUnknownSignature || b == kUnknownSignature;
}

// Do seq[p] and ref[q] agree, or differ only by a weakly known tensor of the same shape?
bool LooselySame(std::span<const uint64_t> ref, size_t q, std::span<const uint64_t> seq, size_t p,
                 const AlignParams& a) {
  if (Same(seq[p], ref[q])) return true;
  return p < a.seq_weak.size() && a.seq_weak[p] && p < a.seq_shape.size() &&
         q < a.ref_shape.size() && a.seq_shape[p] == a.ref_shape[q];
}

// How many calls seq[p..) and ref[q..) agree for, up to `cap`; reaching the end of either
// counts as agreeing up to the cap (nothing contradicts).
size_t AgreeRun(std::span<const uint64_t> ref, size_t q, std::span<const uint64_t> seq, size_t p,
                size_t cap, const AlignParams& a) {
  size_t k = 0;
  for (; k < cap && p + k < seq.size() && q + k < ref.size(); ++k)
    if (!LooselySame(ref, q + k, seq, p + k, a)) return k;
  return cap;
}

// Smallest w >= 2 such that seq[p, p+w) is a permutation of ref[q, q+w) and the next call
// agrees again; 0 when none within the window. `run` gets the agreement that follows.
size_t ReorderLength(std::span<const uint64_t> ref, size_t q, std::span<const uint64_t> seq,
                     size_t p, const AlignParams& a, size_t* run) {
  // Tiny multiset difference: (signature, count) pairs, linear scans (window is small).
  std::vector<std::pair<uint64_t, int>> diff;
  size_t nonzero = 0;
  auto bump = [&](uint64_t s, int d) {
    auto it = std::find_if(diff.begin(), diff.end(), [&](const auto& e) { return e.first == s; });
    if (it == diff.end()) {
      diff.push_back({s, d});
      ++nonzero;
      return;
    }
    const bool was = it->second != 0;
    it->second += d;
    if (was && it->second == 0) --nonzero;
    if (!was && it->second != 0) ++nonzero;
  };
  for (size_t w = 1; w <= a.reorder_window && p + w <= seq.size() && q + w <= ref.size(); ++w) {
    if (seq[p + w - 1] == kUnknownSignature || ref[q + w - 1] == kUnknownSignature) return 0;
    bump(seq[p + w - 1], +1);
    bump(ref[q + w - 1], -1);
    if (w < 2 || nonzero != 0) continue;
    *run = AgreeRun(ref, q + w, seq, p + w, a.resync, a);
    if (*run >= 1) return w;
  }
  return 0;
}

}  // namespace

std::vector<AlignOp> AlignSequences(std::span<const uint64_t> ref, std::span<const uint64_t> seq,
                                    const AlignParams& a) {
  std::vector<AlignOp> ops;
  size_t p = 0, q = 0;
  while (p < seq.size() && q < ref.size()) {
    if (Same(seq[p], ref[q])) {
      ++p;
      ++q;
      continue;
    }
    // A skip or an extra call only counts when what follows agrees for `resync` calls and at
    // least one call follows on both sides (at the very end it is missing_call's business).
    // Remaining lengths must differ by at least the edit: a rank that skipped k calls issued k
    // fewer in total (or stopped even earlier) — unless a hang cut both sides where they blocked.
    const size_t rem_seq = seq.size() - p, rem_ref = ref.size() - q;
    // A call that may be the reference's own (same shape, its tensor weakly known) proves no
    // edit: in a run of such calls every shift agrees loosely. Only exact agreement counts then.
    AlignParams exact = a;
    exact.seq_weak = {};
    const AlignParams& resync = LooselySame(ref, q, seq, p, a) ? exact : a;
    AlignOp indel{AlignOp::kMismatch, p, q, 1, 1};
    size_t indel_run = 0;
    for (size_t k = 1; k <= a.max_indel && indel.type == AlignOp::kMismatch; ++k) {
      if ((a.ends_in_hang || rem_ref >= rem_seq + k) && rem_seq > 0 && rem_ref > k &&
          (indel_run = AgreeRun(ref, q + k, seq, p, a.resync, resync)) == a.resync)
        indel = {AlignOp::kSkip, p, q, 0, k};
      else if ((a.ends_in_hang || rem_seq >= rem_ref + k) && rem_ref > 0 && rem_seq > k &&
               (indel_run = AgreeRun(ref, q, seq, p + k, a.resync, resync)) == a.resync)
        indel = {AlignOp::kExtra, p, q, k, 0};
    }
    // A reordering wins unless an indel explains more of what follows (a call skipped in a
    // periodic sequence also looks like a rotation of the next period).
    size_t run = 0;
    const size_t w = ReorderLength(ref, q, seq, p, resync, &run);
    // On equal evidence the smaller edit wins.
    const size_t indel_len = std::max(indel.len, indel.ref_len);
    if (w && (indel.type == AlignOp::kMismatch || run > indel_run ||
              (run == indel_run && w <= indel_len))) {
      ops.push_back({AlignOp::kReorder, p, q, w, w});
      p += w;
      q += w;
      continue;
    }
    if (indel.type == AlignOp::kSkip) {
      ops.push_back(indel);
      q += indel.ref_len;
      continue;
    }
    if (indel.type == AlignOp::kExtra) {
      ops.push_back(indel);
      p += indel.len;
      continue;
    }
    ops.push_back({AlignOp::kMismatch, p, q, 1, 1});
    ++p;
    ++q;
  }
  return ops;
}

}  // namespace ncclrr::analysis
