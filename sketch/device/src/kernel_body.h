#pragma once
// The body of the sketch kernel, written once against an execution policy X so that the same
// source runs as CUDA (sketch_kernel.cu, X = DeviceExec) and on the host emulator that the CI
// tests use (tests/sketch/kernel_emulator.cc, X = one OS thread per GPU thread). X provides:
//   int tid(); uint32_t cta(); void sync();            // __syncthreads
//   void sync_warp();                                  // __syncwarp
//   T shfl_down(T v, int offset);                      // within the warp, all 32 lanes
//   uint32_t atomic_add(uint32_t* p, uint32_t v);      // device-scope atomic
//   void fence(); void fence_system();                 // __threadfence(_system)
//   uint64_t load_cg(const uint64_t* p);               // load that bypasses L1
//
// One CTA (8 warps) handles one tile: T chunks of one block (T a power of two >= 8). Chunks are
// taken 8 per round, one per warp; each warp computes a chunk's partial exactly as
// host_sketch.cc does (sketch_core.h), the round is reduced by the stride tree's first three
// levels and pushed onto a per-word TreeStack, and the tile's node goes to scratch. The last CTA
// to finish (arrival counter) runs the remaining stride-tree levels over the tiles of each block,
// gathers the samples and publishes the results into the pinned slot.
#include "kernel_abi.h"
#include "sketch_core.h"

#if defined(__CUDACC__)
#define NCCLRR_KD __device__ __forceinline__
#define NCCLRR_UNROLL _Pragma("unroll")
#define NCCLRR_NO_UNROLL _Pragma("unroll 1")
#else
#define NCCLRR_KD inline
#define NCCLRR_UNROLL
#define NCCLRR_NO_UNROLL
#endif

