// --capture-filter and --capture BYTES syntax (ncclrr/capture_filter.h): what parses, what a
// call must be to match, and errors that name the expected form.
#include "ncclrr/trace/capture_filter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ncclrr {
namespace {

using ::testing::HasSubstr;

CaptureFilter Parse(const std::string& text) {
  auto f = ParseCaptureFilter(text);
  EXPECT_TRUE(f.ok()) << text << ": " << f.status().message();
  return f.ok() ? *f : CaptureFilter{};
}

TEST(CaptureFilter, EmptyMatchesEverything) {
  const CaptureFilter f = Parse("");
  EXPECT_TRUE(f.empty());
  EXPECT_TRUE(f.Matches(0x1234, 99, Api::kBroadcast, 0, 0));
  EXPECT_TRUE(f.StepMatches(7));
}

TEST(CaptureFilter, CommIsAHexPrefixOfTheHash) {
  const CaptureFilter f = Parse("comm=0xDA7A");
  EXPECT_EQ(f.comm_prefix, "da7a");
  EXPECT_TRUE(f.Matches(0xda7a000000000001ull, 0, Api::kAllReduce, 0, 0));
  EXPECT_FALSE(f.Matches(0x0da7a00000000001ull, 0, Api::kAllReduce, 0, 0));
  EXPECT_TRUE(Parse("comm=da7a000000000001").Matches(0xda7a000000000001ull, 0, Api::kSend, 0, 0));
}

TEST(CaptureFilter, SeqAndStepRangesAndLists) {
  const CaptureFilter f = Parse("seq=3-7,10,step=2");
  ASSERT_EQ(f.seqs.size(), 2u);
  for (uint64_t s : {3, 5, 7, 10}) EXPECT_TRUE(f.Matches(1, s, Api::kAllReduce, 0, 0)) << s;
  for (uint64_t s : {0, 2, 8, 9, 11}) EXPECT_FALSE(f.Matches(1, s, Api::kAllReduce, 0, 0)) << s;
  EXPECT_TRUE(f.NeedsSteps());
  EXPECT_TRUE(f.StepMatches(2));
  EXPECT_FALSE(f.StepMatches(3));
}

TEST(CaptureFilter, OpTakesCallsAndReductions) {
  const CaptureFilter calls = Parse("op=AllReduce,broadcast,send");
  EXPECT_TRUE(calls.Matches(1, 0, Api::kAllReduce, 2, 0));
  EXPECT_TRUE(calls.Matches(1, 0, Api::kBcast, 0, 0));  // ncclBcast is a Broadcast
  EXPECT_TRUE(calls.Matches(1, 0, Api::kSend, 0, 0));
  EXPECT_FALSE(calls.Matches(1, 0, Api::kRecv, 0, 0));
  const CaptureFilter both = Parse("op=allreduce,max");
  EXPECT_TRUE(both.Matches(1, 0, Api::kAllReduce, int32_t(RedOp::kMax), 0));
  EXPECT_FALSE(both.Matches(1, 0, Api::kAllReduce, int32_t(RedOp::kSum), 0));
  EXPECT_FALSE(both.Matches(1, 0, Api::kReduceScatter, int32_t(RedOp::kMax), 0));
  const CaptureFilter premul = Parse("op=premulsum");
  EXPECT_TRUE(premul.Matches(1, 0, Api::kReduce, 7, call_flags::kPreMulSum));
  EXPECT_FALSE(premul.Matches(1, 0, Api::kBroadcast, 0, 0));  // no reduction at all
}

TEST(CaptureFilter, BadSyntaxNamesTheExpectedForm) {
  for (const char* bad : {"seq=3-x", "seq=7-3", "seq=", "comm=xyz", "comm=12345678901234567",
                          "op=frobnicate", "rank=1", "3-7", "seq=1,,2", "comm=1,comm=2"}) {
    auto f = ParseCaptureFilter(bad);
    ASSERT_FALSE(f.ok()) << bad;
    EXPECT_THAT(f.status().message(), HasSubstr("bad --capture-filter item")) << bad;
    EXPECT_THAT(f.status().message(), HasSubstr("comm=HEXPREFIX,seq=A-B,op=NAME,step=A-B")) << bad;
  }
}

TEST(ByteCount, SuffixesArePowersOf1024) {
  EXPECT_EQ(*ParseByteCount("1048576"), 1048576u);
  EXPECT_EQ(*ParseByteCount("64K"), 64u << 10);
  EXPECT_EQ(*ParseByteCount("512m"), 512ull << 20);
  EXPECT_EQ(*ParseByteCount("4GB"), 4ull << 30);
  EXPECT_EQ(*ParseByteCount("2GiB"), 2ull << 30);
  EXPECT_EQ(*ParseByteCount("1T"), 1ull << 40);
  for (const char* bad : {"", "0", "-5", "12Q", "M", "1.5G", "99999999999999999999T"}) {
    auto b = ParseByteCount(bad);
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_THAT(b.status().message(), HasSubstr("512M or 4G")) << bad;
  }
}

}  // namespace
}  // namespace ncclrr
