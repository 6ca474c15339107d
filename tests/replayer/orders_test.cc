// Orderings: permutation search (finds a breaking order where the trace leaves calls unordered,
// none where it does not), explicit order files (and every way to get one wrong), timeouts, and
// byte-identical reports across replays.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include "replay_scripts.h"

namespace ncclrr::testing {
namespace {

using replay::Outcome;
using ::testing::Contains;
using ::testing::HasSubstr;

int Count(const replay::ReplayReport& r, Outcome o) {
  int n = 0;
  for (const replay::OrderResult& x : r.results) n += x.outcome == o;
  return n;
}

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = FreshDir("orderfile-" + name) + "/order.json";
  std::ofstream(path) << text;
  return path;
}

// Two same-size allreduces on two streams: right as recorded, but nothing in the trace fixes
// their order, and a rank that issues them the other way round gets the other tensor's sum.
TEST(Permute, FindsABreakingOrderOfUnorderedCalls) {
  auto model = WriteAndLoad(TwoStreamScript(), "two-streams");
  ASSERT_NE(model, nullptr);
  const replay::ReplayReport r = MustReplay(*model, TestOptions("recorded,permute:8"));
  ASSERT_EQ(r.results.size(), 9u);
  EXPECT_EQ(r.results[0].outcome, Outcome::kRight);
  EXPECT_GE(Count(r, Outcome::kWrong), 1) << replay::FormatText(r);
  for (size_t t = 1; t < r.results.size(); ++t) {
    const replay::OrderResult& o = r.results[t];
    EXPECT_EQ(o.trial, static_cast<int>(t - 1));
    if (o.outcome == Outcome::kWrong) {
      EXPECT_GT(o.moved_calls, 0u);
      EXPECT_THAT(o.explanation, Contains(HasSubstr("swapped on rank")));
      EXPECT_FALSE(o.order_json.empty());
    }
  }
}

// A trace that shows no unordered calls is replayed once, in its recorded order.
TEST(Permute, CleanHasNoBreakingOrder) {
  auto model = WriteAndLoad(ExampleScript("clean"), "permute-clean");
  ASSERT_NE(model, nullptr);
  const replay::ReplayReport r = MustReplay(*model, TestOptions("permute:8"));
  ASSERT_EQ(r.results.size(), 1u);
  EXPECT_EQ(r.results[0].outcome, Outcome::kRight);
  EXPECT_EQ(r.results[0].moved_calls, 0u);
  EXPECT_THAT(r.results[0].explanation, Contains(HasSubstr("no unordered calls")));
  EXPECT_EQ(r.ExitCode(), 0);
}

// Tensors whose order varies across steps may go either way on any rank.
TEST(Permute, VaryingOrderAcrossStepsIsExplored) {
  auto model = WriteAndLoad(ExampleScript("swap-same-size"), "permute-swap");
  ASSERT_NE(model, nullptr);
  const replay::ReplayReport r = MustReplay(*model, TestOptions("permute:6"));
  EXPECT_EQ(r.results.size(), 6u);
  EXPECT_GE(Count(r, Outcome::kWrong), 1);
  EXPECT_THAT(replay::SummaryLine(r), HasSubstr("permute:6: "));
}

// Two communicators used in either order: orders that agree complete, orders that disagree
// deadlock, and each hang is reported (not waited out).
TEST(Permute, CrossCommunicatorOrdersHangOrNot) {
  auto model = WriteAndLoad(ExampleScript("cross-comm-order", 2, 2), "permute-cross");
  ASSERT_NE(model, nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  const replay::ReplayReport r = MustReplay(*model, TestOptions("permute:8", 0.3));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(Count(r, Outcome::kHang), 1) << replay::FormatText(r);
  EXPECT_GE(Count(r, Outcome::kRight), 1) << replay::FormatText(r);
  EXPECT_EQ(Count(r, Outcome::kError), 0);
  EXPECT_LT(s, 8 * 3.0);
}

// A permute trial's order, saved as a file, replays to the same verdict.
TEST(OrderFile, PermuteTrialRoundTrips) {
  auto model = WriteAndLoad(TwoStreamScript(), "trial-roundtrip");
  ASSERT_NE(model, nullptr);
  const replay::ReplayReport r = MustReplay(*model, TestOptions("permute:8"));
  const replay::OrderResult* failing = nullptr;
  for (const replay::OrderResult& o : r.results)
    if (o.outcome == Outcome::kWrong) failing = &o;
  ASSERT_NE(failing, nullptr);
  // Compact, members in the documented order (docs/replay.md).
  EXPECT_THAT(
      failing->order_json,
      ::testing::StartsWith(R"({"format":"ncclrr-order","version":1,"ranks":[{"comm":"0x)"));
  const std::string path = WriteFile("trial", failing->order_json);
  const replay::ReplayReport again = MustReplay(*model, TestOptions("file:" + path));
  ASSERT_EQ(again.results.size(), 1u);
  EXPECT_EQ(again.results[0].outcome, Outcome::kWrong);
  EXPECT_EQ(again.results[0].wrong_calls, failing->wrong_calls);
  EXPECT_EQ(again.results[0].wrong_elements, failing->wrong_elements);
}

// "order" permutes one rank's collectives: undoing rank 1's swaps fixes swap-same-size, and
// swapping two same-size calls of a clean run breaks it.
TEST(OrderFile, PermutationFixesAndBreaks) {
  auto swap = WriteAndLoad(ExampleScript("swap-same-size"), "file-fix");
  ASSERT_NE(swap, nullptr);
  const std::string fix = WriteFile("fix", R"({"format": "ncclrr-order", "version": 1, "ranks": [
        {"comm": "dp", "rank": 1, "order": [0,1,2,3, 5,4,6,7, 8,9,10,11, 13,12,14,15]}]})");
  EXPECT_EQ(MustReplay(*swap, TestOptions("file:" + fix)).results[0].outcome, Outcome::kRight);

  auto clean = WriteAndLoad(ExampleScript("clean"), "file-break");
  ASSERT_NE(clean, nullptr);
  const std::string brk = WriteFile("break", R"({"format": "ncclrr-order", "version": 1, "ranks": [
        {"comm": "0x7e57000000000001", "rank": 0, "order": [1,0,2,3,4,5,6,7,8,9,10,11,12,13,14,15]}]})");
  const replay::ReplayReport r = MustReplay(*clean, TestOptions("file:" + brk));
  EXPECT_EQ(r.results[0].outcome, Outcome::kWrong);
  EXPECT_EQ(r.results[0].wrong_steps, 1u);
  EXPECT_EQ(r.results[0].order, "file:" + brk);
}

