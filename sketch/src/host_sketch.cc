// The host implementation of the sketch. Every rounding step comes from sketch_core.h in the
// order the GPU kernel uses: per lane, rows in order; lanes combined by LaneTree; chunk partials
// widened to fp64 and combined by StrideTree. The loop nest differs from the GPU's (all 32 lanes
// of a row at a time, for cache locality) but each accumulator sees the same sequence.
#include <algorithm>
#include <cstring>
#include <string>

#include "finish.h"
#include "float_env.h"
#include "ncclrr/sketch/sketch.h"
#include "ncclrr/trace/records.h"
#include "sketch_core.h"

namespace ncclrr::sketch {
namespace {

using core::DotType;
using core::kDots;
using core::kLanes;
using core::Partial;

template <class D>
typename D::Raw LoadRaw(const uint8_t* base, uint64_t index) {
  typename D::Raw r;
  std::memcpy(&r, base + index * sizeof(r), sizeof(r));  // blocks need not be aligned
  return r;
}

// Partial of the chunk of n (<= 4096) elements at `p`, whose first element has global index g.
// Lane by lane, rows in order: the sequence every accumulator sees on the GPU.
template <class D>
Partial HostChunk(const uint8_t* p, uint64_t n, uint64_t g, const uint32_t (*eta)[D::V]) {
  constexpr uint32_t kRow = core::kRowElems<D>;
  using SumSq = core::SumSqType<D>;
  DotType<D> dots[kDots][kLanes];
  SumSq ss[kLanes];
  uint64_t nan = 0, posinf = 0, neginf = 0;
  uint64_t eps_words[core::kChunkEpsWords];
  for (int i = 0; i < core::kChunkEpsWords; ++i) eps_words[i] = core::ChunkEpsWord(g, i);
  for (int lane = 0; lane < kLanes; ++lane) {
    core::LaneState<D> s;
    core::LaneInit(s);
    for (uint32_t r = 0; r < core::kRows<D>; ++r) {
      const uint64_t pos = uint64_t(r) * kRow + uint64_t(lane) * D::V;
      if (pos >= n) break;
      const int nv = int(std::min<uint64_t>(D::V, n - pos));
      const uint8_t* row = p + pos * sizeof(typename D::Raw);
      core::LaneRow(s, nv, core::EpsBitsAt(eps_words, g, pos, D::V),
                    [row](int v) { return LoadRaw<D>(row, v); });
    }
    DotType<D> d[kDots];
    core::LaneDots(s, eta[lane], d);
    for (int k = 0; k < kDots; ++k) dots[k][lane] = d[k];
    ss[lane] = core::LaneSumSq(s);
    nan += s.nan;
    posinf += s.posinf;
    neginf += s.neginf;
  }
  DotType<D> total[kDots];
  for (int k = 0; k < kDots; ++k) {
    core::LaneTree(dots[k]);
    total[k] = dots[k][0];
  }
  core::LaneTree(ss);
  Partial out;
  core::ChunkPartial<D>(total, double(ss[0]), nan, posinf, neginf, out);
  return out;
}

// Main and race partials of one block.
template <class D>
void HostBlock(const uint8_t* p, uint64_t count, uint64_t first, SketchMode mode, Partial* main,
               Partial* race) {
  uint32_t eta[kLanes][D::V];
  for (int lane = 0; lane < kLanes; ++lane) core::LaneEta<D>(first, lane, eta[lane]);
  const bool int_dots = D::kKind == core::AccKind::kInt;
  const uint64_t nchunks = ChunkCount(count);
  std::vector<Partial> all, sampled;
  if (HasFull(mode)) all.reserve(nchunks);
  sampled.reserve(nchunks / kRaceChunkStride + 1);
  for (uint64_t c = 0; c < nchunks; ++c) {
    const bool is_sampled = c % kRaceChunkStride == 0;
    if (!HasFull(mode) && !is_sampled) continue;
    const uint64_t off = c * kChunkElems;
    const Partial part = HostChunk<D>(p + off * sizeof(typename D::Raw),
                                      std::min(kChunkElems, count - off), first + off, eta);
    if (HasFull(mode)) all.push_back(part);
    if (is_sampled && HasRace(mode)) sampled.push_back(part);
  }
  core::PartialZero(*main);
  core::PartialZero(*race);
  if (!all.empty()) {
    core::StrideTree(all.data(), all.size(), int_dots);
    *main = all[0];
  }
  if (!sampled.empty()) {
    core::StrideTree(sampled.data(), sampled.size(), int_dots);
    *race = sampled[0];
  }
}

template <class D>
std::vector<double> HostSamples(const uint8_t* p, uint64_t n, uint32_t m) {
  std::vector<double> values(core::SampleCount(n, m));
  for (uint32_t j = 0; j < values.size(); ++j)
    values[j] = core::SampleValue<D>(LoadRaw<D>(p, core::SampleIndex(n, m, j)));
  return values;
}

}  // namespace

Status ValidateRequest(const SketchRequest& request) {
  const BlockLayout& l = request.layout;
  if (DtypeSize(l.dtype) == 0)
    return InvalidArgument("sketch: unknown datatype code " + std::to_string(l.dtype) +
                           "; expected an ncclDataType_t between 0 (int8) and 11 (fp8 e5m2)");
  if (l.nblocks == 0)
    return InvalidArgument("sketch: a layout needs at least one block (nblocks = 0)");
  if (request.samples_per_block > kMaxSamples || request.race_samples > kMaxSamples)
    return InvalidArgument(
        "sketch: at most " + std::to_string(kMaxSamples) + " samples per sketch, asked for " +
        std::to_string(std::max(request.samples_per_block, request.race_samples)));
  if (uint8_t(request.mode) < 1 || uint8_t(request.mode) > 3)
    return InvalidArgument("sketch: unknown mode " + std::to_string(uint8_t(request.mode)));
  return Status::Ok();
}

StatusOr<SketchResult> SketchHost(const void* data, const SketchRequest& request) {
  NCCLRR_RETURN_IF_ERROR(ValidateRequest(request));
  IeeeFloatScope ieee;
  const BlockLayout& l = request.layout;
  const auto* bytes = static_cast<const uint8_t*>(data);
  const size_t elem = DtypeSize(l.dtype);
  SketchResult result;
  std::vector<Partial> race_blocks;
  core::DispatchDtype(l.dtype, [&](auto traits) {
    using D = decltype(traits);
    for (uint32_t b = 0; b < l.nblocks; ++b) {
      const uint8_t* p = bytes + uint64_t(b) * l.block_count * elem;
      Partial main, race;
      HostBlock<D>(p, l.block_count, l.first(b), request.mode, &main, &race);
      if (HasFull(request.mode)) {
        const auto values = HostSamples<D>(p, l.block_count, request.samples_per_block);
        result.blocks.push_back(MakeBlockSketch(main, l, b, values.data(), values.size()));
      }
      race_blocks.push_back(race);
    }
    if (HasRace(request.mode)) {
      const auto values = HostSamples<D>(bytes, l.total(), request.race_samples);
      result.race = MakeRaceSketch(CombineRaceBlocks(std::move(race_blocks), l.dtype), l,
                                   values.data(), values.size());
    }
  });
  return result;
}

SketchData SketchHostBlock(const void* data, uint8_t dtype, uint64_t count, uint64_t first,
                           uint32_t samples) {
  SketchRequest request;
  request.layout.dtype = dtype;
  request.layout.block_count = count;
  request.layout.g0 = first;
  request.samples_per_block = std::min(samples, kMaxSamples);
  auto result = SketchHost(data, request);
  if (!result.ok()) {
    SketchData empty;
    empty.dtype = dtype;
    empty.first = first;
    return empty;
  }
  return std::move(result->blocks[0]);
}

std::vector<uint64_t> SampleIndices(uint64_t n, uint32_t m) {
  std::vector<uint64_t> idx(core::SampleCount(n, m));
  for (uint32_t j = 0; j < idx.size(); ++j) idx[j] = core::SampleIndex(n, m, j);
  return idx;
}

}  // namespace ncclrr::sketch
