// The cross-rank output comparison behind output_divergence
// (analysis/src/checks/output_divergence.h), on sketches computed by the host sketch from real
// buffers laid out as the interposer sketches them (plan.h): equal outputs never diverge, whatever
// the collective, datatype or size; one changed element on one rank always does; partial sketches
// and per-rank outputs say nothing.
#include "checks/output_divergence.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "ncclrr/sketch/plan.h"
#include "ncclrr/sketch/sketch.h"

namespace ncclrr::analysis {
namespace {

// Bytes whose every element is finite in every float type (no byte above 0x3f, so no exponent
// is all ones), varied enough that sketches of different buffers differ.
std::vector<uint8_t> Output(uint64_t elems, uint8_t dtype) {
  std::vector<uint8_t> b(elems * DtypeSize(dtype));
  for (size_t i = 0; i < b.size(); ++i) b[i] = uint8_t((i * 37 + i / 7 + 11) & 0x3f);
  return b;
}

// The recv sketches rank `rank` records of `out` (its whole recv buffer).
std::vector<SketchData> RecvSketches(Api api, uint8_t dtype, uint64_t count, int nranks, int rank,
                                     const std::vector<uint8_t>& out) {
  const auto plan = sketch::PlanCall(api, dtype, count, nranks, rank, 0, false).value();
  sketch::SketchRequest req;
  req.layout = *plan.recv;
  req.mode = sketch::SketchMode::kFull;
  std::vector<SketchData> blocks = sketch::SketchHost(out.data(), req).value().blocks;
  for (SketchData& s : blocks) s.which = SketchWhich::kRecvAfter;
  return blocks;
}

uint64_t RecvElems(Api api, uint64_t count, int nranks) {
  return api == Api::kAllGather ? count * uint64_t(nranks) : count;
}

struct Call {
  std::vector<std::vector<SketchData>> store;  // per rank
  std::vector<int> ranks;
  std::vector<OutputProof> proof;

  Call(Api api, uint8_t dtype, uint64_t count, const std::vector<std::vector<uint8_t>>& outs) {
    for (size_t r = 0; r < outs.size(); ++r) {
      store.push_back(RecvSketches(api, dtype, count, int(outs.size()), int(r), outs[r]));
      ranks.push_back(int(r));
      proof.push_back(OutputProof::kNone);
    }
  }
  std::vector<CallSketches> Sketches() const {
    std::vector<CallSketches> sk(store.size());
    for (size_t r = 0; r < store.size(); ++r)
      for (const SketchData& s : store[r]) sk[r].recv.push_back(&s);
    return sk;
  }
};

std::optional<OutputDivergence> Compare(Api api, const Call& c) {
  return CompareOutputs(api, c.Sketches(), c.ranks, c.proof);
}

constexpr Api kIdentical[] = {Api::kAllReduce, Api::kBroadcast, Api::kAllGather};

TEST(OutputDivergence, EqualOutputsNeverDivergeForAnyCollectiveDtypeOrSize) {
  for (Api api : kIdentical)
    for (uint8_t dtype = 0; dtype < kNumDtypes; ++dtype)
      for (uint64_t count : {1u, 7u, 300u, 4097u, 70000u}) {
        const std::vector<uint8_t> out = Output(RecvElems(api, count, 4), dtype);
        const Call c(api, dtype, count, {out, out, out, out});
        EXPECT_FALSE(Compare(api, c)) << ApiName(api) << " " << DtypeName(dtype) << " " << count;
      }
}

TEST(OutputDivergence, OneChangedElementOnOneRankOfFourNamesThatRank) {
  for (Api api : kIdentical)
    for (uint8_t dtype = 0; dtype < kNumDtypes; ++dtype)
      for (uint64_t count : {1u, 7u, 300u, 4097u, 70000u}) {
        const uint64_t elems = RecvElems(api, count, 4);
        const std::vector<uint8_t> out = Output(elems, dtype);
        std::vector<uint8_t> bad = out;
        // The element's top byte (exponent, or high integer bits) set to 0x3f, the largest any
        // element has: a change as large as the largest values, which no rounding of the
        // sketch's partial sums can hide (one of the tiny values changed by a tiny amount can
        // vanish in them: docs/sketches.md).
        const size_t e = DtypeSize(dtype);
        uint8_t& top = bad[(elems / 2) * e + e - 1];
        top = top == 0x3f ? 0x1f : 0x3f;
        const Call c(api, dtype, count, {out, out, bad, out});
        const auto d = Compare(api, c);
        const std::string what = std::string(ApiName(api)) + " " + std::string(DtypeName(dtype)) +
                                 " " + std::to_string(count);
        ASSERT_TRUE(d) << what;
        EXPECT_EQ(d->ranks, std::vector<int>{2}) << what;
        EXPECT_EQ(d->reference, (std::vector<int>{0, 1, 3})) << what;
        EXPECT_EQ(d->outputs, 2) << what;
        EXPECT_EQ(d->rank, 2);
        EXPECT_EQ(d->other, 0);
        EXPECT_FALSE(d->diff.same()) << what;
        EXPECT_LE(d->first, elems / 2) << what;
        EXPECT_GT(d->first + d->count, elems / 2) << what;
        EXPECT_FALSE(d->by_identity);
      }
}

TEST(OutputDivergence, AOneToOneTieNamesBothRanksUnlessTheIdentitySettlesIt) {
  const uint8_t f32 = uint8_t(Dtype::kFloat32);
  std::vector<uint8_t> out = Output(1000, f32), bad = out;
  bad[3] ^= 0x01;
  Call c(Api::kAllReduce, f32, 1000, {out, bad});
  auto d = Compare(Api::kAllReduce, c);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->ranks, (std::vector<int>{0, 1}));
  EXPECT_TRUE(d->reference.empty());
  // Both outputs within the tolerance (the identity holds for both): still a tie.
  c.proof = {OutputProof::kRight, OutputProof::kRight};
  EXPECT_EQ(Compare(Api::kAllReduce, c)->ranks, (std::vector<int>{0, 1}));
  // Only one proven either way: still a tie.
  c.proof = {OutputProof::kRight, OutputProof::kNone};
  EXPECT_EQ(Compare(Api::kAllReduce, c)->ranks, (std::vector<int>{0, 1}));
  // The identity (or the captured buffers) proves rank 0's output right and rank 1's wrong.
  c.proof = {OutputProof::kRight, OutputProof::kWrong};
  d = Compare(Api::kAllReduce, c);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->ranks, std::vector<int>{1});
  EXPECT_EQ(d->reference, std::vector<int>{0});
  EXPECT_TRUE(d->by_identity);
}

