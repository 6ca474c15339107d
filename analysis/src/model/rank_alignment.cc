#include "model/rank_alignment.h"

#include "model/sequence_align.h"

namespace ncclrr::analysis {

RankAlignment AlignRuns(std::span<const uint64_t> a, std::span<const uint64_t> b,
                        size_t reorder_window) {
  AlignParams params;
  params.reorder_window = reorder_window;
  RankAlignment out;
  size_t q = 0, p = 0;  // next call of A, of B
  auto agree_until = [&](size_t a_end) {
    for (; q < a_end && q < a.size() && p < b.size(); ++q, ++p) out.pairs.push_back({q, p, true});
  };
  for (const AlignOp& op : AlignSequences(a, b, params)) {
    agree_until(op.ref_pos);
    switch (op.type) {
      case AlignOp::kReorder: {
        // Each call of A's run is paired with B's first unpaired call of the same signature.
        std::vector<bool> used(op.len, false);
        for (size_t k = 0; k < op.ref_len; ++k)
          for (size_t j = 0; j < op.len; ++j)
            if (!used[j] && b[p + j] == a[q + k]) {
              used[j] = true;
              out.pairs.push_back({q + k, p + j, true});
              break;
            }
        out.edits.push_back({RankEdit::kReorder, q, op.ref_len, p, op.len});
        q += op.ref_len;
        p += op.len;
        break;
      }
      case AlignOp::kSkip:
        out.edits.push_back({RankEdit::kMissing, q, op.ref_len, p, 0});
        q += op.ref_len;
        break;
      case AlignOp::kExtra:
        out.edits.push_back({RankEdit::kExtra, q, 0, p, op.len});
        p += op.len;
        break;
      case AlignOp::kMismatch:
      case AlignOp::kBlockedSwap:
      case AlignOp::kRankWentOn:
      case AlignOp::kRefWentOn:
        out.edits.push_back({RankEdit::kArguments, q, 1, p, 1});
        out.pairs.push_back({q, p, false});
        ++q;
        ++p;
        break;
    }
  }
  agree_until(a.size());
  if (q < a.size()) out.edits.push_back({RankEdit::kMissing, q, a.size() - q, p, 0});
  if (p < b.size()) out.edits.push_back({RankEdit::kExtra, q, 0, p, b.size() - p});
  return out;
}

}  // namespace ncclrr::analysis
