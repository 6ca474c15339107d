// The tolerance's false-positive rate on clean data, measured: no block check fails at the stated
// z, and the per-projection deviations in units of the bound's scale σ stay below the
// sub-Gaussian tail 2·exp(−z'²/2) at every z' we can measure. Also prints how much headroom the
// bound has (largest |Δ|/σ seen) and the smallest error it can detect, per datatype and N.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "collective_sim.h"
#include "ncclrr/sketch/identity.h"
#include "ncclrr/sketch/numeric.h"
#include "ncclrr/sketch/tolerance.h"

namespace ncclrr::sketch::test {
namespace {

struct Tally {
  long dots = 0, over1 = 0, over2 = 0, over3 = 0, failed_blocks = 0, blocks = 0;
  double max_ratio = 0;
};

// σ of each dot of an AllReduce output (the tolerance at z = 1 without the evaluation term).
void Measure(const CollectiveSketches& c, const ToleranceModel& model, Tally& t) {
  const bool premul = c.op != int32_t(RedOp::kSum);
  std::vector<double> sumsq, scalars;
  for (const auto& r : c.ranks) {
    sumsq.push_back(r.send[0].sumsq);
    scalars.push_back(c.op == int32_t(RedOp::kSum)   ? 1.0
                      : c.op == int32_t(RedOp::kAvg) ? AvgScalar(c.dtype, c.nranks)
                                                     : *r.scalar);
  }
  ToleranceModel unit;
  unit.z = 1;
  for (const RankVerdict& v : CheckCollective(c, model)) {
    ++t.blocks;
    t.failed_blocks += IsFailure(v.verdict);
    const SketchData& recv = c.ranks[v.rank].recv[0];
    const ReductionTolerance tol =
        ToleranceForReduction(unit, c.dtype, c.count, sumsq, scalars, premul, recv.sumsq);
    const double sigma = tol.reduction + tol.sketching;
    for (int k = 0; k < 16; ++k) {
      double expect = 0;
      for (size_t r = 0; r < c.ranks.size(); ++r) expect += scalars[r] * c.ranks[r].send[0].dots[k];
      const double ratio = std::fabs(recv.dots[k] - expect) / sigma;
      ++t.dots;
      t.over1 += ratio > 1;
      t.over2 += ratio > 2;
      t.over3 += ratio > 3;
      t.max_ratio = std::max(t.max_ratio, ratio);
    }
  }
}

TEST(Tolerance, FalsePositiveRateOnCleanDataIsBelowTheStatedBound) {
  const ToleranceModel model;  // the default z
  EXPECT_NEAR(model.FalsePositiveBound(), 2.2e-8, 0.1e-8);
  Tally all;
  std::printf("%-9s %2s %12s %10s %22s\n", "dtype", "N", "max |d|/sigma", "blocks",
              "detectable |e|/|x_r|");
  for (uint8_t dtype :
       {uint8_t(Dtype::kFloat32), uint8_t(Dtype::kFloat64), uint8_t(Dtype::kFloat16),
        uint8_t(Dtype::kBfloat16), uint8_t(Dtype::kFloat8e4m3), uint8_t(Dtype::kFloat8e5m2)}) {
    for (int nranks : {2, 4, 8}) {
      Tally t;
      int trial = 0;
      for (int32_t op : {int32_t(RedOp::kSum), int32_t(RedOp::kAvg), kNumBuiltinOps}) {
        for (uint64_t count : {uint64_t(999), uint64_t(4097), uint64_t(20000)}) {
          for (bool fp32_acc : {false, true}) {
            SimOptions o;
            o.dtype = dtype;
            o.nranks = nranks;
            o.op = op;
            o.count = count;
            o.fp32_accumulate = fp32_acc;
            o.rotate_order = (trial & 1) != 0;
            o.scalars.assign(nranks, 0.5);
            // Normal data (scaled down for fp8 so that the sums stay in range), and for one
            // trial in three identical positive data on every rank: rounding errors that add up
            // instead of cancelling, the bound's worst case.
            const double scale = DtypeSize(dtype) == 1 ? 2.0 / nranks : 1.0;
            InputFn in = RandomInputs(dtype, 1000 + trial, scale);
            if (trial % 3 == 2)
              in = [scale](int, std::vector<double>& v) {
                for (size_t i = 0; i < v.size(); ++i) v[i] = scale * (1.0 + double(i % 97) / 97);
              };
            Measure(Simulate(o, in).sketches, model, t);
            ++trial;
          }
        }
      }
      // The smallest corruption of one element the check is sure to see, relative to one rank's
      // norm (‖x_r‖ = √n for normal data): the sum-op tolerance over √n.
      const uint64_t n = 20000;
      std::vector<double> ss(nranks, double(n)), sc(nranks, 1.0);
      const auto tol = ToleranceForReduction(model, dtype, n, ss, sc, false, double(n) * nranks);
      std::printf("%-9s %2d %12.3f %10ld %22.2e\n", std::string(DtypeName(dtype)).c_str(), nranks,
                  t.max_ratio, t.blocks, (tol.reduction + tol.sketching) / std::sqrt(double(n)));
      EXPECT_EQ(t.failed_blocks, 0) << DtypeName(dtype) << " N=" << nranks;
      all.dots += t.dots, all.over1 += t.over1, all.over2 += t.over2, all.over3 += t.over3;
      all.blocks += t.blocks, all.failed_blocks += t.failed_blocks;
      all.max_ratio = std::max(all.max_ratio, t.max_ratio);
    }
  }
  const double f1 = double(all.over1) / all.dots, f2 = double(all.over2) / all.dots,
               f3 = double(all.over3) / all.dots;
  std::printf(
      "%ld projections: P(>1 sigma) %.4f (bound %.3f), P(>2) %.5f (%.3f), P(>3) %.6f "
      "(%.4f); largest %.3f sigma; %ld of %ld blocks failed at z = %.1f\n",
      all.dots, f1, 2 * std::exp(-0.5), f2, 2 * std::exp(-2.0), f3, 2 * std::exp(-4.5),
      all.max_ratio, all.failed_blocks, all.blocks, model.z);
  EXPECT_LE(f1, 2 * std::exp(-0.5));
  EXPECT_LE(f2, 2 * std::exp(-2.0));
  EXPECT_LE(f3, 2 * std::exp(-4.5));
  EXPECT_LT(all.max_ratio, model.z / 2) << "less than 2x headroom below the stated z";
  EXPECT_EQ(all.failed_blocks, 0);
}

TEST(Tolerance, GrowsWithRanksAndShrinksWithPrecision) {
  const ToleranceModel model;
  std::vector<double> ss2(2, 1e4), sc2(2, 1.0), ss8(8, 1e4), sc8(8, 1.0);
  const auto f32 =
      ToleranceForReduction(model, uint8_t(Dtype::kFloat32), 10000, ss2, sc2, false, 2e4);
  const auto bf2 =
      ToleranceForReduction(model, uint8_t(Dtype::kBfloat16), 10000, ss2, sc2, false, 2e4);
  const auto bf8 =
      ToleranceForReduction(model, uint8_t(Dtype::kBfloat16), 10000, ss8, sc8, false, 8e4);
  EXPECT_LT(f32.reduction, bf2.reduction / 1000);
  EXPECT_NEAR(bf8.reduction / bf2.reduction, 7.0 * 8 / (1 * 2), 1e-9);  // (N-1) * Σ‖x_r‖
  // The L1 cap: a block of 4 elements cannot deviate by more than √4 σ_red.
  const auto tiny = ToleranceForReduction(model, uint8_t(Dtype::kBfloat16), 4, ss2, sc2, false, 2);
  const auto tiny_unit =
      ToleranceForReduction(ToleranceModel{1.0}, uint8_t(Dtype::kBfloat16), 4, ss2, sc2, false, 2);
  EXPECT_NEAR(tiny.reduction, 2 * tiny_unit.reduction, 1e-12);
}

}  // namespace
}  // namespace ncclrr::sketch::test
