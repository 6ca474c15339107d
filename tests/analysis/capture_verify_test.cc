// VerifyCaptured (analysis/src/checks/capture_verify.h): every collective's outputs recomputed from
// the ranks' captured inputs: right outputs pass (floating sums in any order within the tolerance),
// one wrong element is found with its index and values, max/min/prod/avg and integer types are
// exact, data movement is bitwise.
#include "checks/capture_verify.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "ncclrr/sketch/numeric.h"

namespace ncclrr::analysis {
namespace {

// Per-rank element buffers of one datatype, as raw bytes.
struct Bufs {
  uint8_t dtype;
  std::vector<std::string> send, recv;
};

std::string Encode(uint8_t dtype, const std::vector<double>& v) {
  std::string s(v.size() * DtypeSize(dtype), '\0');
  sketch::EncodeBuffer(dtype, v.data(), v.size(), s.data());
  return s;
}

std::vector<OutputCheck> Verify(Api api, int32_t op, uint64_t count, const Bufs& b, int root = -1,
                                uint8_t flags = 0, std::vector<double> scalars = {}) {
  CapturedCall c{api, int(b.send.size()), root, op, flags, b.dtype, count, {},
                 {},  std::move(scalars)};
  for (const std::string& s : b.send) c.send.push_back(s);
  for (const std::string& r : b.recv) c.recv.push_back(r);
  return VerifyCaptured(c);
}

uint64_t Wrong(const std::vector<OutputCheck>& v) {
  uint64_t n = 0;
  for (const OutputCheck& o : v) n += o.wrong;
  return n;
}

// AllReduce over 3 ranks of small values: right result, then one element off on rank 2.
void CheckAllReduce(uint8_t dtype, RedOp op, const std::vector<std::vector<double>>& in,
                    const std::vector<double>& want) {
  Bufs b{dtype, {}, {}};
  for (const auto& x : in) b.send.push_back(Encode(dtype, x));
  for (size_t r = 0; r < in.size(); ++r) b.recv.push_back(Encode(dtype, want));
  const auto ok = Verify(Api::kAllReduce, int32_t(op), want.size(), b);
  ASSERT_EQ(ok.size(), in.size());
  EXPECT_EQ(Wrong(ok), 0u) << DtypeName(dtype) << " op " << int(op) << ": " << ok[0].expected
                           << " vs " << ok[0].observed;
  std::vector<double> off = want;
  off[2] += 1;
  b.recv[2] = Encode(dtype, off);
  const auto bad = Verify(Api::kAllReduce, int32_t(op), want.size(), b);
  EXPECT_EQ(bad[0].wrong + bad[1].wrong, 0u);
  EXPECT_EQ(bad[2].rank, 2);
  EXPECT_EQ(bad[2].wrong, 1u) << DtypeName(dtype) << " op " << int(op);
  EXPECT_EQ(bad[2].first, 2u);
}

TEST(VerifyCaptured, EveryOpOnEveryIntegerTypeIsExact) {
  const std::vector<std::vector<double>> in = {{1, 2, 3, 4}, {5, -1, 2, 0}, {3, 7, -2, 1}};
  for (Dtype d : {Dtype::kInt8, Dtype::kInt32, Dtype::kInt64}) {
    const uint8_t t = uint8_t(d);
    CheckAllReduce(t, RedOp::kSum, in, {9, 8, 3, 5});
    CheckAllReduce(t, RedOp::kProd, in, {15, -14, -12, 0});
    CheckAllReduce(t, RedOp::kMax, in, {5, 7, 3, 4});
    CheckAllReduce(t, RedOp::kMin, in, {1, -1, -2, 0});
    CheckAllReduce(t, RedOp::kAvg, in, {3, 2, 1, 1});  // the wrapped sum divided, truncated
  }
  const std::vector<std::vector<double>> pos = {{1, 2, 3, 4}, {5, 1, 2, 0}, {3, 7, 2, 1}};
  for (Dtype d : {Dtype::kUint8, Dtype::kUint32, Dtype::kUint64}) {
    const uint8_t t = uint8_t(d);
    CheckAllReduce(t, RedOp::kSum, pos, {9, 10, 7, 5});
    CheckAllReduce(t, RedOp::kMax, pos, {5, 7, 3, 4});
    CheckAllReduce(t, RedOp::kAvg, pos, {3, 3, 2, 1});
  }
}

TEST(VerifyCaptured, IntegerSumsWrapInTheTypesWidth) {
  Bufs b{uint8_t(Dtype::kInt8), {}, {}};
  b.send = {Encode(b.dtype, {100}), Encode(b.dtype, {100})};
  const int8_t wrapped = int8_t(uint8_t(200));  // -56
  b.recv = {Encode(b.dtype, {double(wrapped)}), Encode(b.dtype, {double(wrapped)})};
  EXPECT_EQ(Wrong(Verify(Api::kAllReduce, int32_t(RedOp::kSum), 1, b)), 0u);
}

TEST(VerifyCaptured, FloatMaxMinAreExactAndSumsGetTheTolerance) {
  const uint8_t f32 = uint8_t(Dtype::kFloat32);
  const std::vector<std::vector<double>> in = {{1.5, -2, 3.25}, {0.5, 4, -1}, {2, 1, 0}};
  CheckAllReduce(f32, RedOp::kMax, in, {2, 4, 3.25});
  CheckAllReduce(f32, RedOp::kMin, in, {0.5, -2, -1});
  CheckAllReduce(f32, RedOp::kProd, in, {1.5, -8, 0});
  CheckAllReduce(f32, RedOp::kSum, in, {4, 3, 2.25});
  CheckAllReduce(uint8_t(Dtype::kFloat64), RedOp::kAvg, in, {4.0 / 3, 1, 0.75});
  // A max that is off by one ulp is wrong: no tolerance.
  Bufs b{f32, {Encode(f32, {1.0}), Encode(f32, {2.0})}, {}};
  const double above = std::nextafter(2.0f, 3.0f);
  b.recv = {Encode(f32, {2.0}), Encode(f32, {above})};
  EXPECT_EQ(Verify(Api::kAllReduce, int32_t(RedOp::kMax), 1, b)[1].wrong, 1u);
}

TEST(VerifyCaptured, FloatSumsInAnyOrderPassAndAFlippedElementFails) {
  std::mt19937 rng(7);
  std::normal_distribution<float> g(0, 100);
  const int n = 8, count = 4096;
  const uint8_t f32 = uint8_t(Dtype::kFloat32);
  std::vector<std::vector<float>> x(n, std::vector<float>(count));
  for (auto& v : x)
    for (float& e : v) e = g(rng);
  Bufs b{f32, {}, {}};
  for (int r = 0; r < n; ++r)
    b.send.push_back(std::string(reinterpret_cast<char*>(x[r].data()), count * sizeof(float)));
  for (int j = 0; j < n; ++j) {  // each rank sums in its own (rotated) order, in float
    std::vector<float> out(count);
    for (int i = 0; i < count; ++i) {
      float s = 0;
      for (int k = 0; k < n; ++k) s += x[(j + k) % n][i];
      out[i] = s;
    }
    b.recv.push_back(std::string(reinterpret_cast<char*>(out.data()), count * sizeof(float)));
  }
  EXPECT_EQ(Wrong(Verify(Api::kAllReduce, int32_t(RedOp::kSum), count, b)), 0u);
  float v;
  std::memcpy(&v, b.recv[3].data() + 1000 * sizeof(float), sizeof v);
  v = v + 0.5f + std::fabs(v) * 1e-3f;
  std::memcpy(b.recv[3].data() + 1000 * sizeof(float), &v, sizeof v);
  const auto bad = Verify(Api::kAllReduce, int32_t(RedOp::kSum), count, b);
  EXPECT_EQ(Wrong(bad), 1u);
  EXPECT_EQ(bad[3].first, 1000u);
  EXPECT_GT(bad[3].tolerance, 0);
}

TEST(VerifyCaptured, NanInMaxMayWinButNotInSums) {
  const uint8_t f32 = uint8_t(Dtype::kFloat32);
  const double nan = std::nan("");
  Bufs b{f32, {Encode(f32, {nan}), Encode(f32, {2.0})}, {Encode(f32, {nan}), Encode(f32, {2.0})}};
  EXPECT_EQ(Wrong(Verify(Api::kAllReduce, int32_t(RedOp::kMax), 1, b)), 0u);
  b.recv = {Encode(f32, {nan}), Encode(f32, {nan})};
  EXPECT_EQ(Wrong(Verify(Api::kAllReduce, int32_t(RedOp::kSum), 1, b)), 0u);
  b.recv = {Encode(f32, {2.0}), Encode(f32, {nan})};
  EXPECT_EQ(Wrong(Verify(Api::kAllReduce, int32_t(RedOp::kSum), 1, b)), 1u);  // NaN lost
}

TEST(VerifyCaptured, ReduceScatterReduceAndPreMulSum) {
  const uint8_t i32 = uint8_t(Dtype::kInt32);
  Bufs rs{i32, {Encode(i32, {1, 2, 3, 4}), Encode(i32, {10, 20, 30, 40})}, {}};
  rs.recv = {Encode(i32, {11, 22}), Encode(i32, {33, 44})};
  EXPECT_EQ(Wrong(Verify(Api::kReduceScatter, int32_t(RedOp::kSum), 2, rs)), 0u);
  rs.recv[1] = Encode(i32, {33, 45});
  const auto bad = Verify(Api::kReduceScatter, int32_t(RedOp::kSum), 2, rs);
  EXPECT_EQ(bad[1].wrong, 1u);
  EXPECT_EQ(bad[1].first, 1u);
  EXPECT_EQ(bad[1].expected, "44");
  EXPECT_EQ(bad[1].observed, "45");
  Bufs red{i32, {Encode(i32, {1, 2}), Encode(i32, {3, 4})}, {"", Encode(i32, {4, 6})}};
  const auto r = Verify(Api::kReduce, int32_t(RedOp::kSum), 2, red, 1);
  ASSERT_EQ(r.size(), 1u);  // only the root has an output
  EXPECT_EQ(r[0].rank, 1);
  EXPECT_EQ(r[0].wrong, 0u);
  // PreMulSum: x0*2 + x1*3.
  Bufs pm{i32, {Encode(i32, {1, 2}), Encode(i32, {3, 4})}, {}};
  pm.recv = {Encode(i32, {11, 16}), Encode(i32, {11, 16})};
  EXPECT_EQ(Wrong(Verify(Api::kAllReduce, 5, 2, pm, -1, call_flags::kPreMulSum, {2, 3})), 0u);
  EXPECT_EQ(Wrong(Verify(Api::kAllReduce, 5, 2, pm, -1, call_flags::kPreMulSum, {2, 2})), 4u);
}

TEST(VerifyCaptured, DataMovementIsBitwise) {
  const uint8_t f32 = uint8_t(Dtype::kFloat32);
  const std::string a = Encode(f32, {1, 2}), c = Encode(f32, {3, 4});
  Bufs ag{f32, {a, c}, {a + c, a + c}};
  EXPECT_EQ(Wrong(Verify(Api::kAllGather, 0, 2, ag)), 0u);
  ag.recv[0] = c + a;
  const auto bad = Verify(Api::kAllGather, 0, 2, ag);
  EXPECT_EQ(bad[0].wrong, 4u);
  EXPECT_TRUE(bad[0].copy);
  EXPECT_EQ(bad[0].expected, "1");
  EXPECT_EQ(bad[0].observed, "3");
  Bufs bc{f32, {"", c}, {c, c}};
  EXPECT_EQ(Wrong(Verify(Api::kBroadcast, 0, 2, bc, 1)), 0u);
  bc.recv[0] = a;
  EXPECT_EQ(Wrong(Verify(Api::kBroadcast, 0, 2, bc, 1)), 2u);
  // AlltoAll: rank j receives block j of every rank.
  Bufs a2a{f32, {Encode(f32, {1, 2}), Encode(f32, {3, 4})}, {}};
  a2a.recv = {Encode(f32, {1, 3}), Encode(f32, {2, 4})};
  EXPECT_EQ(Wrong(Verify(Api::kAlltoAll, 0, 1, a2a)), 0u);
  // Send/Recv: rank 0 sent what rank 1 received.
  Bufs p2p{f32, {a, ""}, {"", a}};
  EXPECT_EQ(Wrong(Verify(Api::kSend, 0, 2, p2p)), 0u);
  p2p.recv[1] = c;
  EXPECT_EQ(Wrong(Verify(Api::kSend, 0, 2, p2p)), 2u);
}

TEST(VerifyCaptured, NeededBytesFollowThePlan) {
  const uint8_t f32 = uint8_t(Dtype::kFloat32);
  EXPECT_EQ(CapturedBytesNeeded(Api::kAllGather, f32, 10, 4, 1, -1).recv, 160u);
  EXPECT_EQ(CapturedBytesNeeded(Api::kAllGather, f32, 10, 4, 1, -1).send, 40u);
  EXPECT_EQ(CapturedBytesNeeded(Api::kBroadcast, f32, 10, 4, 1, 0).send, 0u);  // not the root
  EXPECT_EQ(CapturedBytesNeeded(Api::kReduce, f32, 10, 4, 1, 0).recv, 0u);
}

}  // namespace
}  // namespace ncclrr::analysis