// Two ranks got the same wrong bytes (say, from one faulty link they both read through) and the
// identity proves the third one's output right: the two are named, though a majority.
TEST(OutputDivergence, TheIdentityOutweighsTheMajority) {
  const uint8_t f16 = uint8_t(Dtype::kFloat16);
  std::vector<uint8_t> out = Output(2000, f16), bad = out;
  bad[101] ^= 0x20;
  Call c(Api::kAllReduce, f16, 2000, {bad, bad, out});
  EXPECT_EQ(Compare(Api::kAllReduce, c)->ranks, std::vector<int>{2});  // the majority's view
  c.proof = {OutputProof::kWrong, OutputProof::kWrong, OutputProof::kRight};
  const auto d = Compare(Api::kAllReduce, c);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(d->reference, std::vector<int>{2});
  EXPECT_TRUE(d->by_identity);
}

TEST(OutputDivergence, ThreeDifferentOutputsHaveNoMajority) {
  const uint8_t i32 = uint8_t(Dtype::kInt32);
  std::vector<uint8_t> a = Output(64, i32), b = a, c = a;
  b[0] ^= 1;
  c[4] ^= 1;
  const Call call(Api::kBroadcast, i32, 64, {a, b, c});
  const auto d = Compare(Api::kBroadcast, call);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(d->outputs, 3);
  // Every element is sampled (64 <= 256): the first differing one is named with its values.
  ASSERT_TRUE(d->element);
  EXPECT_EQ(*d->element, 0u);
  EXPECT_EQ(d->rank, 0);
  EXPECT_EQ(d->other, 1);
}

TEST(OutputDivergence, PerRankOutputsAreNeverCompared) {
  const uint8_t f32 = uint8_t(Dtype::kFloat32);
  for (Api api : {Api::kReduceScatter, Api::kReduce, Api::kAlltoAll, Api::kGather, Api::kScatter}) {
    std::vector<uint8_t> out = Output(64, f32), other = out;
    other[1] ^= 0x10;
    Call c(Api::kAllReduce, f32, 64, {out, other});
    EXPECT_FALSE(Compare(api, c)) << ApiName(api);
  }
}

TEST(OutputDivergence, PartialSketchesSayNothing) {
  const uint8_t bf16 = uint8_t(Dtype::kBfloat16);
  std::vector<uint8_t> out = Output(3 * 500, bf16), bad = out;
  bad[10] ^= 0x20;
  // A rank without any recv sketch.
  Call none(Api::kAllReduce, bf16, 500, {out, bad, out});
  none.store[1].clear();
  EXPECT_FALSE(Compare(Api::kAllReduce, none));
  // An AllGather rank that lost one of its three blocks (the one that differs, here).
  Call part(Api::kAllGather, bf16, 500, {out, bad, out});
  part.store[1].erase(part.store[1].begin());
  EXPECT_FALSE(Compare(Api::kAllGather, part));
}

TEST(OutputDivergence, NanPayloadsAreNotADifference) {
  const uint8_t f32 = uint8_t(Dtype::kFloat32);
  std::vector<float> a(600, 1.5f), b;
  a[17] = std::nanf("");
  b = a;
  uint32_t bits;
  std::memcpy(&bits, &b[17], 4);
  bits ^= 0x80000001u;  // another NaN: sign and payload
  std::memcpy(&b[17], &bits, 4);
  ASSERT_TRUE(std::isnan(b[17]));
  auto bytes = [](const std::vector<float>& v) {
    std::vector<uint8_t> o(v.size() * 4);
    std::memcpy(o.data(), v.data(), o.size());
    return o;
  };
  const Call c(Api::kAllReduce, f32, 600, {bytes(a), bytes(b)});
  EXPECT_FALSE(Compare(Api::kAllReduce, c));
  // A NaN where the other rank has a number is one.
  std::vector<float> n = a;
  n[18] = std::nanf("");
  const Call d(Api::kAllReduce, f32, 600, {bytes(a), bytes(n)});
  const auto dv = Compare(Api::kAllReduce, d);
  ASSERT_TRUE(dv);
  EXPECT_TRUE(dv->diff.counts);
}

}  // namespace
}  // namespace ncclrr::analysis
