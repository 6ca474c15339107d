// Properties of the host sketch: it computes the documented projections, blocks compose, integer
// sketches are exact and linear, non-finite values are counted and left out, the race sample
// covers chunks c % 8 == 0, samples are deterministic, and the caller's FTZ/DAZ do not leak in.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "ncclrr/sketch/numeric.h"
#include "ncclrr/sketch/sketch.h"
#include "ncclrr/sketch/tolerance.h"
#include "sketch_core.h"

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

namespace ncclrr::sketch {
namespace {

// Sign of projection k for global index g, straight from the definition in docs/sketches.md.
int Sign(uint64_t g, int k) {
  const bool eps = (core::Mix64(g >> 6) >> (g & 63)) & 1;
  const bool eta = __builtin_popcount(uint32_t(g & 127) & core::EtaMask(k)) & 1;
  return (eps != eta) ? -1 : 1;
}

std::vector<double> Values(uint64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d;
  std::vector<double> v(n);
  for (double& x : v) x = d(rng);
  return v;
}

TEST(HostSketch, HashIsSplitMix64) { EXPECT_EQ(core::Mix64(0), 0xE220A8397B1DCDAFull); }

TEST(HostSketch, EtaRowsAreDistinctHadamardRows) {
  for (int a = 0; a < 16; ++a)
    for (int b = a + 1; b < 16; ++b) {
      int dot = 0;
      for (int c = 0; c < 128; ++c)
        dot += ((core::EtaWord(c) >> a) & 1) == ((core::EtaWord(c) >> b) & 1) ? 1 : -1;
      EXPECT_EQ(dot, 0) << a << " " << b;
    }
}

TEST(HostSketch, Float64MatchesTheDefinitionAtOddSizesAndOffsets) {
  for (uint64_t n : {uint64_t(1), uint64_t(7), uint64_t(4095), uint64_t(4096), uint64_t(4097),
                     uint64_t(9 * 4096 + 123)}) {
    for (uint64_t first : {uint64_t(0), uint64_t(5), uint64_t(1ull << 40) + 3}) {
      const auto v = Values(n, n + first);
      const SketchData s = SketchHostBlock(v.data(), uint8_t(Dtype::kFloat64), n, first);
      double norm2 = 0;
      for (double x : v) norm2 += x * x;
      for (int k = 0; k < 16; ++k) {
        long double ref = 0;
        for (uint64_t i = 0; i < n; ++i) ref += Sign(first + i, k) * (long double)v[i];
        EXPECT_NEAR(s.dots[k], double(ref), 1e-13 * std::sqrt(norm2) + 1e-300)
            << "n=" << n << " first=" << first << " k=" << k;
      }
      EXPECT_NEAR(s.sumsq, norm2, 1e-12 * norm2);
      EXPECT_EQ(s.count, n);
      EXPECT_EQ(s.first, first);
    }
  }
}

TEST(HostSketch, Float32IsWithinItsStatedRoundingScale) {
  const uint64_t n = 100000;
  const auto v = Values(n, 9);
  std::vector<float> f(v.begin(), v.end());
  const SketchData s = SketchHostBlock(f.data(), uint8_t(Dtype::kFloat32), n, 77);
  double norm2 = 0;
  for (float x : f) norm2 += double(x) * x;
  const double scale = SketchRoundingScale(uint8_t(Dtype::kFloat32), n, norm2);
  for (int k = 0; k < 16; ++k) {
    long double ref = 0;
    for (uint64_t i = 0; i < n; ++i) ref += Sign(77 + i, k) * (long double)f[i];
    EXPECT_LT(std::fabs(s.dots[k] - double(ref)), 6.5 * scale) << k;
  }
}

template <typename T>
void CheckIntegerExactAndLinear(uint8_t dtype) {
  const uint64_t n = 3 * 4096 + 17;
  std::mt19937_64 rng(dtype);
  std::vector<T> a(n), b(n), sum(n);
  for (uint64_t i = 0; i < n; ++i) {
    a[i] = T(rng());
    b[i] = T(rng());
    sum[i] = T(a[i] + b[i]);  // wraps in the type's width
  }
  const uint64_t mask =
      sizeof(T) == 8 ? (1ull << 53) - 1 : (sizeof(T) == 4 ? 0xffffffffull : 0xffull);
  const SketchData sa = SketchHostBlock(a.data(), dtype, n, 1000);
  const SketchData sb = SketchHostBlock(b.data(), dtype, n, 1000);
  const SketchData ss = SketchHostBlock(sum.data(), dtype, n, 1000);
  for (int k = 0; k < 16; ++k) {
    uint64_t ref = 0;
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t x = uint64_t(std::is_signed_v<T> ? uint64_t(int64_t(a[i])) : uint64_t(a[i]));
      ref += Sign(1000 + i, k) > 0 ? x : uint64_t(0) - x;
    }
    EXPECT_EQ(uint64_t(sa.dots[k]), ref & mask) << DtypeName(dtype) << " k=" << k;
    EXPECT_EQ(uint64_t(ss.dots[k]), (uint64_t(sa.dots[k]) + uint64_t(sb.dots[k])) & mask);
  }
}

TEST(HostSketch, IntegerSketchesAreExactAndLinearInTheWrappingWidth) {
  CheckIntegerExactAndLinear<int8_t>(uint8_t(Dtype::kInt8));
  CheckIntegerExactAndLinear<uint8_t>(uint8_t(Dtype::kUint8));
  CheckIntegerExactAndLinear<int32_t>(uint8_t(Dtype::kInt32));
  CheckIntegerExactAndLinear<uint32_t>(uint8_t(Dtype::kUint32));
  CheckIntegerExactAndLinear<int64_t>(uint8_t(Dtype::kInt64));
  CheckIntegerExactAndLinear<uint64_t>(uint8_t(Dtype::kUint64));
}

TEST(HostSketch, MultiBlockLayoutEqualsPerBlockSketches) {
  const uint64_t c = 5000;
  const auto v = Values(4 * c, 4);
  SketchRequest req;
  req.layout.dtype = uint8_t(Dtype::kFloat64);
  req.layout.block_count = c;
  req.layout.nblocks = 4;
  req.layout.g0 = 12;
  req.layout.gstride = 3 * c;
  const auto all = SketchHost(v.data(), req);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->blocks.size(), 4u);
  for (uint32_t b = 0; b < 4; ++b) {
    const SketchData one = SketchHostBlock(v.data() + b * c, req.layout.dtype, c, 12 + 3 * c * b);
    EXPECT_EQ(std::memcmp(one.dots.data(), all->blocks[b].dots.data(), sizeof(one.dots)), 0);
    EXPECT_EQ(one.samples, all->blocks[b].samples);
    EXPECT_EQ(all->blocks[b].first, 12 + 3 * c * b);
  }
}

