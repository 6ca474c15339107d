// Every example scenario replayed on the host NCCL in the recorded and canonical orders: the
// verdicts say which bugs are ordering bugs (canonical fixes them) and which are not.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "replay_scripts.h"

namespace ncclrr::testing {
namespace {

using replay::Outcome;
using ::testing::AnyOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::StartsWith;

struct Expectation {
  const char* scenario;
  Outcome recorded;
  Outcome canonical;
};

void PrintTo(const Expectation& e, std::ostream* os) { *os << e.scenario; }

class ScenarioReplay : public ::testing::TestWithParam<Expectation> {};

TEST_P(ScenarioReplay, RecordedAndCanonicalVerdicts) {
  const Expectation e = GetParam();
  auto model = WriteAndLoad(ExampleScript(e.scenario), std::string("scn-") + e.scenario);
  ASSERT_NE(model, nullptr);
  const replay::ReplayReport r = MustReplay(*model, TestOptions("recorded,canonical", 0.5));
  ASSERT_EQ(r.results.size(), 2u);
  EXPECT_EQ(r.results[0].outcome, e.recorded) << replay::FormatText(r);
  EXPECT_EQ(r.results[1].outcome, e.canonical) << replay::FormatText(r);
  EXPECT_EQ(r.ExitCode(), e.recorded == Outcome::kRight && e.canonical == Outcome::kRight ? 0 : 1);
  for (const replay::OrderResult& o : r.results) {
    EXPECT_TRUE(o.error.empty()) << o.error;
    if (o.outcome == Outcome::kHang) {
      EXPECT_FALSE(o.stuck.empty()) << replay::FormatText(r);
    }
    if (o.outcome == Outcome::kWrong) {
      EXPECT_GT(o.wrong_elements, 0u);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Examples, ScenarioReplay,
    ::testing::Values(Expectation{"clean", Outcome::kRight, Outcome::kRight},
                      Expectation{"swap-same-size", Outcome::kWrong, Outcome::kRight},
                      Expectation{"swap-diff-size", Outcome::kWrong, Outcome::kRight},
                      Expectation{"count-mismatch", Outcome::kWrong, Outcome::kWrong},
                      Expectation{"missing-collective", Outcome::kHang, Outcome::kHang},
                      Expectation{"send-race", Outcome::kRight, Outcome::kRight},
                      Expectation{"dtype-mismatch", Outcome::kWrong, Outcome::kWrong},
                      Expectation{"root-mismatch", Outcome::kWrong, Outcome::kWrong},
                      Expectation{"p2p-mismatch", Outcome::kHang, Outcome::kHang},
                      Expectation{"cross-comm-order", Outcome::kHang, Outcome::kRight}),
    [](const auto& test) {
      std::string n = test.param.scenario;
      for (char& c : n)
        if (c == '-') c = '_';
      return n;
    });

// The motivating bug: rank 1 swaps two same-size gradients on odd steps. The replay names the
// swap, counts exactly the swapped tensors wrong, and the canonical order fixes it.
TEST(ScenarioDetails, SwapSameSizeExplained) {
  auto model = WriteAndLoad(ExampleScript("swap-same-size"), "swap-explained");
  ASSERT_NE(model, nullptr);
  const replay::ReplayReport r = MustReplay(*model, TestOptions("recorded,canonical"));
  const replay::OrderResult& rec = r.results[0];
  EXPECT_EQ(rec.steps, 4u);
  EXPECT_EQ(rec.wrong_steps, 2u);
  EXPECT_EQ(rec.wrong_calls, 8u);  // 2 tensors x 2 ranks x 2 odd steps
  EXPECT_THAT(rec.explanation, Contains("seq 4\u20135, 12\u201313 swapped on rank 1"));
  EXPECT_EQ(
      replay::SummaryLine(r),
      "recorded order: 2 of 4 steps wrong: 1, 3 (seq 4\u20135, 12\u201313 swapped on rank 1); "
      "canonical order: 0 wrong");
  for (const replay::WrongCall& w : rec.wrong) {
    EXPECT_TRUE(w.seq == 4 || w.seq == 5 || w.seq == 12 || w.seq == 13) << w.seq;
    EXPECT_THAT(w.logical, AnyOf(StartsWith("step 1, call "), StartsWith("step 3, call ")));
    EXPECT_FALSE(w.args_differ);
  }
  EXPECT_EQ(r.results[1].moved_calls, 4u);  // rank 1's two swapped pairs move back
}

// Count mismatch (NCCL issue 1417): only the two elements rank 1 left out are wrong, on rank 0,
// in every step and in every order.
TEST(ScenarioDetails, CountMismatchTail) {
  auto model = WriteAndLoad(ExampleScript("count-mismatch"), "count-tail");
  ASSERT_NE(model, nullptr);
  const replay::ReplayReport r = MustReplay(*model, TestOptions("canonical"));
  const replay::OrderResult& o = r.results[0];
  EXPECT_EQ(o.wrong_calls, 4u);
  EXPECT_EQ(o.wrong_elements, 8u);
  for (const replay::WrongCall& w : o.wrong) {
    EXPECT_EQ(w.rank, 0);
    EXPECT_EQ(w.first_wrong, 1022u);
    EXPECT_TRUE(w.args_differ);
  }
}

// Replays `scenario` in the recorded order, expects a hang with both ranks stuck at `seq` for a
// reason containing `why`, and returns the explanation lines.
std::vector<std::string> ExpectHangAt(const char* scenario, uint64_t seq, const char* why) {
  auto model = WriteAndLoad(ExampleScript(scenario), std::string("hang-") + scenario);
  if (model == nullptr) return {};
  const replay::ReplayReport r = MustReplay(*model, TestOptions("recorded", 0.5));
  const replay::OrderResult& o = r.results[0];
  EXPECT_EQ(o.outcome, Outcome::kHang);
  EXPECT_EQ(o.stuck.size(), 2u) << replay::FormatText(r);
  for (const replay::StuckCall& s : o.stuck) {
    EXPECT_EQ(s.seq, seq);
    EXPECT_THAT(s.why, HasSubstr(why));
  }
  return o.explanation;
}

// A hang is reported with where each rank stood, not waited out.
TEST(ScenarioDetails, CrossCommunicatorDeadlockIsExplained) {
  EXPECT_THAT(ExpectHangAt("cross-comm-order", 1, "another communicator"),
              Contains(HasSubstr("opposite order")));
}

// Rank 1 skips one allreduce in step 1: from there NCCL pairs its broadcast with rank 0's
// allreduce, which the host NCCL cannot complete. The replay names the skip and the stuck pair.
TEST(ScenarioDetails, MissingCollectiveNamesTheSkippedCall) {
  EXPECT_THAT(
      ExpectHangAt("missing-collective", 6, "cannot complete together"),
      Contains("rank 1 is 1 call(s) ahead from seq 5 (the call it skipped: step 1, call 1)"));
}

// Every API and datatype (reduction ops, rooted calls, in-place Bcast, send/recv): a correct
// program replays right, which checks the reference of each against the host NCCL.
TEST(ScenarioDetails, EveryApiReplaysRight) {
  auto model = WriteAndLoad(EveryApiScript(3), "every-api");
  ASSERT_NE(model, nullptr);
  const replay::ReplayReport r = MustReplay(*model, TestOptions("recorded"));
  const replay::OrderResult& o = r.results[0];
  EXPECT_EQ(o.outcome, Outcome::kRight) << replay::FormatText(r);
  EXPECT_EQ(o.calls, 23u * 3);
  EXPECT_GE(o.checked_calls, 20u * 3);
}

}  // namespace
}  // namespace ncclrr::testing
