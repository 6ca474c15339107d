#include "ncclrr/sketch/tolerance.h"

#include <algorithm>
#include <cmath>

#include "ncclrr/sketch/numeric.h"
#include "ncclrr/sketch/sketch.h"
#include "ncclrr/trace/records.h"

namespace ncclrr::sketch {

double ToleranceModel::FalsePositiveBound() const { return 2.0 * 16 * std::exp(-z * z / 2); }

double SketchRoundingScale(uint8_t dtype, uint64_t count, double sumsq) {
  // Depth of the summation tree an element goes through (sketch_core.h): rows of its lane,
  // positions of the lane, 5 lane levels, then the chunk levels (fp64, counted at u_acc to stay
  // on the safe side).
  const size_t bytes = DtypeSize(dtype);
  const double positions = bytes >= 4 ? 4 : double(16 / std::max<size_t>(bytes, 1));
  const double rows = double(kChunkElems) / (32 * positions);
  const double chunk_levels =
      std::ceil(std::log2(double(std::max<uint64_t>(ChunkCount(count), 1))));
  const double depth = rows + positions + 5 + chunk_levels + 1;
  const double u_acc =
      dtype == uint8_t(Dtype::kFloat64) ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
  return u_acc * std::sqrt(depth) * std::sqrt(sumsq);
}

double ReductionTolerance::ForDot(double recv_dot, const std::vector<double>& scaled) const {
  double terms = std::fabs(recv_dot);
  for (double t : scaled) terms += std::fabs(t);
  const double evaluation = std::ldexp(1.0, -52) * double(scaled.size() + 1) * terms;
  return reduction + sketching + evaluation;
}

ReductionTolerance ToleranceForReduction(const ToleranceModel& model, uint8_t dtype, uint64_t count,
                                         const std::vector<double>& send_sumsq,
                                         const std::vector<double>& scalars, bool premul,
                                         double recv_sumsq) {
  const size_t nranks = send_sumsq.size();
  const double u = UnitRoundoff(dtype);
  const double h = HalfMinSubnormal(dtype);
  const double roundings = double(nranks > 0 ? nranks - 1 : 0) + (premul ? 1.0 : 0.0);
  double weighted_norms = 0;
  double sketch_var = std::pow(SketchRoundingScale(dtype, count, recv_sumsq), 2);
  for (size_t r = 0; r < nranks; ++r) {
    const double s = r < scalars.size() ? std::fabs(scalars[r]) : 1.0;
    weighted_norms += s * std::sqrt(send_sumsq[r]);
    sketch_var += std::pow(s * SketchRoundingScale(dtype, count, send_sumsq[r]), 2);
  }
  const double n = double(count);
  const double sigma_red = roundings * (u * (1 + u) * weighted_norms + h * std::sqrt(n));
  ReductionTolerance t;
  t.reduction = std::min(model.z, std::sqrt(n)) * sigma_red;  // the L1 bound caps z
  t.sketching = model.z * std::sqrt(sketch_var);
  return t;
}

}  // namespace ncclrr::sketch