TEST(HostSketch, PositionMatters) {
  const auto v = Values(1000, 5);
  const SketchData a = SketchHostBlock(v.data(), uint8_t(Dtype::kFloat64), 1000, 0);
  const SketchData b = SketchHostBlock(v.data(), uint8_t(Dtype::kFloat64), 1000, 1000);
  int differ = 0;
  for (int k = 0; k < 16; ++k) differ += std::fabs(a.dots[k] - b.dots[k]) > 1e-6;
  EXPECT_GE(differ, 12);
}

TEST(HostSketch, NonFiniteValuesAreCountedAndLeftOut) {
  for (uint8_t dtype = uint8_t(Dtype::kFloat16); dtype <= uint8_t(Dtype::kFloat8e5m2); ++dtype) {
    const size_t size = DtypeSize(dtype);
    const uint64_t n = 5000;
    std::vector<double> v = Values(n, dtype);
    std::vector<uint8_t> clean(n * size), dirty;
    EncodeBuffer(dtype, v.data(), n, clean.data());
    dirty = clean;
    const bool has_inf = dtype != uint8_t(Dtype::kFloat8e4m3);
    EncodeElement(dtype, NAN, dirty.data() + 10 * size);
    EncodeElement(dtype, has_inf ? INFINITY : NAN, dirty.data() + 4100 * size);
    EncodeElement(dtype, has_inf ? -INFINITY : NAN, dirty.data() + 4999 * size);
    if (dtype == uint8_t(Dtype::kFloat8e4m3)) {  // fp8 encoders saturate: write the patterns
      dirty[4100] = 0xff;
      dirty[4999] = 0x7f;
    } else if (dtype == uint8_t(Dtype::kFloat8e5m2)) {
      dirty[4100] = 0x7c;
      dirty[4999] = 0xfc;
    }
    const std::vector<double> zero(1, 0.0);
    std::vector<uint8_t> zeroed = clean;
    for (uint64_t i : {10, 4100, 4999}) EncodeElement(dtype, 0.0, zeroed.data() + i * size);
    const SketchData d = SketchHostBlock(dirty.data(), dtype, n, 0);
    const SketchData z = SketchHostBlock(zeroed.data(), dtype, n, 0);
    EXPECT_EQ(d.nan, has_inf ? 1u : 3u) << DtypeName(dtype);
    EXPECT_EQ(d.posinf, has_inf ? 1u : 0u) << DtypeName(dtype);
    EXPECT_EQ(d.neginf, has_inf ? 1u : 0u) << DtypeName(dtype);
    for (int k = 0; k < 16; ++k) EXPECT_EQ(d.dots[k], z.dots[k]) << DtypeName(dtype);
    EXPECT_EQ(d.sumsq, z.sumsq);
  }
}

