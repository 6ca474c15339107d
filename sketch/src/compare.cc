#include "ncclrr/sketch/compare.h"

#include <cmath>
#include <cstring>

namespace ncclrr::sketch {

bool SameValue(double a, double b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  return std::memcmp(&a, &b, sizeof a) == 0;
}

SketchDifference CompareSketches(const SketchData& a, const SketchData& b) {
  SketchDifference d;
  for (int k = 0; k < kSketchDots; ++k) {
    if (SameValue(a.dots[k], b.dots[k])) continue;
    ++d.dots;
    const double e = std::fabs(a.dots[k] - b.dots[k]);
    if (d.worst_dot < 0 || !(e <= d.largest)) {
      d.largest = e;
      d.worst_dot = k;
    }
  }
  d.sumsq = !SameValue(a.sumsq, b.sumsq);
  d.counts = a.nan != b.nan || a.posinf != b.posinf || a.neginf != b.neginf;
  d.samples_comparable = a.samples.size() == b.samples.size() && a.sample_idx == b.sample_idx;
  if (d.samples_comparable)
    for (size_t i = 0; i < a.samples.size(); ++i) {
      if (SameValue(a.samples[i], b.samples[i])) continue;
      if (d.samples++ == 0) d.first_sample = int(i);
    }
  return d;
}

}  // namespace ncclrr::sketch
