#include "finish.h"

#include "ncclrr/trace/records.h"

namespace ncclrr::sketch {

bool IsIntDtype(uint8_t dtype) { return dtype <= uint8_t(Dtype::kUint64); }

void FinishPartial(const core::Partial& p, uint8_t dtype, SketchData& out) {
  const bool is_int = IsIntDtype(dtype);
  const uint64_t mask = core::IntResidueMask(int(DtypeSize(dtype)));
  for (int k = 0; k < core::kDots; ++k)
    out.dots[k] = is_int ? double(p.w[k] & mask) : core::BitsToD(p.w[k]);
  out.sumsq = core::BitsToD(p.w[core::kWordSumsq]);
  out.nan = p.w[core::kWordNaN];
  out.posinf = p.w[core::kWordPosInf];
  out.neginf = p.w[core::kWordNegInf];
}

core::Partial CombineRaceBlocks(std::vector<core::Partial> per_block, uint8_t dtype) {
  core::Partial out;
  core::PartialZero(out);
  if (per_block.empty()) return out;
  core::StrideTree(per_block.data(), per_block.size(), IsIntDtype(dtype));
  return per_block[0];
}

namespace {
void FillSamples(SketchData& s, uint64_t n, const double* values, uint32_t nsamples) {
  s.sample_idx.resize(nsamples);
  s.samples.assign(values, values + nsamples);
  for (uint32_t j = 0; j < nsamples; ++j) s.sample_idx[j] = core::SampleIndex(n, nsamples, j);
}
}  // namespace

SketchData MakeBlockSketch(const core::Partial& p, const BlockLayout& layout, uint32_t b,
                           const double* values, uint32_t nsamples) {
  SketchData s;
  s.which = SketchWhich::kSendBefore;
  s.dtype = layout.dtype;
  s.count = layout.block_count;
  s.first = layout.first(b);
  FinishPartial(p, layout.dtype, s);
  FillSamples(s, layout.block_count, values, nsamples);
  return s;
}

SketchData MakeRaceSketch(const core::Partial& p, const BlockLayout& layout, const double* values,
                          uint32_t nsamples) {
  SketchData s;
  s.which = SketchWhich::kSendAfterSample;
  s.dtype = layout.dtype;
  s.count = layout.total();
  s.first = layout.g0;
  FinishPartial(p, layout.dtype, s);
  FillSamples(s, layout.total(), values, nsamples);
  return s;
}

}  // namespace ncclrr::sketch
