#include "diff/diff_data.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "model/call_sketches.h"
#include "ncclrr/sketch/numeric.h"

namespace ncclrr::analysis {
namespace {

bool Close(double x, double y, double tol, double scale) {
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  if (x == y) return true;
  return std::fabs(x - y) <= tol * scale;
}

bool SameBlock(const SketchData& x, const SketchData& y, double floor) {
  if (x.nan != y.nan || x.posinf != y.posinf || x.neginf != y.neginf) return false;
  if (!sketch::IsFloatDtype(x.dtype)) {  // exact sketches: any difference is a difference
    return x.dots == y.dots && x.sumsq == y.sumsq && x.samples == y.samples;
  }
  const double tol = SketchTolerance(x.dtype, floor);
  const double sumsq = std::max(x.sumsq, y.sumsq);
  const double norm = std::sqrt(sumsq);
  for (int k = 0; k < kSketchDots; ++k)
    if (!Close(x.dots[k], y.dots[k], tol, norm)) return false;
  if (!Close(x.sumsq, y.sumsq, 2 * tol, sumsq)) return false;
  // Raw samples (the only content of a samples-only sketch): each within the tolerance of its
  // own size or of the buffer's root mean square, whichever is larger.
  if (x.sample_idx != y.sample_idx || x.samples.size() != y.samples.size()) return true;
  const double rms = x.count ? std::sqrt(sumsq / static_cast<double>(x.count)) : 0;
  for (size_t i = 0; i < x.samples.size(); ++i) {
    const double scale = std::max({std::fabs(x.samples[i]), std::fabs(y.samples[i]), rms});
    if (!Close(x.samples[i], y.samples[i], tol, scale)) return false;
  }
  return true;
}

std::vector<const SketchData*> SortedBlocks(std::vector<const SketchData*> v) {
  std::sort(v.begin(), v.end(), [](const SketchData* x, const SketchData* y) {
    return std::tie(x->first, x->count) < std::tie(y->first, y->count);
  });
  return v;
}

}  // namespace

double SketchTolerance(uint8_t dtype, double floor) {
  return std::max(floor, 16 * sketch::UnitRoundoff(dtype));
}

Agreement CompareBlocks(const std::vector<const SketchData*>& a,
                        const std::vector<const SketchData*>& b, double tolerance_floor) {
  if (a.empty() || b.empty() || a.size() != b.size()) return Agreement::kUnknown;
  const auto x = SortedBlocks(a), y = SortedBlocks(b);
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i]->first != y[i]->first || x[i]->count != y[i]->count || x[i]->dtype != y[i]->dtype)
      return Agreement::kUnknown;
  for (size_t i = 0; i < x.size(); ++i)
    if (!SameBlock(*x[i], *y[i], tolerance_floor)) return Agreement::kDiffer;
  return Agreement::kAgree;
}

DataComparison CompareCallData(const RunCall& a, const RunCall& b, double tolerance_floor) {
  const CallSketches sa = SketchesOf(*a.model, a.call, a.launch);
  const CallSketches sb = SketchesOf(*b.model, b.call, b.launch);
  return {CompareBlocks(sa.send, sb.send, tolerance_floor),
          CompareBlocks(sa.recv, sb.recv, tolerance_floor)};
}

}  // namespace ncclrr::analysis
