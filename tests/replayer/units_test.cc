// Small pieces of the replayer: order syntax, the JSON reader/writer, the ring arena, and the
// synthetic values that must stay exact under reduction.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "data.h"
#include "json.h"
#include "ncclrr/replay/options.h"
#include "ring_arena.h"

namespace ncclrr::replay {
namespace {

using ::testing::HasSubstr;

TEST(OrderSpecs, Parse) {
  auto s = ParseOrderSpecs("recorded,canonical,permute,permute:3,file:/a,b.json");
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->size(), 5u);
  EXPECT_EQ((*s)[2].Label(), "permute:8");
  EXPECT_EQ((*s)[3].trials, 3);
  EXPECT_EQ((*s)[4].file, "/a,b.json");  // a file takes the rest, commas included
  for (const char* bad : {"", "sideways", "permute:0", "permute:x", "file:", "recorded,"}) {
    auto r = ParseOrderSpecs(bad);
    EXPECT_FALSE(r.ok()) << bad;
  }
  EXPECT_THAT(ParseOrderSpecs("sideways").status().message(),
              HasSubstr("expected recorded, canonical, permute, permute:N or file:PATH"));
}

TEST(JsonValue, RoundTripAndErrors) {
  auto j = Json::Parse(
      R"({"a": [1, -2, 3.5, true, null], "s": "x\"\u00e9\n", "big": 18446744073709551615})");
  ASSERT_TRUE(j.ok()) << j.status().message();
  uint64_t big = 0;
  EXPECT_TRUE(j->Find("big")->AsUint(&big));
  EXPECT_EQ(big, 18446744073709551615ull);
  int64_t neg = 0;
  EXPECT_TRUE(j->Find("a")->items()[1].AsInt(&neg));
  EXPECT_EQ(neg, -2);
  EXPECT_FALSE(j->Find("a")->items()[2].AsInt(&neg));
  EXPECT_EQ(j->Find("s")->str(), "x\"\xc3\xa9\n");
  EXPECT_EQ(j->Serialize(-1),
            R"({"a":[1,-2,3.5,true,null],"s":"x\"é\u000a","big":18446744073709551615})");
  EXPECT_THAT(Json::Parse("[1,\n 2,,]").status().message(), HasSubstr("line 2, column 4"));
  EXPECT_THAT(Json::Parse("\"abc").status().message(), HasSubstr("a closing '\"'"));
  EXPECT_THAT(Json::Parse(std::string(100, '[')).status().message(), HasSubstr("at most 64"));
  EXPECT_FALSE(Json::Parse("nul").ok());
  EXPECT_FALSE(Json::Parse("{\"a\" 1}").ok());
}

TEST(RingArena, AllocatesAndFreesInOrder) {
  RingArena a(1000);
  EXPECT_EQ(a.Allocate(400), 0u);
  EXPECT_EQ(a.Allocate(400), 400u);
  EXPECT_FALSE(a.Allocate(400).has_value());  // 200 left at the end, nothing at the front
  a.FreeOldest();
  EXPECT_EQ(a.Allocate(300), 0u);  // wraps to the front
  EXPECT_FALSE(a.Allocate(200).has_value());
  a.FreeOldest();
  EXPECT_EQ(a.Allocate(500), 300u);
  EXPECT_FALSE(a.Allocate(2000).has_value());
  a.FreeOldest();
  a.FreeOldest();
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(a.Allocate(1000), 0u);
}

// Synthetic inputs are small integers: exact in every type, sums over 16 ranks exact in
// float32 and bfloat16, and the same for the same (seed, key, rank, index).
TEST(SyntheticData, ExactAndDeterministic) {
  for (uint8_t dtype = 0; dtype < kNumDtypes; ++dtype) {
    double sum = 0;
    for (int rank = 0; rank < 16; ++rank)
      for (uint64_t i = 0; i < 64; ++i) {
        const double v = SyntheticValue(7, 42, rank, i, dtype, false);
        EXPECT_EQ(v, std::trunc(v));
        EXPECT_EQ(v, SyntheticValue(7, 42, rank, i, dtype, false));
        if (dtype == static_cast<uint8_t>(Dtype::kBfloat16)) sum += v;
      }
    EXPECT_LE(std::fabs(sum), 16 * 64 * 8.0);
  }
  for (int i = 0; i < 100; ++i) {
    const double p = SyntheticValue(1, 2, 3, static_cast<uint64_t>(i), 7, true);
    EXPECT_TRUE(p == -2 || p == -1 || p == 1 || p == 2) << p;
  }
  EXPECT_NE(SyntheticValue(1, 2, 0, 0, 7, false) + SyntheticValue(1, 2, 0, 1, 7, false) +
                SyntheticValue(1, 2, 0, 2, 7, false),
            SyntheticValue(2, 2, 0, 0, 7, false) + SyntheticValue(2, 2, 0, 1, 7, false) +
                SyntheticValue(2, 2, 0, 2, 7, false));
}

}  // namespace
}  // namespace ncclrr::replay
