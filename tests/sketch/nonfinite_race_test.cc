// NaN/Inf in reductions (AMP overflow steps are not wrong sums; a lost NaN is), buffer-race
// evidence from the before/after race samples, and sample similarity for suspected swaps.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "collective_sim.h"
#include "ncclrr/sketch/identity.h"
#include "ncclrr/sketch/numeric.h"
#include "ncclrr/sketch/race.h"
#include "ncclrr/sketch/sketch.h"

namespace ncclrr::sketch::test {
namespace {

InputFn WithSpecials(uint8_t dtype, std::vector<std::pair<int, std::pair<uint64_t, double>>> put) {
  return [dtype, put](int rank, std::vector<double>& v) {
    RandomInputs(dtype, 5)(rank, v);
    for (const auto& [r, iv] : put)
      if (r == rank) v[iv.first] = iv.second;
  };
}

TEST(NonFinite, AmpStyleInfAndNanGradientsAreUncheckedNotWrong) {
  for (uint8_t dtype :
       {uint8_t(Dtype::kFloat16), uint8_t(Dtype::kBfloat16), uint8_t(Dtype::kFloat32)}) {
    for (int32_t op : {int32_t(RedOp::kSum), int32_t(RedOp::kAvg)}) {
      SimOptions o;
      o.dtype = dtype;
      o.nranks = 4;
      o.op = op;
      o.count = 5000;
      // An overflowed gradient on rank 0, a NaN on rank 2, +Inf and -Inf meeting (NaN).
      auto in = WithSpecials(dtype, {{0, {10, INFINITY}},
                                     {0, {11, INFINITY}},
                                     {2, {4000, NAN}},
                                     {1, {77, INFINITY}},
                                     {3, {77, -INFINITY}}});
      const auto sim = Simulate(o, in);
      for (const RankVerdict& v : CheckCollective(sim.sketches)) {
        EXPECT_EQ(v.verdict, Verdict::kUncheckedNonFinite)
            << DtypeName(dtype) << " rank " << v.rank << ": " << v.message;
        EXPECT_FALSE(IsFailure(v.verdict));
      }
      EXPECT_EQ(sim.sketches.ranks[0].recv[0].nan, 2u);  // the NaN and Inf + -Inf
      EXPECT_EQ(sim.sketches.ranks[0].recv[0].posinf, 2u);
    }
  }
}

TEST(NonFinite, OverflowInTheSumItselfIsNotAWrongSum) {
  SimOptions o;
  o.dtype = uint8_t(Dtype::kFloat16);
  o.count = 3000;
  auto in = [](int, std::vector<double>& v) {
    for (size_t i = 0; i < v.size(); ++i) v[i] = i < 5 ? 60000.0 : 0.25;  // 2 x 60000 > 65504
  };
  for (const RankVerdict& v : CheckCollective(Simulate(o, in).sketches))
    EXPECT_EQ(v.verdict, Verdict::kUncheckedNonFinite) << v.message;
}

TEST(NonFinite, AnOutputThatLostANanIsWrong) {
  SimOptions o;
  o.count = 3000;
  auto in = WithSpecials(o.dtype, {{1, {123, NAN}}});
  auto scrub = [](int rank, uint8_t* recv, uint64_t) {
    if (rank == 0) EncodeElement(uint8_t(Dtype::kFloat32), 0.0, recv + 123 * 4);
  };
  const auto verdicts = CheckCollective(Simulate(o, in, scrub).sketches);
  EXPECT_EQ(verdicts[0].verdict, Verdict::kNonFiniteLost) << verdicts[0].message;
  EXPECT_TRUE(IsFailure(verdicts[0].verdict));
  EXPECT_EQ(verdicts[1].verdict, Verdict::kUncheckedNonFinite);
}

SketchResult Sketch(const std::vector<float>& v, SketchMode mode) {
  SketchRequest r;
  r.layout.dtype = uint8_t(Dtype::kFloat32);
  r.layout.block_count = v.size();
  r.mode = mode;
  return SketchHost(v.data(), r).value();
}

TEST(Race, BeforeAndAfterSamplesAreExactTwins) {
  std::vector<float> v(40 * 4096 + 3);
  std::mt19937 rng(1);
  std::normal_distribution<float> d;
  for (auto& x : v) x = d(rng);
  const SketchResult before = Sketch(v, SketchMode::kFullAndRace);
  SketchData twin = *before.race;
  twin.which = SketchWhich::kSendBefore;
  // Unchanged: no race, whichever comparison is used.
  const SketchResult same = Sketch(v, SketchMode::kRaceOnly);
  EXPECT_FALSE(CompareRaceSamples(twin, *same.race, true).changed);
  EXPECT_FALSE(CompareRaceSamples(before.blocks[0], *same.race, false).changed);
  // One element of a re-read chunk (chunk 8) changed: the twin's projections see it.
  auto one = v;
  one[8 * 4096 + 100] += 1.0f;
  const RaceEvidence e1 = CompareRaceSamples(twin, *Sketch(one, SketchMode::kRaceOnly).race, true);
  EXPECT_TRUE(e1.changed);
  EXPECT_GT(e1.dots_differing, 8);
  EXPECT_NE(e1.message.find("make that writer wait"), std::string::npos);
  // The next step's gradient written over the whole buffer: the samples alone see it.
  auto next = v;
  for (auto& x : next) x = d(rng);
  const RaceEvidence e2 =
      CompareRaceSamples(before.blocks[0], *Sketch(next, SketchMode::kRaceOnly).race, false);
  EXPECT_TRUE(e2.changed);
  EXPECT_FALSE(e2.dots_compared);
  EXPECT_EQ(e2.samples_differing, 256);
  // Different shapes are not compared.
  EXPECT_FALSE(
      CompareRaceSamples(twin, *Sketch(std::vector<float>(10), SketchMode::kRaceOnly).race, true)
          .changed);
}

// Gradient-like data: one "true" gradient per tensor, each rank sees it plus its own noise.
std::vector<float> Gradient(uint64_t tensor, int rank, size_t n, double noise) {
  std::mt19937_64 base(tensor), own(tensor * 131 + uint64_t(rank) + 7);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (auto& x : v) x = d(base) + float(noise) * d(own);
  return v;
}

TEST(Similarity, SwappedSameShapeCallsCorrelateAtTheOtherPosition) {
  const size_t n = 1 << 16;
  auto sk = [&](uint64_t tensor, int rank) {
    return Sketch(Gradient(tensor, rank, n, 0.5), SketchMode::kFull).blocks[0];
  };
  // Rank 1 issued tensors 12 and 13 swapped: its seq 12 holds tensor 13.
  const SketchData r1_seq12 = sk(13, 1), r0_seq12 = sk(12, 0), r0_seq13 = sk(13, 0);
  const SwapEvidence swap = AssessSwap(r1_seq12, r0_seq12, r0_seq13);
  EXPECT_TRUE(swap.suspected);
  EXPECT_GT(swap.other.cosine, 0.7);
  EXPECT_LT(std::fabs(swap.same.cosine), 0.25);
  EXPECT_GT(swap.confidence, 0.999);
  // In order: nothing suspected.
  const SwapEvidence fine = AssessSwap(sk(12, 1), r0_seq12, r0_seq13);
  EXPECT_FALSE(fine.suspected);
  EXPECT_LT(fine.z, 0);
}

TEST(Similarity, CosineOfUnrelatedBuffersHasTheStatedSpread) {
  double sum = 0, sum2 = 0;
  const int pairs = 300;
  for (int i = 0; i < pairs; ++i) {
    const auto a = Sketch(Gradient(1000 + i, 0, 4096, 0), SketchMode::kFull).blocks[0];
    const auto b = Sketch(Gradient(5000 + i, 0, 4096, 0), SketchMode::kFull).blocks[0];
    const Similarity s = SampleCosine(a, b);
    ASSERT_TRUE(s.valid);
    EXPECT_EQ(s.n, 256);
    sum += s.cosine;
    sum2 += s.cosine * s.cosine;
  }
  const double mean = sum / pairs, sd = std::sqrt(sum2 / pairs - mean * mean);
  EXPECT_LT(std::fabs(mean), 0.02);
  EXPECT_GT(sd, 0.045);
  EXPECT_LT(sd, 0.08);  // ~1/√256 = 0.0625, the "cosine error ~0.06" of docs/design.md
}

}  // namespace
}  // namespace ncclrr::sketch::test
