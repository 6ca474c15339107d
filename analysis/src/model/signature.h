#pragma once
// Call signatures compared across ranks: the shape (op, count, dtype, reduction, root) as a
// 64-bit hash, and helpers that walk two ranks' sequences position by position.
#include <cstdint>

#include "model/flat_map.h"
#include "ncclrr/analysis/model.h"

namespace ncclrr::analysis {

// Reduction op as it matters for pairing: dynamic PreMulSum handles differ per rank, so all of
// them compare equal (the scalar is a data question).
inline int32_t PairingOp(const CallRecord& c) {
  if (!Reduces(static_cast<Api>(c.api))) return -1;
  if ((c.flags & call_flags::kPreMulSum) || c.op >= kNumBuiltinOps) return 1000;
  return c.op;
}

// One hash per call: (api, dtype, pairing op, root) packed into one word, mixed with count.
inline uint64_t ShapeSignature(const CallRecord& c) {
  const Api api = CanonicalApi(static_cast<Api>(c.api));
  const uint64_t op = static_cast<uint64_t>(PairingOp(c) + 1) & 0x7ff;  // -1..1000 -> 11 bits
  const uint64_t root =
      IsRooted(api) ? static_cast<uint64_t>(static_cast<uint32_t>(c.root_peer) + 1) & 0x1fffffff
                    : 0;
  const uint64_t packed =
      static_cast<uint64_t>(api) | (uint64_t{c.dtype} << 16) | (op << 24) | (root << 35);
  return Mix64(packed, c.count);
}

// Calls `f(ia, ib)` for every seq present in both sequences (indices into collectives).
template <typename F>
void ForEachCommonSeq(const RankView& a, const RankView& b, F&& f) {
  size_t i = 0, j = 0;
  const auto& x = a.collectives;
  const auto& y = b.collectives;
  while (i < x.size() && j < y.size()) {
    if (x[i].seq < y[j].seq)
      ++i;
    else if (y[j].seq < x[i].seq)
      ++j;
    else
      f(i++, j++);
  }
}

}  // namespace ncclrr::analysis