struct BadFile {
  const char* name;
  const char* text;  // nullptr: the file does not exist
  const char* message;
};

// Nested far deeper than an order file goes: refused, not parsed into a crash.
const char* DeepFile() {
  static const std::string text(100, '[');
  return text.c_str();
}

class MalformedOrderFile : public ::testing::TestWithParam<BadFile> {};

TEST_P(MalformedOrderFile, IsRejectedWithAClearMessage) {
  static auto model = WriteAndLoad(ExampleScript("swap-same-size"), "malformed");
  ASSERT_NE(model, nullptr);
  const BadFile b = GetParam();
  const std::string path = b.text ? WriteFile(b.name, b.text) : "/nonexistent/order.json";
  auto r = replay::Replay(*model, TestOptions("file:" + path));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr(b.message));
  if (b.text) {
    EXPECT_THAT(r.status().message(), HasSubstr("docs/replay.md"));
  }
}

void PrintTo(const BadFile& b, std::ostream* os) { *os << b.name; }

INSTANTIATE_TEST_SUITE_P(
    All, MalformedOrderFile,
    ::testing::Values(
        BadFile{"missing", nullptr, "cannot open order file"},
        // Syntax errors say where, as nlohmann-json reports it.
        BadFile{"syntax", "{\"format\": \"ncclrr-order\",\n  \"version\": 1,\n  \"ranks\": [}",
                "': line 3, column 13: syntax error while parsing value - unexpected '}'"},
        BadFile{"trailing", "{} x",
                "line 1, column 4: syntax error while parsing value - invalid literal; last read: "
                "'{} x'; expected end of input"},
        BadFile{"unterminated", "{\"format\": \"ncclrr-order",
                "line 1, column 25: syntax error while parsing value - invalid string: missing "
                "closing quote"},
        BadFile{"deep", DeepFile(), "expected at most 64 nested arrays or objects"},
        BadFile{"format", R"({"version": 1, "ranks": []})", "\"format\": \"ncclrr-order\""},
        BadFile{"version", R"({"format": "ncclrr-order", "version": 7, "ranks": []})",
                "\"version\": 1"},
        BadFile{"unknown_member", R"({"format": "ncclrr-order", "version": 1, "rank": []})",
                "unknown member \"rank\""},
        // Errors about a value say where it is as a JSON path.
        BadFile{"no_comm", R"({"format": "ncclrr-order", "version": 1, "ranks": [{"rank": 0,
                "order": []}]})",
                "', ranks[0]: expected \"comm\""},
        BadFile{"unknown_comm", R"({"format": "ncclrr-order", "version": 1, "ranks": [
                {"comm": "0x1234", "rank": 0, "order": []}]})",
                "ranks[0].comm: no communicator \"0x1234\" in this trace; it has "
                "0x7e57000000000001 (dp)"},
        BadFile{"rank_range", R"({"format": "ncclrr-order", "version": 1, "ranks": [
                {"comm": "dp", "rank": 5, "order": []}]})",
                "ranks[0].rank: comm 0x7e57000000000001 (dp) has ranks 0..1, not 5"},
        BadFile{"both", R"({"format": "ncclrr-order", "version": 1, "ranks": [
                {"comm": "dp", "rank": 0, "order": [], "sequence": []}]})",
                "ranks[0]: expected exactly one of \"order\""},
        BadFile{"short", R"({"format": "ncclrr-order", "version": 1, "ranks": [
                {"comm": "dp", "rank": 0, "order": [1, 0]}]})",
                "ranks[0].order: \"order\" lists 2 calls but comm 0x7e57000000000001 (dp) rank 0 "
                "issued 16"},
        BadFile{"duplicate", R"({"format": "ncclrr-order", "version": 1, "ranks": [
                {"comm": "dp", "rank": 0, "order": [0, 0]}]})",
                "ranks[0].order[1]: seq 0 is listed twice"},
        BadFile{"no_such_seq", R"({"format": "ncclrr-order", "version": 1, "ranks": [
                {"comm": "dp", "rank": 0, "order": [99]}]})",
                "ranks[0].order[0]: comm 0x7e57000000000001 (dp) rank 0 has no recorded collective "
                "at seq 99"},
        // Seqs and ranks are integers as written: exactly, up to 2^64-1; never fractions or
        // negative (not even -0).
        BadFile{"huge_seq", R"({"format": "ncclrr-order", "version": 1, "ranks": [
                {"comm": "dp", "rank": 0, "order": [2, 18446744073709551615]}]})",
                "ranks[0].order[1]: comm 0x7e57000000000001 (dp) rank 0 has no recorded collective "
                "at seq 18446744073709551615"},
        BadFile{"fraction", R"({"format": "ncclrr-order", "version": 1, "ranks": [
                {"comm": "dp", "rank": 0, "order": [0, 1.0]}]})",
                "ranks[0].order[1]: \"order\" holds a non-integer"},
        BadFile{"negative", R"({"format": "ncclrr-order", "version": 1, "ranks": [
                {"comm": "dp", "rank": -1, "order": []}]})",
                "ranks[0]: expected \"rank\": a non-negative integer"},
        BadFile{"minus_zero", R"({"format": "ncclrr-order", "version": 1, "ranks": [
                {"comm": "dp", "rank": -0, "order": []}]})",
                "ranks[0]: expected \"rank\": a non-negative integer"},
        BadFile{"sequence_short", R"({"format": "ncclrr-order", "version": 1, "ranks": [
                {"comm": "dp", "rank": 1, "sequence": [{"comm": "dp", "seq": 1}]}]})",
                "ranks[0].sequence: \"sequence\" for "},
        BadFile{"sequence_missing", R"({"format": "ncclrr-order", "version": 1, "ranks": [
                {"comm": "dp", "rank": 1, "sequence": [{"comm": "dp", "seq": 1}]}]})",
                "lists 1 of its 16 calls (missing: comm 0x7e57000000000001 (dp) seq 0"},
        BadFile{"sequence_element", R"({"format": "ncclrr-order", "version": 1, "ranks": [
                {"comm": "dp", "rank": 1, "sequence": [{"comm": "dp", "seq": 0},
                                                       {"comm": "dp", "seq": 99}]}]})",
                "ranks[0].sequence[1]: comm 0x7e57000000000001 (dp) rank 1 has no recorded "
                "collective at seq 99"},
        BadFile{"sequence_p2p", R"({"format": "ncclrr-order", "version": 1, "ranks": [
                {"comm": "dp", "rank": 1, "sequence": [{"comm": "dp", "send_to": 0}]}]})",
                "ranks[0].sequence[0]: expected \"n\": a non-negative integer"},
        BadFile{"twice", R"({"format": "ncclrr-order", "version": 1, "ranks": [
                {"comm": "dp", "rank": 1, "order": [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]},
                {"comm": "dp", "rank": 1, "order": [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]}]})",
                "ranks[1]: two entries change the order of"}),
    [](const auto& test) { return std::string(test.param.name); });