TEST(HostSketch, RaceSampleCoversEveryEighthChunkAndItsTwinIsBitIdentical) {
  const uint64_t n = 20 * 4096 + 5;
  std::mt19937_64 rng(1);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = int32_t(rng());
  SketchRequest req;
  req.layout.dtype = uint8_t(Dtype::kInt32);
  req.layout.block_count = n;
  req.mode = SketchMode::kFullAndRace;
  const auto before = SketchHost(v.data(), req);
  req.mode = SketchMode::kRaceOnly;
  const auto after = SketchHost(v.data(), req);
  ASSERT_TRUE(before.ok() && after.ok() && before->race && after->race);
  EXPECT_TRUE(after->blocks.empty());
  for (int k = 0; k < 16; ++k) {
    uint64_t ref = 0;
    for (uint64_t i = 0; i < n; ++i)
      if ((i / 4096) % 8 == 0)
        ref += Sign(i, k) > 0 ? uint64_t(int64_t(v[i])) : uint64_t(0) - uint64_t(int64_t(v[i]));
    EXPECT_EQ(uint64_t(before->race->dots[k]), ref & 0xffffffffull);
    EXPECT_EQ(before->race->dots[k], after->race->dots[k]);
  }
  EXPECT_EQ(before->race->samples, after->race->samples);
  EXPECT_EQ(before->race->samples, before->blocks[0].samples);  // single block: same indices
}

TEST(HostSketch, SamplesAreStratifiedDeterministicAndExact) {
  const auto idx = SampleIndices(1000000, 256);
  ASSERT_EQ(idx.size(), 256u);
  for (size_t j = 0; j < idx.size(); ++j) {
    EXPECT_GE(idx[j], j * 1000000 / 256);
    EXPECT_LT(idx[j], (j + 1) * 1000000 / 256);
  }
  EXPECT_EQ(idx, SampleIndices(1000000, 256));
  EXPECT_EQ(SampleIndices(10, 256).size(), 10u);
  const auto v = Values(1000000, 2);
  const SketchData s = SketchHostBlock(v.data(), uint8_t(Dtype::kFloat64), v.size(), 0);
  for (size_t j = 0; j < idx.size(); ++j) EXPECT_EQ(s.samples[j], v[idx[j]]);
  EXPECT_EQ(s.sample_idx, idx);
}

TEST(HostSketch, CallerFlushToZeroDoesNotChangeTheBits) {
  const uint64_t n = 9000;
  std::vector<float> v(n);
  std::mt19937 rng(3);
  for (auto& x : v) x = std::ldexp(float(rng() % 1000) - 500.0f, -140);  // subnormals
  const SketchData ieee = SketchHostBlock(v.data(), uint8_t(Dtype::kFloat32), n, 0);
#if defined(__x86_64__)
  const unsigned saved = _mm_getcsr();
  _mm_setcsr(saved | (1u << 15) | (1u << 6));
  const SketchData ftz = SketchHostBlock(v.data(), uint8_t(Dtype::kFloat32), n, 0);
  EXPECT_EQ(_mm_getcsr(), saved | (1u << 15) | (1u << 6));  // the caller's mode is restored
  _mm_setcsr(saved);
  EXPECT_EQ(std::memcmp(ieee.dots.data(), ftz.dots.data(), sizeof(ieee.dots)), 0);
#endif
  int nonzero = 0;
  for (double d : ieee.dots) nonzero += d != 0;
  EXPECT_GT(nonzero, 0);
}

TEST(HostSketch, BadRequestsSayWhatIsWrong) {
  SketchRequest req;
  req.layout.dtype = 42;
  auto r = SketchHost(nullptr, req);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unknown datatype code 42"), std::string::npos);
  req.layout.dtype = 7;
  req.samples_per_block = 1000;
  EXPECT_FALSE(SketchHost(nullptr, req).ok());
  req.samples_per_block = 10;
  req.layout.nblocks = 0;
  EXPECT_FALSE(SketchHost(nullptr, req).ok());
}

TEST(Numeric, MinifloatDecodeAndEncodeRoundTripEveryPattern) {
  for (uint8_t dtype : {uint8_t(Dtype::kFloat16), uint8_t(Dtype::kBfloat16),
                        uint8_t(Dtype::kFloat8e4m3), uint8_t(Dtype::kFloat8e5m2)}) {
    const uint32_t patterns = DtypeSize(dtype) == 2 ? 65536 : 256;
    for (uint32_t p = 0; p < patterns; ++p) {
      const double v = DecodeElement(dtype, &p);
      if (std::isnan(v)) continue;
      uint32_t back = 0;
      EncodeElement(dtype, v, &back);
      if (std::isinf(v) && DtypeSize(dtype) == 1) continue;  // fp8 saturates infinities
      EXPECT_EQ(back, p) << DtypeName(dtype) << " pattern " << p << " value " << v;
    }
  }
  uint8_t b;
  EncodeElement(uint8_t(Dtype::kFloat8e4m3), 1000.0, &b);
  EXPECT_EQ(DecodeElement(uint8_t(Dtype::kFloat8e4m3), &b), 448.0);
  EXPECT_EQ(AvgScalar(uint8_t(Dtype::kBfloat16), 3), 0.333984375);  // bf16(float(1/3))
  EXPECT_EQ(AvgScalar(uint8_t(Dtype::kFloat32), 3), double(float(1.0 / 3)));
}

}  // namespace
}  // namespace ncclrr::sketch
