// Identities for every collective x datatype x op x in-place/out-of-place on random data, and a
// single corrupted element of one output rank failing them at that rank only.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <tuple>

#include "collective_sim.h"
#include "ncclrr/sketch/identity.h"
#include "ncclrr/sketch/numeric.h"

namespace ncclrr::sketch::test {
namespace {

const Api kApis[] = {Api::kAllReduce,     Api::kBroadcast, Api::kReduce, Api::kAllGather,
                     Api::kReduceScatter, Api::kAlltoAll,  Api::kGather, Api::kScatter};

bool IsReductionApi(Api a) {
  return a == Api::kAllReduce || a == Api::kReduce || a == Api::kReduceScatter;
}
bool IsInt(uint8_t d) { return d <= uint8_t(Dtype::kUint64); }

// Ops to run per API: copies ignore the op.
std::vector<int32_t> OpsFor(Api api) {
  if (!IsReductionApi(api)) return {int32_t(RedOp::kSum)};
  return {int32_t(RedOp::kSum),  int32_t(RedOp::kAvg), kNumBuiltinOps /* PreMulSum handle */,
          int32_t(RedOp::kProd), int32_t(RedOp::kMax), int32_t(RedOp::kMin)};
}
bool Linear(int32_t op, uint8_t dtype) {
  if (op == int32_t(RedOp::kSum) || op >= kNumBuiltinOps) return true;
  return op == int32_t(RedOp::kAvg) && !IsInt(dtype);
}

// A corruption that the identity must catch: a low bit for exact checks (integers, copies),
// a change well past the datatype's rounding for float reductions.
CorruptFn CorruptOne(Api api, uint8_t dtype, int victim, uint64_t index) {
  return [=](int rank, uint8_t* recv, uint64_t elems) {
    if (rank != victim || elems == 0) return;
    const size_t size = DtypeSize(dtype);
    uint8_t* p = recv + (index % elems) * size;
    if (IsInt(dtype)) {
      p[0] ^= 1;  // lowest bit (little endian): integer sketches are exact
      return;
    }
    if (!IsReductionApi(api)) {
      // A copy is compared bit for bit, but through fp32 (fp64) partial sums: a change far
      // below one ulp of those sums can vanish in them. Flip the top mantissa bit instead.
      const int mantissa_bits[] = {0, 0, 0, 0, 0, 0, 10, 23, 52, 7, 3, 2};
      const int bit = mantissa_bits[dtype] - 1;
      p[bit / 8] ^= uint8_t(1u << (bit % 8));
      return;
    }
    const double delta = dtype == uint8_t(Dtype::kFloat8e5m2)   ? 1000
                         : dtype == uint8_t(Dtype::kFloat8e4m3) ? 400
                                                                : 100;
    const double v = DecodeElement(dtype, p);
    EncodeElement(dtype, v > 0 ? v - delta : v + delta, p);
  };
}

class IdentityMatrix : public ::testing::TestWithParam<std::tuple<Api, uint8_t>> {};

TEST_P(IdentityMatrix, CleanHoldsAndOneCorruptedElementFailsAtThatRank) {
  const auto [api, dtype] = GetParam();
  for (int32_t op : OpsFor(api)) {
    for (bool in_place : {false, true}) {
      if (in_place && api == Api::kAlltoAll) continue;
      SimOptions o;
      o.api = api;
      o.dtype = dtype;
      o.nranks = 3;
      o.root = 1;
      o.op = op;
      o.in_place = in_place;
      o.count = 1000;
      o.scalars = IsInt(dtype) ? std::vector<double>{3, 1, 2} : std::vector<double>{0.5, 2, 0.25};
      const std::string what = std::string(ApiName(api)) + " " + std::string(DtypeName(dtype)) +
                               " op " + std::to_string(op) +
                               (in_place ? " in-place" : " out-of-place");
      const auto clean = Simulate(o, RandomInputs(dtype, 7 + op));
      const auto verdicts = CheckCollective(clean.sketches);
      ASSERT_EQ(verdicts.size(), 3u) << what;
      for (const RankVerdict& v : verdicts) {
        const bool output = !(IsRootedOutputOnly(api) && v.rank != o.root);
        const Verdict expected = !output ? Verdict::kNotAnOutput
                                 : (IsReductionApi(api) && !Linear(op, dtype))
                                     ? Verdict::kUncheckedOp
                                     : Verdict::kOk;
        EXPECT_EQ(v.verdict, expected)
            << what << " rank " << v.rank << ": " << VerdictName(v.verdict) << " " << v.message;
      }
      if (IsReductionApi(api) && !Linear(op, dtype)) continue;
      const int victim = IsRootedOutputOnly(api) ? o.root : 2;
      const auto bad =
          Simulate(o, RandomInputs(dtype, 7 + op), CorruptOne(api, dtype, victim, 517));
      for (const RankVerdict& v : CheckCollective(bad.sketches)) {
        if (v.rank == victim) {
          EXPECT_EQ(v.verdict, IsReductionApi(api) ? Verdict::kWrongSum : Verdict::kWrongCopy)
              << what << " victim " << victim << ": " << VerdictName(v.verdict) << " error "
              << v.error << " tolerance " << v.tolerance << " " << v.message;
          EXPECT_TRUE(IsFailure(v.verdict));
          EXPECT_FALSE(v.message.empty());
        } else {
          EXPECT_FALSE(IsFailure(v.verdict))
              << what << " bystander rank " << v.rank << ": " << v.message;
        }
      }
    }
  }
}

std::vector<std::tuple<Api, uint8_t>> AllCases() {
  std::vector<std::tuple<Api, uint8_t>> cases;
  for (Api api : kApis)
    for (int d = 0; d < kNumDtypes; ++d) cases.emplace_back(api, uint8_t(d));
  return cases;
}

INSTANTIATE_TEST_SUITE_P(EveryCollectiveAndDtype, IdentityMatrix, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<IdentityMatrix::ParamType>& p) {
                           return std::string(ApiName(std::get<0>(p.param))) + "_" +
                                  std::string(DtypeName(std::get<1>(p.param)));
                         });

// Blocks that cross chunk boundaries, other rank counts, ring-like orders and fp32 accumulation.
TEST(IdentityVariants, ChunkCrossingSizesRankCountsAndReductionOrders) {
  for (int nranks : {2, 5}) {
    for (uint64_t count : {uint64_t(1), uint64_t(7), uint64_t(4097), uint64_t(3 * 4096 + 11)}) {
      for (uint8_t dtype : {uint8_t(Dtype::kFloat32), uint8_t(Dtype::kBfloat16),
                            uint8_t(Dtype::kFloat16), uint8_t(Dtype::kInt32)}) {
        for (bool rotate : {false, true}) {
          SimOptions o;
          o.api = Api::kReduceScatter;
          o.dtype = dtype;
          o.nranks = nranks;
          o.count = count;
          o.rotate_order = rotate;
          o.fp32_accumulate = rotate;
          for (const RankVerdict& v :
               CheckCollective(Simulate(o, RandomInputs(dtype, count)).sketches))
            EXPECT_EQ(v.verdict, Verdict::kOk)
                << DtypeName(dtype) << " N=" << nranks << " count=" << count << " rank " << v.rank
                << ": " << v.message;
        }
      }
    }
  }
}

// A realistic float corruption: one element's sign flipped (|x| >= 0.5) in a large fp32 buffer.
TEST(IdentityVariants, SignFlipOfOneElementInAMillionIsCaughtForFloat32) {
  SimOptions o;
  o.nranks = 2;
  o.count = 1 << 20;
  auto inputs = [](int rank, std::vector<double>& v) {
    RandomInputs(uint8_t(Dtype::kFloat32), 3)(rank, v);
    v[12345] = rank == 0 ? 0.75 : 0.5;
  };
  auto flip = [](int rank, uint8_t* recv, uint64_t) {
    if (rank != 1) return;
    float x;
    std::memcpy(&x, recv + 12345 * 4, 4);
    x = -x;
    std::memcpy(recv + 12345 * 4, &x, 4);
  };
  const auto verdicts = CheckCollective(Simulate(o, inputs, flip).sketches);
  EXPECT_EQ(verdicts[0].verdict, Verdict::kOk) << verdicts[0].message;
  EXPECT_EQ(verdicts[1].verdict, Verdict::kWrongSum) << verdicts[1].message;
  EXPECT_GT(verdicts[1].error, 10 * verdicts[1].tolerance);
}

TEST(IdentityVariants, MissingSketchesAndScalarsAreSaidNotGuessed) {
  SimOptions o;
  o.op = kNumBuiltinOps;
  o.scalars = {1.0, 2.0};
  auto sim = Simulate(o, RandomInputs(o.dtype, 1));
  auto no_scalar = sim.sketches;
  no_scalar.ranks[1].scalar.reset();
  for (const RankVerdict& v : CheckCollective(no_scalar))
    EXPECT_EQ(v.verdict, Verdict::kMissingSketch);
  auto no_send = sim.sketches;
  no_send.ranks[0].send.clear();
  const auto verdicts = CheckCollective(no_send);
  EXPECT_EQ(verdicts[1].verdict, Verdict::kMissingSketch);
  EXPECT_NE(verdicts[1].message.find("rank 0 has no send sketch"), std::string::npos)
      << verdicts[1].message;
}

}  // namespace
}  // namespace ncclrr::sketch::test