// Two replays of one trace give byte-identical reports, text and JSON, whatever the timing.
TEST(Determinism, ReportsAreByteIdentical) {
  auto model = WriteAndLoad(ExampleScript("swap-same-size"), "determinism");
  ASSERT_NE(model, nullptr);
  const auto options = TestOptions("recorded,canonical,permute:4");
  const replay::ReplayReport a = MustReplay(*model, options), b = MustReplay(*model, options);
  EXPECT_EQ(replay::FormatText(a), replay::FormatText(b));
  EXPECT_EQ(replay::FormatJson(a), replay::FormatJson(b));
  auto other_seed = options;
  other_seed.seed = 2;
  const replay::ReplayReport c = MustReplay(*model, other_seed);
  EXPECT_EQ(replay::SummaryLine(a).substr(0, 60), replay::SummaryLine(c).substr(0, 60));
}

// A hang ends at the timeout with the stuck positions, never later than it must.
TEST(Timeout, HangEndsAtTheTimeout) {
  auto model = WriteAndLoad(ExampleScript("p2p-mismatch"), "timeout");
  ASSERT_NE(model, nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  const replay::ReplayReport r = MustReplay(*model, TestOptions("recorded", 0.4));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.results[0].outcome, Outcome::kHang);
  EXPECT_GE(s, 0.4);
  EXPECT_LT(s, 5.0);
  ASSERT_FALSE(r.results[0].stuck.empty());
  EXPECT_THAT(r.results[0].stuck[0].why, HasSubstr("sizes or datatypes differ"));
  EXPECT_EQ(r.ExitCode(), 1);
}

}  // namespace
}  // namespace ncclrr::testing
