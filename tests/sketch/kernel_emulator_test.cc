// The CUDA kernel's source, run on the host emulator, publishes bit for bit what the host
// implementation computes: every datatype, odd sizes, misaligned blocks, multi-block layouts,
// all three modes, tiles forced to many rounds, fused launches and relaunches of one slot.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernel_emulator.h"
#include "launch_plan.h"
#include "ncclrr/sketch/numeric.h"
#include "ncclrr/sketch/sketch.h"
#include "ncclrr/trace/records.h"

namespace ncclrr::sketch::test {
namespace {

std::vector<uint8_t> RandomBytes(uint8_t dtype, uint64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0, 3);
  std::vector<double> v(n);
  for (double& x : v)
    x = dtype <= uint8_t(Dtype::kUint64) ? double(int64_t(rng() >> 20)) : normal(rng);
  std::vector<uint8_t> bytes(n * DtypeSize(dtype) + 16);
  EncodeBuffer(dtype, v.data(), n, bytes.data());
  if (n > 3 && dtype >= uint8_t(Dtype::kFloat16)) {  // a NaN and an infinity (or NaN for e4m3)
    EncodeElement(dtype, NAN, bytes.data() + 1 * DtypeSize(dtype));
    EncodeElement(dtype, -INFINITY, bytes.data() + (n - 2) * DtypeSize(dtype));
  }
  return bytes;
}

void ExpectSame(const SketchData& a, const SketchData& b, const std::string& what) {
  EXPECT_EQ(std::memcmp(a.dots.data(), b.dots.data(), sizeof(a.dots)), 0) << what;
  EXPECT_EQ(std::memcmp(&a.sumsq, &b.sumsq, sizeof(double)), 0) << what;
  EXPECT_EQ(a.nan, b.nan) << what;
  EXPECT_EQ(a.posinf, b.posinf) << what;
  EXPECT_EQ(a.neginf, b.neginf) << what;
  EXPECT_EQ(a.count, b.count) << what;
  EXPECT_EQ(a.first, b.first) << what;
  EXPECT_EQ(a.sample_idx, b.sample_idx) << what;
  ASSERT_EQ(a.samples.size(), b.samples.size()) << what;
  EXPECT_EQ(std::memcmp(a.samples.data(), b.samples.data(), a.samples.size() * 8), 0) << what;
}

void ExpectSameResult(const SketchResult& host, const SketchResult& dev, const std::string& what) {
  ASSERT_EQ(host.blocks.size(), dev.blocks.size()) << what;
  for (size_t b = 0; b < host.blocks.size(); ++b)
    ExpectSame(host.blocks[b], dev.blocks[b], what + " block " + std::to_string(b));
  ASSERT_EQ(host.race.has_value(), dev.race.has_value()) << what;
  if (host.race) ExpectSame(*host.race, *dev.race, what + " race");
}

TEST(KernelEmulator, EveryDtypeSizeAndModeMatchesTheHostBitForBit) {
  for (int d = 0; d < kNumDtypes; ++d) {
    const uint8_t dtype = uint8_t(d);
    for (uint64_t n : {uint64_t(7), uint64_t(4096), uint64_t(9 * 4096 + 5)}) {
      for (SketchMode mode : {SketchMode::kFull, SketchMode::kFullAndRace, SketchMode::kRaceOnly}) {
        const auto bytes = RandomBytes(dtype, n + 1, n * 31 + d);
        SketchRequest req;
        req.layout.dtype = dtype;
        req.layout.block_count = n;
        req.layout.g0 = 1000003;
        req.mode = mode;
        const std::string what = std::string(DtypeName(dtype)) + " n=" + std::to_string(n) +
                                 " mode=" + std::to_string(int(mode));
        const auto host = SketchHost(bytes.data(), req);
        const auto dev = EmulateSketch(bytes.data(), req, 1024);
        ASSERT_TRUE(host.ok() && dev.ok()) << what;
        ExpectSameResult(host.value(), dev.value(), what);
        if (mode != SketchMode::kFullAndRace) continue;
        // Misaligned by one element: the kernel's scalar-load path.
        const uint8_t* shifted = bytes.data() + DtypeSize(dtype);
        const auto host2 = SketchHost(shifted, req);
        const auto dev2 = EmulateSketch(shifted, req, 1024);
        ASSERT_TRUE(host2.ok() && dev2.ok()) << what;
        ExpectSameResult(host2.value(), dev2.value(), what + " misaligned");
      }
    }
  }
}

TEST(KernelEmulator, EveryHashWordOffsetOfALaneMatchesTheHost) {
  // The kernel takes a lane's eps bits at one offset within a hash word for every row of a chunk
  // (rows are multiples of 64 elements): offsets where a lane's V positions straddle two words,
  // in a full chunk and in a short one, with non-finite values in both.
  for (uint8_t dtype :
       {uint8_t(Dtype::kFloat32), uint8_t(Dtype::kBfloat16), uint8_t(Dtype::kFloat8e4m3),
        uint8_t(Dtype::kFloat64), uint8_t(Dtype::kInt8)}) {
    const uint64_t n = 4096 + 300;
    const auto bytes = RandomBytes(dtype, n, dtype * 7 + 1);
    for (uint64_t g0 : {0ull, 1ull, 13ull, 49ull, 60ull, 63ull, (1ull << 40) + 61}) {
      SketchRequest req;
      req.layout.dtype = dtype;
      req.layout.block_count = n;
      req.layout.g0 = g0;
      req.mode = SketchMode::kFullAndRace;
      const std::string what = std::string(DtypeName(dtype)) + " g0=" + std::to_string(g0);
      const auto host = SketchHost(bytes.data(), req);
      const auto dev = EmulateSketch(bytes.data(), req, 1024);
      ASSERT_TRUE(host.ok() && dev.ok()) << what;
      ExpectSameResult(host.value(), dev.value(), what);
    }
  }
}

TEST(KernelEmulator, ManyRoundsPerTileAndMultiBlockLayouts) {
  for (uint8_t dtype : {uint8_t(Dtype::kFloat32), uint8_t(Dtype::kInt64)}) {
    const uint64_t c = 17 * 4096 + 100;  // 18 chunks per block
    const auto bytes = RandomBytes(dtype, 3 * c, dtype);
    SketchRequest req;
    req.layout.dtype = dtype;
    req.layout.block_count = c;
    req.layout.nblocks = 3;
    req.layout.g0 = 5;
    req.layout.gstride = 4 * c;
    req.mode = SketchMode::kFullAndRace;
    req.samples_per_block = 40;
    req.race_samples = 200;
    const auto host = SketchHost(bytes.data(), req);
    ASSERT_TRUE(host.ok());
    for (uint32_t max_tiles : {3u, 1024u}) {  // tiles of 32 and 8 chunks
      const auto dev = EmulateSketch(bytes.data(), req, max_tiles);
      ASSERT_TRUE(dev.ok());
      ExpectSameResult(host.value(), dev.value(),
                       std::string(DtypeName(dtype)) + " max_tiles " + std::to_string(max_tiles));
    }
    req.mode = SketchMode::kRaceOnly;
    const auto host_race = SketchHost(bytes.data(), req);
    const auto dev_race = EmulateSketch(bytes.data(), req, 3);
    ASSERT_TRUE(host_race.ok() && dev_race.ok());
    ExpectSameResult(host_race.value(), dev_race.value(), "race only");
  }
}

// The last CTA's tree over many trees at once: 64 blocks of 2 tiles in both regions (full and
// race) are 2,560 items at the first level, 10 per thread of the CTA.
TEST(KernelEmulator, TheLastCtaReducesManyTreesOfTiles) {
  const uint64_t c = 8 * 4096 + 3;  // 9 chunks: tiles of 8 and 1
  const auto bytes = RandomBytes(uint8_t(Dtype::kFloat32), 64 * c, 7);
  SketchRequest req;
  req.layout.dtype = uint8_t(Dtype::kFloat32);
  req.layout.block_count = c;
  req.layout.nblocks = 64;
  req.layout.gstride = c;
  req.mode = SketchMode::kFullAndRace;
  const auto host = SketchHost(bytes.data(), req);
  const auto dev = EmulateSketch(bytes.data(), req, 1024);
  ASSERT_TRUE(host.ok() && dev.ok());
  ExpectSameResult(host.value(), dev.value(), "64 blocks of 2 tiles");
}

TEST(KernelEmulator, OneTileOfManyRoundsInEveryMode) {
  // 129 chunks in one tile (max_tiles = 1 gives T = 256): 17 rounds of chunks and 3 rounds of
  // race leaves, so the per-word stacks merge several levels deep and fold a partial last node.
  const uint64_t n = 128 * 4096 + 1;
  const auto bytes = RandomBytes(uint8_t(Dtype::kInt32), n, 11);
  for (SketchMode mode : {SketchMode::kFullAndRace, SketchMode::kRaceOnly}) {
    SketchRequest req;
    req.layout.dtype = uint8_t(Dtype::kInt32);
    req.layout.block_count = n;
    req.mode = mode;
    const auto host = SketchHost(bytes.data(), req);
    const auto dev = EmulateSketch(bytes.data(), req, 1);
    ASSERT_TRUE(host.ok() && dev.ok());
    ExpectSameResult(host.value(), dev.value(), "mode " + std::to_string(int(mode)));
  }
}

TEST(KernelEmulator, FusedJobsAndARelaunchedSlot) {
  const auto a = RandomBytes(uint8_t(Dtype::kFloat32), 20000, 1);
  const auto b = RandomBytes(uint8_t(Dtype::kFloat32), 5000, 2);
  SketchRequest ra, rb;
  ra.layout.dtype = rb.layout.dtype = uint8_t(Dtype::kFloat32);
  ra.layout.block_count = 20000;
  rb.layout.block_count = 5000;
  rb.layout.g0 = 77;
  rb.mode = SketchMode::kFullAndRace;
  EmulatedSlot sa, sb;
  kabi::Launch launch{};
  ASSERT_TRUE(PrepareJob(a.data(), ra, 1024, launch.jobs[0], sa).ok());
  ASSERT_TRUE(PrepareJob(b.data(), rb, 1024, launch.jobs[1], sb).ok());
  launch.njobs = 2;
  launch.jobs[1].cta_begin = kabi::JobCtas(launch.jobs[0]);
  launch.total_ctas = launch.jobs[1].cta_begin + kabi::JobCtas(launch.jobs[1]);
  for (uint64_t generation = 1; generation <= 2; ++generation) {
    EmulateLaunch(launch, generation == 2);
    EXPECT_EQ(sa.header.done, generation);
    EXPECT_EQ(sb.header.done, generation);
    EXPECT_EQ(sa.control.arrived, 0u);
    ExpectSameResult(SketchHost(a.data(), ra).value(), ReadJobResults(ra, launch.jobs[0]), "job a");
    ExpectSameResult(SketchHost(b.data(), rb).value(), ReadJobResults(rb, launch.jobs[1]), "job b");
  }
}

}  // namespace
}  // namespace ncclrr::sketch::test
