#pragma once
// The sketch algorithm, shared word for word by the host implementation (host_sketch.cc) and the
// CUDA kernel (device/kernel_body.h): lanes, chunk partials, the canonical trees and the sampled
// indices. Everything that decides a rounding step lives here or in sketch_elements.h, so that
// both produce bit-identical results; docs/sketches.md states the algorithm in prose.
#include "sketch_elements.h"

// Same rules as sketch_elements.h: no allocation, host and device alike, every floating-point
// operation through Add/Mul.
namespace ncclrr::sketch::core {

template <typename T>
NCCLRR_HD T LaneSum(T a, T b) {
  if constexpr (std::is_same<T, float>::value) return AddF(a, b);
  if constexpr (std::is_same<T, double>::value) return AddD(a, b);
  return T(a + b);
}
// ---- Lane state and per-element work -------------------------------------------------------
template <class D>
using SumSqType = typename std::conditional<D::kKind == AccKind::kFloat32, float, double>::type;
// Σx² is kept per position for float types (V independent chains: the host overlaps them, and a
// single chain would be latency-bound) and per lane for integers (registers on the GPU).
template <class D>
inline constexpr int kSumSqSlots = D::kKind == AccKind::kInt ? 1 : D::V;

template <class D>
struct LaneState {
  typename D::Acc acc[D::V];        // one accumulator per position of the lane
  SumSqType<D> ss[kSumSqSlots<D>];  // Σx² per position (floats) or per lane (integers)
  uint32_t nan, posinf, neginf;
};
// Type of a lane's 16 projections: fp32 / fp64 like the accumulators, uint64 for integers.
template <class D>
using DotType = typename std::conditional<
    D::kKind == AccKind::kInt, uint64_t,
    typename std::conditional<D::kKind == AccKind::kFloat32, float, double>::type>::type;

template <class D>
NCCLRR_HD void LaneInit(LaneState<D>& s) {
  NCCLRR_UNROLL_V
  for (int v = 0; v < D::V; ++v) s.acc[v] = typename D::Acc(0);
  NCCLRR_UNROLL_V
  for (int v = 0; v < kSumSqSlots<D>; ++v) s.ss[v] = 0;
  s.nan = s.posinf = s.neginf = 0;
}

// A finite float element into position v: acc += ±x, Σx² += x·x (two roundings, never an FMA).
template <class D>
NCCLRR_HD void LaneAccumulate(LaneState<D>& s, int v, typename D::Acc x, uint32_t neg) {
  if constexpr (D::kKind == AccKind::kFloat32) {
    s.acc[v] = AddF(s.acc[v], FlipF(x, neg));
    s.ss[v] = AddF(s.ss[v], MulF(x, x));
  } else {
    s.acc[v] = AddD(s.acc[v], FlipD(x, neg));
    s.ss[v] = AddD(s.ss[v], MulD(x, x));
  }
}

// One row of a lane: elements v = 0..nv-1 (raw(v) gives element v), eps bit v in `neg`. The
// contract is the sequence each accumulator sees: rows in increasing order; for integers' single
// Σx² chain, v in increasing order within a row. A row of finite values takes a branch-free path
// (vectorizable on the host) that performs exactly the same operations.
template <class D, class RawAt>
NCCLRR_HD void LaneRow(LaneState<D>& s, int nv, uint32_t neg, RawAt raw) {
  using A = typename D::Acc;
  if constexpr (D::kKind == AccKind::kInt) {
    NCCLRR_UNROLL_V
    for (int v = 0; v < nv; ++v) {
      uint32_t cls;
      const A x = D::Decode(raw(v), &cls);
      s.acc[v] = ((neg >> v) & 1u) ? A(s.acc[v] - x) : A(s.acc[v] + x);
      const double xd = D::ToDouble(raw(v));
      s.ss[0] = AddD(s.ss[0], MulD(xd, xd));
    }
    return;
  } else {
    A x[D::V];
    uint32_t special = 0;
    NCCLRR_UNROLL_V
    for (int v = 0; v < D::V; ++v) {
      uint32_t cls = kFinite;
      x[v] = v < nv ? D::Decode(raw(v), &cls) : A(0);
      special |= cls;
    }
    if (nv == D::V && special == kFinite) {
      NCCLRR_UNROLL_V
      for (int v = 0; v < D::V; ++v) LaneAccumulate(s, v, x[v], (neg >> v) & 1u);
      return;
    }
    NCCLRR_UNROLL_V
    for (int v = 0; v < nv; ++v) {
      uint32_t cls;
      D::Decode(raw(v), &cls);
      if (cls != kFinite) {  // counted, and left out of the dots and Σx²
        s.nan += cls == kNaN;
        s.posinf += cls == kPosInf;
        s.neginf += cls == kNegInf;
        continue;
      }
      LaneAccumulate(s, v, x[v], (neg >> v) & 1u);
    }
  }
}

// The lane's Σx²: its per-position sums added in increasing v (one value for integers).
template <class D>
NCCLRR_HD SumSqType<D> LaneSumSq(const LaneState<D>& s) {
  SumSqType<D> total = s.ss[0];
  NCCLRR_UNROLL_V
  for (int v = 1; v < kSumSqSlots<D>; ++v) total = LaneSum(total, s.ss[v]);
  return total;
}

// eta words of a lane's V positions; the class of a position is the same in every row and chunk
// of a block (rows are multiples of 128 elements), so this is computed once per block and lane.
template <class D>
NCCLRR_HD void LaneEta(uint64_t block_first, int lane, uint32_t* eta) {
  NCCLRR_UNROLL_V
  for (int v = 0; v < D::V; ++v)
    eta[v] = EtaWord(uint32_t((block_first + uint64_t(lane * D::V + v)) & (kClasses - 1)));
}

// The 16 projections of one lane: d_k = Σ_v ±acc[v] in increasing v.
template <class D>
NCCLRR_HD void LaneDots(const LaneState<D>& s, const uint32_t* eta, DotType<D>* dots) {
  using Out = DotType<D>;
  NCCLRR_UNROLL_V
  for (int k = 0; k < kDots; ++k) dots[k] = Out(0);
  NCCLRR_UNROLL_V
  for (int v = 0; v < D::V; ++v) {
    NCCLRR_UNROLL_V
    for (int k = 0; k < kDots; ++k) {
      const bool neg = (eta[v] >> k) & 1u;
      if constexpr (D::kKind == AccKind::kInt) {
        dots[k] = neg ? Out(dots[k] - Out(s.acc[v])) : Out(dots[k] + Out(s.acc[v]));
      } else if constexpr (D::kKind == AccKind::kFloat32) {
        dots[k] = AddF(dots[k], neg ? -s.acc[v] : s.acc[v]);
      } else {
        dots[k] = AddD(dots[k], neg ? -s.acc[v] : s.acc[v]);
      }
    }
  }
}

// Lane values are combined across the 32 lanes of a chunk by this tree (the GPU's shuffle-down
// butterfly as seen from lane 0): for off = 16, 8, 4, 2, 1: value[l] += value[l + off].
template <typename T>
NCCLRR_HD void LaneTree(T* values) {
  for (int off = kLanes / 2; off >= 1; off >>= 1)
    for (int l = 0; l < off; ++l) values[l] = LaneSum(values[l], values[l + off]);
}

// ---- Partials (per chunk, tile or block) ---------------------------------------------------
// Words 0..15: dots (doubles for float types, wrapping uint64 for integer types); 16: Σx² as a
// double; 17..19: NaN, +Inf, -Inf counts. Every combination is word by word, so that a tree can
// be evaluated by one thread per word.
inline constexpr int kWordSumsq = kDots;
inline constexpr int kWordNaN = kDots + 1;
inline constexpr int kWordPosInf = kDots + 2;
inline constexpr int kWordNegInf = kDots + 3;
inline constexpr int kPartialWords = kDots + 4;
struct Partial {
  uint64_t w[kPartialWords];
};
static_assert(sizeof(Partial) == 160, "Partial is shared with the device; keep it 160 bytes");

// a + b for word `word` (left operand first: every tree below combines left + right).
NCCLRR_HD uint64_t WordAdd(uint64_t a, uint64_t b, int word, bool int_dots) {
  if (word < kDots && !int_dots) return DToBits(AddD(BitsToD(a), BitsToD(b)));
  if (word == kWordSumsq) return DToBits(AddD(BitsToD(a), BitsToD(b)));
  return a + b;  // integer dots wrap; counts are exact
}
NCCLRR_HD void PartialZero(Partial& p) {
  for (int i = 0; i < kPartialWords; ++i) p.w[i] = 0;  // +0.0 and integer 0 alike
}
NCCLRR_HD void PartialAdd(Partial& a, const Partial& b, bool int_dots) {
  for (int i = 0; i < kPartialWords; ++i) a.w[i] = WordAdd(a.w[i], b.w[i], i, int_dots);
}

// A chunk's partial from lane 0's values after LaneTree.
template <class D>
NCCLRR_HD void ChunkPartial(const DotType<D>* dots, double ss, uint64_t nan, uint64_t posinf,
                            uint64_t neginf, Partial& p) {
  for (int k = 0; k < kDots; ++k) {
    if constexpr (D::kKind == AccKind::kInt)
      p.w[k] = uint64_t(dots[k]);
    else
      p.w[k] = DToBits(double(dots[k]));  // fp32 -> fp64 is exact
  }
  p.w[kWordSumsq] = DToBits(ss);
  p.w[kWordNaN] = nan;
  p.w[kWordPosInf] = posinf;
  p.w[kWordNegInf] = neginf;
}

// The canonical fp64 tree over n items: for s = 1, 2, 4, ...: item[i] += item[i + s] for i a
// multiple of 2s with i + s < n. The result is item[0]. Any power-of-two-aligned group of items
// reduces to its own subtree, which is what lets the GPU split the work into tiles.
NCCLRR_HD void StrideTree(Partial* items, uint64_t n, bool int_dots) {
  for (uint64_t s = 1; s < n; s <<= 1)
    for (uint64_t i = 0; i + s < n; i += 2 * s) PartialAdd(items[i], items[i + s], int_dots);
}

// Streaming form of StrideTree, one word at a time, for nodes arriving left to right that all
// cover one power-of-two number of leaves except possibly the last. Node k (0-based) goes on top
// of the stack, then the top two merge while the count k+1 has trailing zeros; Fold combines what
// is left right to left. The stack holds popcount(count) nodes, so every thread that owns a word
// derives the same shape from k alone. Equal to StrideTree over the leaves.
inline constexpr int kStackDepth = 40;
NCCLRR_HD void StackPushWord(uint64_t (*stack)[kPartialWords], uint64_t k, uint64_t value, int word,
                             bool int_dots) {
  int depth = Popcount32(uint32_t(k)) + Popcount32(uint32_t(k >> 32));
  stack[depth++][word] = value;
  for (uint64_t count = k + 1; (count & 1) == 0; count >>= 1, --depth)
    stack[depth - 2][word] =
        WordAdd(stack[depth - 2][word], stack[depth - 1][word], word, int_dots);
}
NCCLRR_HD uint64_t StackFoldWord(uint64_t (*stack)[kPartialWords], uint64_t pushed, int word,
                                 bool int_dots) {
  int depth = Popcount32(uint32_t(pushed)) + Popcount32(uint32_t(pushed >> 32));
  if (depth == 0) return 0;
  for (; depth > 1; --depth)
    stack[depth - 2][word] =
        WordAdd(stack[depth - 2][word], stack[depth - 1][word], word, int_dots);
  return stack[0][word];
}

// Stride tree over the first m (<= 8) items of a round, one word: levels 1, 2, 4.
NCCLRR_HD uint64_t RoundTreeWord(uint64_t (*items)[kPartialWords], int m, int word, bool int_dots) {
  for (int s = 1; s < m; s <<= 1)
    for (int i = 0; i + s < m; i += 2 * s)
      items[i][word] = WordAdd(items[i][word], items[i + s][word], word, int_dots);
  return items[0][word];
}

// ---- Sampled indices -----------------------------------------------------------------------
// min(n, m) block-local indices, a deterministic function of (n, m): stratified, one per stratum
// [j*n/m, (j+1)*n/m), jittered by a hash so that strided tensor layouts do not alias.
NCCLRR_HD uint32_t SampleCount(uint64_t n, uint32_t m) { return n < m ? uint32_t(n) : m; }
NCCLRR_HD uint64_t SampleIndex(uint64_t n, uint32_t m, uint32_t j) {
  if (n <= m) return j;
  const uint64_t lo = uint64_t(j) * (n / m) + (uint64_t(j) * (n % m)) / m;
  const uint64_t hi = uint64_t(j + 1) * (n / m) + (uint64_t(j + 1) * (n % m)) / m;
  return lo + Mix64(n * 0x2545F4914F6CDD1Dull ^ j) % (hi - lo);
}

}  // namespace ncclrr::sketch::core