namespace ncclrr::sketch::kbody {

using core::kPartialWords;
using core::kStackDepth;
using kabi::Job;
using kabi::kWarpsPerCta;

struct CtaShared {
  uint32_t eta[core::kLanes][16];  // eta words of each lane's positions (same for every warp)
  uint64_t eps[kWarpsPerCta][core::kChunkEpsWords];  // each warp's chunk hash words
  uint64_t part[kWarpsPerCta][kPartialWords];        // chunk partials of the current round
  uint64_t main_stack[kStackDepth][kPartialWords];
  uint64_t race_stack[kStackDepth][kPartialWords];
  uint64_t generation;
  uint32_t is_last;
};

// One lane's elements of one row, kept packed in 32-bit words (16 bytes; 32 for 8-byte types)
// so that a batch of rows costs few registers; ExtractRaw unpacks element v (little endian).
template <class D>
inline constexpr int kRowWords = int(sizeof(typename D::Raw) * D::V / 4);

template <class D>
NCCLRR_KD void LoadRowWords(const typename D::Raw* p, bool vector_ok, uint32_t* w) {
#if defined(__CUDA_ARCH__)
  if (vector_ok) {
    NCCLRR_UNROLL
    for (int i = 0; i < kRowWords<D> / 4; ++i) {
      // Streamed: every byte is read once (evict-first keeps L2 for the prefetched rows).
      const uint4 v = __ldcs(reinterpret_cast<const uint4*>(p) + i);
      w[4 * i] = v.x;
      w[4 * i + 1] = v.y;
      w[4 * i + 2] = v.z;
      w[4 * i + 3] = v.w;
    }
    return;
  }
#endif
  (void)vector_ok;
  memcpy(w, p, sizeof(uint32_t) * kRowWords<D>);
}

// The first nv elements of a row (the rest zero): the lane's last row of a short chunk. Element
// by element with constant word indices, so that the row stays in registers.
template <class D>
NCCLRR_KD void LoadRowPartial(const typename D::Raw* p, int nv, bool vector_ok, uint32_t* w) {
  using Raw = typename D::Raw;
  if (nv == D::V) return LoadRowWords<D>(p, vector_ok, w);
  NCCLRR_UNROLL
  for (int i = 0; i < kRowWords<D>; ++i) w[i] = 0;
  NCCLRR_UNROLL
  for (int v = 0; v < D::V; ++v) {
    using Bits = typename std::make_unsigned<Raw>::type;  // int8 must not sign-extend
    const Bits e = v < nv ? Bits(p[v]) : Bits(0);
    if constexpr (sizeof(Raw) == 8) {
      w[2 * v] = uint32_t(e);
      w[2 * v + 1] = uint32_t(uint64_t(e) >> 32);
    } else {
      constexpr int kPer = int(4 / sizeof(Raw));
      w[v / kPer] |= uint32_t(e) << (8 * sizeof(Raw) * (v % kPer));
    }
  }
}

// Asks L2 for the line holding p; no register is written and nothing waits for it.
NCCLRR_KD void PrefetchL2(const void* p) {
#if defined(__CUDA_ARCH__)
  asm volatile("prefetch.global.L2 [%0];" : : "l"(p));
#else
  (void)p;
#endif
}

template <class D>
NCCLRR_KD typename D::Raw ExtractRaw(const uint32_t* w, int v) {
  using Raw = typename D::Raw;
  static_assert((D::V & (D::V - 1)) == 0, "V is a power of two");
  // v < V already; this says so to compilers that cannot see it (no code when v is known).
  v &= D::V - 1;
  if constexpr (sizeof(Raw) == 1) return Raw(w[v >> 2] >> ((v & 3) * 8));
  if constexpr (sizeof(Raw) == 2) return Raw(w[v >> 1] >> ((v & 1) * 16));
  if constexpr (sizeof(Raw) == 4) return Raw(w[v]);
  if constexpr (sizeof(Raw) == 8) return Raw(uint64_t(w[2 * v]) | (uint64_t(w[2 * v + 1]) << 32));
}

// Non-finite test of a whole row on its packed words. D::kSpecialBits is the contiguous run of
// bits just below an element's sign bit whose all-ones pattern marks NaN/Inf, so for each
// element (~raw & kSpecialBits) + kSpecialBits cannot carry out of the element and sets its sign
// bit exactly when some special bit is clear. A row is all finite iff the AND of these sums over
// its words has every element's sign bit set: 3 integer operations per word instead of a
// class per element. Rows that fail take LaneRow's per-element path.
template <class D, uint64_t kBits>
NCCLRR_KD constexpr uint32_t PerWord(int word) {
  using Raw = typename D::Raw;
  if constexpr (sizeof(Raw) == 8) return uint32_t(kBits >> (32 * (word & 1)));
  uint32_t m = 0;
  for (int i = 0; i < int(4 / sizeof(Raw)); ++i) m |= uint32_t(kBits) << (8 * sizeof(Raw) * i);
  return m;
}
template <class D>
NCCLRR_KD bool RowFinite(const uint32_t* w) {
  using Raw = typename D::Raw;
  constexpr uint64_t kSpecial = uint64_t(D::kSpecialBits);
  constexpr uint64_t kSign = uint64_t(1) << (8 * sizeof(Raw) - 1);
  static_assert(kSpecial + (kSpecial & (~kSpecial + 1)) == kSign,
                "the special bits must run up to the sign bit");
  uint32_t all = 0xffffffffu, top = 0;
  NCCLRR_UNROLL
  for (int i = 0; i < kRowWords<D>; ++i) {
    const uint32_t m = PerWord<D, kSpecial>(i);
    if (m != 0) all &= (~w[i] & m) + m;
    top |= PerWord<D, kSign>(i);
  }
  return (all & top) == top;
}

// A row that is short or holds NaN/Inf: core::LaneRow element by element. Inlined (a call would
// put the lane state in local memory for the whole loop: float32 fell to a third of its
// bandwidth), but only once per row of a prefetch group, not once per row of a chunk.
template <class D>
NCCLRR_KD void AddRowSlow(core::LaneState<D>& s, const uint32_t* w, int nv, uint32_t neg) {
  core::LaneRow(s, nv, neg, [w](int v) { return ExtractRaw<D>(w, v); });
}

// Adds one row of a lane (its V elements packed in w, eps bits in neg) to the lane state:
// exactly core::LaneRow, with the all-finite test done on the packed words.
template <class D>
NCCLRR_KD void AddRow(core::LaneState<D>& s, const uint32_t* w, int nv, uint32_t neg) {
  if constexpr (D::kKind != core::AccKind::kInt) {
    if (nv == D::V && RowFinite<D>(w)) {
      NCCLRR_UNROLL
      for (int v = 0; v < D::V; ++v) {
        uint32_t cls;  // finite by the test above
        core::LaneAccumulate(s, v, D::Decode(ExtractRaw<D>(w, v), &cls), (neg >> v) & 1u);
      }
      return;
    }
    AddRowSlow<D>(s, w, nv, neg);
  } else {
    core::LaneRow(s, nv, neg, [w](int v) { return ExtractRaw<D>(w, v); });
  }
}

// Rows a lane keeps in flight ahead of the one it adds: about 4 KB per warp, so that a warp's
// loads overlap its arithmetic instead of alternating with it. Registers: (kAhead + 1) rows.
template <class D>
inline constexpr uint32_t kAheadWanted = sizeof(typename D::Raw) == 8 ? 4u : 8u;
template <class D>
inline constexpr uint32_t kAheadRows =
    kAheadWanted<D> < core::kRows<D> ? kAheadWanted<D> : core::kRows<D>;

// The eps bits of a lane's row r: rows are a multiple of 64 elements apart, so a lane's bit
// offset within a hash word is the same in every row and its word index advances by kRow / 64
// per row; the bits equal EpsBitsAt's.
template <class D>
NCCLRR_KD uint32_t RowNeg(const uint64_t* eps_words, uint32_t word0, uint32_t off, bool straddle,
                          uint32_t r) {
  constexpr uint32_t kRow = core::kRowElems<D>;
  static_assert(kRow % 64 == 0, "rows must start at the same bit of a hash word");
  const uint64_t* hw = eps_words + word0 + r * (kRow / 64);
  uint32_t neg = uint32_t(hw[0] >> off);
  if (straddle) neg |= uint32_t(hw[1]) << (64 - off);
  return neg & ((1u << D::V) - 1);
}

// Where a lane's elements of a chunk start (p: the chunk, g: its global index), and where its
// eps bits are in the chunk's hash words (the same offset in every row: see RowNeg).
template <class D>
struct LaneStart {
  bool vector_ok;       // 16-byte loads: the chunk is 16-byte aligned
  uint32_t first;       // the lane's first element of row 0
  uint32_t word0, off;  // hash word and bit of that element's eps bit
  bool straddle;        // its V bits run into the next word
};
template <class D>
NCCLRR_KD LaneStart<D> LaneStartOf(const typename D::Raw* p, int lane, uint64_t g) {
  LaneStart<D> l;
  l.vector_ok = (reinterpret_cast<uintptr_t>(p) & 15) == 0;
  l.first = uint32_t(lane) * D::V;
  const uint32_t bit0 = uint32_t(g & 63) + l.first;
  l.word0 = bit0 >> 6;
  l.off = bit0 & 63;
  l.straddle = l.off + uint32_t(D::V) > 64;
  return l;
}

// A lane's rows of a full chunk (p: the chunk), in increasing order, with loads issued kAhead
// rows ahead in a ring of kAhead registers rows: groups of kAhead rows, each group unrolled (so
// every ring slot has fixed registers) and the groups looped (so the code stays small).
template <class D>
NCCLRR_KD void LaneChunkFull(core::LaneState<D>& s, const typename D::Raw* p, int lane, uint64_t g,
                             const uint64_t* eps_words) {
  constexpr uint32_t kRow = core::kRowElems<D>;
  constexpr uint32_t kRows = core::kRows<D>;
  constexpr uint32_t kAhead = kAheadRows<D>;
  static_assert(kRows % kAhead == 0, "the ring must wrap at a group boundary");
  const LaneStart<D> l = LaneStartOf<D>(p, lane, g);
  const typename D::Raw* base = p + l.first;
  uint32_t ring[kAhead][kRowWords<D>];
  NCCLRR_UNROLL
  for (uint32_t j = 0; j < kAhead; ++j) LoadRowWords<D>(base + j * kRow, l.vector_ok, ring[j]);
  NCCLRR_NO_UNROLL
  for (uint32_t r0 = 0; r0 < kRows; r0 += kAhead) {
    NCCLRR_UNROLL
    for (uint32_t j = 0; j < kAhead; ++j) {
      const uint32_t r = r0 + j;
      uint32_t row[kRowWords<D>];
      NCCLRR_UNROLL
      for (int i = 0; i < kRowWords<D>; ++i) row[i] = ring[j][i];
      if (r + kAhead < kRows) LoadRowWords<D>(base + (r + kAhead) * kRow, l.vector_ok, ring[j]);
      AddRow<D>(s, row, D::V, RowNeg<D>(eps_words, l.word0, l.off, l.straddle, r));
    }
  }
}

// The same for a block's last, short chunk of n elements: row by row, looped (one per block).
template <class D>
NCCLRR_KD void LaneChunkTail(core::LaneState<D>& s, const typename D::Raw* p, uint64_t n, int lane,
                             uint64_t g, const uint64_t* eps_words) {
  constexpr uint32_t kRow = core::kRowElems<D>;
  constexpr uint32_t kRows = core::kRows<D>;
  const LaneStart<D> l = LaneStartOf<D>(p, lane, g);
  NCCLRR_NO_UNROLL
  for (uint32_t r = 0; r < kRows; ++r) {
    const uint64_t pos = uint64_t(r) * kRow + l.first;
    if (pos >= n) break;  // and every later row of this lane
    const int nv = n - pos < uint64_t(D::V) ? int(n - pos) : D::V;
    uint32_t row[kRowWords<D>];
    LoadRowPartial<D>(p + r * kRow + l.first, nv, l.vector_ok, row);
    AddRow<D>(s, row, nv, RowNeg<D>(eps_words, l.word0, l.off, l.straddle, r));
  }
}

// The partial of chunk `chunk` of a block, computed by one warp; lane 0 writes it to `dst`.
// `next` (~0 if none) is the chunk this warp takes next: its first rows are prefetched into
// L2 so that the next chunk does not start with a full memory latency.
template <class D, class X>
NCCLRR_KD void ChunkWarp(X& x, const typename D::Raw* block, uint64_t block_count,
                         uint64_t block_first, uint64_t chunk, uint64_t next, int lane,
                         const uint32_t* eta, uint64_t* eps_words, uint64_t* dst) {
  using Raw = typename D::Raw;
  constexpr uint32_t kRow = core::kRowElems<D>;
  const uint64_t off = chunk * core::kChunk;
  const uint64_t rest = block_count - off;
  const uint64_t n = rest < core::kChunk ? rest : core::kChunk;
  const Raw* p = block + off;
  const uint64_t g = block_first + off;
  if (next != ~uint64_t(0)) {
    const uint64_t next_off = next * core::kChunk;
    NCCLRR_UNROLL
    for (uint32_t r = 0; r < kAheadRows<D>; ++r) {
      const uint64_t pos = next_off + r * kRow + uint64_t(lane) * D::V;
      if (pos < block_count) PrefetchL2(block + pos);
    }
  }
  // The chunk's hash words, computed once by the warp (at most 3 per lane).
  for (int i = lane; i < core::kChunkEpsWords; i += core::kLanes)
    eps_words[i] = core::ChunkEpsWord(g, i);
  x.sync_warp();
  core::LaneState<D> s;
  core::LaneInit(s);
  if (n == core::kChunk)
    LaneChunkFull<D>(s, p, lane, g, eps_words);
  else
    LaneChunkTail<D>(s, p, n, lane, g, eps_words);
  core::DotType<D> dots[core::kDots];
  core::LaneDots(s, eta, dots);
  auto ss = core::LaneSumSq(s);
  uint32_t nan = s.nan, posinf = s.posinf, neginf = s.neginf;
  for (int offset = core::kLanes / 2; offset >= 1; offset >>= 1) {
    NCCLRR_UNROLL
    for (int k = 0; k < core::kDots; ++k)
      dots[k] = core::LaneSum(dots[k], x.shfl_down(dots[k], offset));
    ss = core::LaneSum(ss, x.shfl_down(ss, offset));
    nan += x.shfl_down(nan, offset);
    posinf += x.shfl_down(posinf, offset);
    neginf += x.shfl_down(neginf, offset);
  }
  if (lane == 0) {
    core::Partial part;
    core::ChunkPartial<D>(dots, double(ss), nan, posinf, neginf, part);
    for (int w = 0; w < kPartialWords; ++w) dst[w] = part.w[w];
  }
}

// One tile: rounds of up to 8 leaves (chunks in full mode, sampled chunks in race-only mode).
template <class D, class X>
NCCLRR_KD void TileWork(X& x, const Job& job, uint32_t t, CtaShared& sh) {
  const bool int_dots = D::kKind == core::AccKind::kInt;
  const bool full = job.mode & kabi::kModeFull, race = job.mode & kabi::kModeRace;
  const uint32_t b = t / job.tiles_per_block, tb = t % job.tiles_per_block;
  const uint64_t cpb = (job.block_count + core::kChunk - 1) / core::kChunk;
  const uint64_t c0 = uint64_t(tb) * job.tile_chunks;
  const uint64_t c1 = c0 + job.tile_chunks < cpb ? c0 + job.tile_chunks : cpb;
  const uint64_t span = c1 > c0 ? c1 - c0 : 0;
  const uint64_t leaves = full ? span : (span + core::kRaceStride - 1) / core::kRaceStride;
  const uint64_t rounds = (leaves + kWarpsPerCta - 1) / kWarpsPerCta;
  const uint64_t block_first = job.g0 + uint64_t(b) * job.gstride;
  const auto* block = static_cast<const typename D::Raw*>(job.data) + uint64_t(b) * job.block_count;
  const int tid = x.tid(), warp = tid / core::kLanes, lane = tid % core::kLanes;
  if (warp == 0) core::LaneEta<D>(block_first, lane, sh.eta[lane]);
  x.sync();
  const uint32_t* eta = sh.eta[lane];
  for (uint64_t q = 0; q < rounds; ++q) {
    const uint64_t leaf = q * kWarpsPerCta + uint64_t(warp);
    if (leaf < leaves) {
      const uint64_t chunk = c0 + (full ? leaf : leaf * core::kRaceStride);
      const uint64_t next_leaf = leaf + kWarpsPerCta;
      const uint64_t next = next_leaf < leaves
                                ? c0 + (full ? next_leaf : next_leaf * core::kRaceStride)
                                : ~uint64_t(0);
      ChunkWarp<D>(x, block, job.block_count, block_first, chunk, next, lane, eta, sh.eps[warp],
                   sh.part[warp]);
    }
    x.sync();
    if (tid < kPartialWords) {
      const uint64_t rest = leaves - q * kWarpsPerCta;
      const int m = rest < uint64_t(kWarpsPerCta) ? int(rest) : kWarpsPerCta;
      if (full && race)  // one race leaf per round: the round's first chunk (c % 8 == 0)
        core::StackPushWord(sh.race_stack, q, sh.part[0][tid], tid, int_dots);
      const uint64_t node = core::RoundTreeWord(sh.part, m, tid, int_dots);
      core::StackPushWord(full ? sh.main_stack : sh.race_stack, q, node, tid, int_dots);
    }
    x.sync();
  }
  if (tid < kPartialWords) {
    const uint32_t ntiles = kabi::JobCtas(job);
    if (full) job.scratch[t].w[tid] = core::StackFoldWord(sh.main_stack, rounds, tid, int_dots);
    if (race)
      job.scratch[ntiles + t].w[tid] = core::StackFoldWord(sh.race_stack, rounds, tid, int_dots);
  }
}

// The last CTA of a job: remaining tree levels, samples, publication.
template <class D, class X>
NCCLRR_KD void FinishJob(X& x, const Job& job, CtaShared& sh) {
  const bool int_dots = D::kKind == core::AccKind::kInt;
  const int tid = x.tid();
  const uint32_t tpb = job.tiles_per_block, ntiles = kabi::JobCtas(job);
  if (tid == 0) {
    const uint64_t gen = job.control->generation + 1;
    job.control->generation = gen;
    job.control->arrived = 0;  // ready for the next launch of this slot (graphs relaunch)
    sh.generation = gen;
    job.header->begin = gen;
    // begin before the results, for a reader racing the next replay; a plain launch publishes
    // once, after the fence below, and its reader waits for `done`.
    if (job.mode & kabi::kModeReplayed) x.fence_system();
  }
  x.sync();
  uint64_t* words = &job.scratch[0].w[0];
  for (uint32_t s = 1; s < tpb; s <<= 1) {
    const uint32_t pairs = (tpb + 2 * s - 1) / (2 * s);
    // Trees to reduce: blocks [0, nblocks) of the main region, [nblocks, 2 nblocks) of the race
    // region, as the mode asks.
    const uint32_t bb0 = (job.mode & kabi::kModeFull) ? 0 : job.nblocks;
    const uint32_t bb1 = (job.mode & kabi::kModeRace) ? 2 * job.nblocks : job.nblocks;
    const uint32_t work = (bb1 - bb0) * pairs * kPartialWords;
    // A thread's items of a level are independent: it loads kBatch of them before storing any,
    // so that their L2 round trips overlap (one at a time, a 1024-tile sketch's first level
    // alone was 80 round trips per thread). The sums are the same.
    constexpr uint32_t kBatch = 8;
    for (uint32_t i0 = uint32_t(tid); i0 < work; i0 += kBatch * kabi::kThreadsPerCta) {
      uint64_t* dst[kBatch];
      uint64_t lhs[kBatch], rhs[kBatch];
      int word[kBatch];
      NCCLRR_UNROLL
      for (uint32_t u = 0; u < kBatch; ++u) {
        dst[u] = nullptr;
        const uint32_t i = i0 + u * kabi::kThreadsPerCta;
        if (i >= work) continue;
        const uint32_t w = i % kPartialWords, rest = i / kPartialWords;
        const uint32_t pair = rest % pairs, bb = bb0 + rest / pairs;
        const uint32_t left = pair * 2 * s;
        if (left + s >= tpb) continue;
        const uint64_t base = (bb >= job.nblocks ? ntiles + (bb - job.nblocks) * tpb : bb * tpb);
        dst[u] = words + (base + left) * kPartialWords + w;
        word[u] = int(w);
        lhs[u] = x.load_cg(dst[u]);
        rhs[u] = x.load_cg(words + (base + left + s) * kPartialWords + w);
      }
      NCCLRR_UNROLL
      for (uint32_t u = 0; u < kBatch; ++u)
        if (dst[u] != nullptr) *dst[u] = core::WordAdd(lhs[u], rhs[u], word[u], int_dots);
    }
    x.sync();
  }
  for (uint32_t i = uint32_t(tid); i < job.nblocks * kPartialWords; i += kabi::kThreadsPerCta) {
    const uint32_t b = i / kPartialWords, w = i % kPartialWords;
    if (job.mode & kabi::kModeFull) job.out_main[b].w[w] = x.load_cg(&job.scratch[b * tpb].w[w]);
    if (job.mode & kabi::kModeRace)
      job.out_race[b].w[w] = x.load_cg(&job.scratch[ntiles + b * tpb].w[w]);
  }
  const auto* data = static_cast<const typename D::Raw*>(job.data);
  const uint32_t per_block = (job.mode & kabi::kModeFull) ? job.samples_per_block : 0;
  const uint32_t race_samples = (job.mode & kabi::kModeRace) ? job.race_samples : 0;
  const uint32_t nsamples = job.nblocks * per_block + race_samples;
  for (uint32_t i = uint32_t(tid); i < nsamples; i += kabi::kThreadsPerCta) {
    uint64_t index;
    if (i < job.nblocks * per_block) {
      const uint32_t b = i / per_block, j = i % per_block;
      if (j >= core::SampleCount(job.block_count, per_block)) continue;
      index = uint64_t(b) * job.block_count + core::SampleIndex(job.block_count, per_block, j);
    } else {
      const uint32_t j = i - job.nblocks * per_block;
      const uint64_t total = job.block_count * job.nblocks;
      if (j >= core::SampleCount(total, race_samples)) continue;
      index = core::SampleIndex(total, race_samples, j);
    }
    job.out_samples[i] = core::SampleValue<D>(data[index]);
  }
  x.fence_system();
  x.sync();
  if (tid == 0) job.header->done = sh.generation;
}

template <class D, class X>
NCCLRR_KD void RunJob(X& x, const Job& job, uint32_t t, CtaShared& sh) {
  TileWork<D>(x, job, t, sh);
  x.fence();  // this CTA's tile partials before its arrival
  x.sync();
  if (x.tid() == 0) {
    const uint32_t before = x.atomic_add(&job.control->arrived, 1u);
    sh.is_last = before + 1 == kabi::JobCtas(job);
  }
  x.sync();
  if (!sh.is_last) return;
  x.fence();  // see every other CTA's tile partials
  FinishJob<D>(x, job, sh);
}

// Every job of a launch has datatype D (one kernel per datatype keeps each one's register
// allocation to what it needs).
template <class D, class X>
NCCLRR_KD void CtaMain(X& x, const kabi::Launch& launch, CtaShared& sh) {
  const uint32_t cta = x.cta();
  uint32_t j = 0;
  while (j + 1 < launch.njobs && cta >= launch.jobs[j + 1].cta_begin) ++j;
  RunJob<D>(x, launch.jobs[j], cta - launch.jobs[j].cta_begin, sh);
}

}  // namespace ncclrr::sketch::kbody
