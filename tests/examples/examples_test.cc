// Runs every ncclrr-example scenario as a subprocess on the host NCCL and checks its exit code
// and output: the contract in docs/design.md (0 right, 1 #wrong > 0, 3 hang).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>

#include "ncclrr/testing/run_program.h"

namespace {

using Result = ncclrr::testing::CommandResult;

Result RunExample(const std::string& args) {
  return ncclrr::testing::RunShell("NCCLRR_HOST_TIMEOUT_MS=300 " +
                                   ncclrr::testing::TestProgram("ncclrr-example") + " " + args +
                                   " 2>/dev/null");
}

using Case = std::tuple<const char*, int>;  // scenario, exit code on the host NCCL (threads)

class ExampleScenario : public ::testing::TestWithParam<std::tuple<Case, bool>> {};

TEST_P(ExampleScenario, ExitCodeAndReport) {
  const auto [c, group] = GetParam();
  const auto [name, expected] = c;
  // Group mode has one difference: a single group per step launches both communicators' calls
  // together, so opposite orders across communicators cannot deadlock.
  const int want = group && std::string(name) == "cross-comm-order" ? 0 : expected;
  const Result r = RunExample(std::string(name) + (group ? " --group" : ""));
  EXPECT_EQ(r.code, want) << r.out;
  if (want == 3) {
    EXPECT_THAT(r.out, ::testing::HasSubstr("#hang"));
  } else {
    EXPECT_THAT(r.out, ::testing::HasSubstr("step 0: #wrong "));
    EXPECT_THAT(r.out, ::testing::HasSubstr(want == 0 ? "total: #wrong 0\n" : "total: #wrong "));
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, ExampleScenario,
    ::testing::Combine(::testing::Values(Case{"clean", 0}, Case{"swap-same-size", 1},
                                         Case{"swap-diff-size", 1}, Case{"count-mismatch", 1},
                                         Case{"missing-collective", 3}, Case{"send-race", 1},
                                         Case{"dtype-mismatch", 1}, Case{"root-mismatch", 1},
                                         Case{"p2p-mismatch", 3}, Case{"cross-comm-order", 3},
                                         Case{"output-flip", 1}),
                       ::testing::Bool()));

// The host NCCL's faulty link flips one bit of one element of rank 1's output at seq 4 (the
// first allreduce of step 1), and nothing else.
TEST(ExampleRuns, OutputFlipCorruptsOneElementOfOneRank) {
  const Result r = RunExample("output-flip");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_THAT(r.out,
              ::testing::HasSubstr("step 0: #wrong 0\nstep 1: #wrong 1\nstep 2: #wrong 0\n"));
}

// The motivating bug, exactly: rank 1 swaps on odd steps, so steps 0 and 2 are right and steps 1
// and 3 are wrong in both swapped tensors on both ranks (2 x 1024 x 2), every run.
TEST(ExampleRuns, SwapSameSizeIsDeterministic) {
  const Result a = RunExample("swap-same-size"), b = RunExample("swap-same-size --steps 4");
  EXPECT_EQ(a.out, b.out);
  EXPECT_THAT(a.out, ::testing::HasSubstr("step 1: #wrong 4096\nstep 2: #wrong 0\n"));
}

TEST(ExampleRuns, ManyRanks) {
  EXPECT_EQ(RunExample("clean --ranks 8 --steps 3").code, 0);
  EXPECT_EQ(RunExample("send-race --ranks 4 --group").code, 1);
}

// --race-elems resizes the raced tensor: its every element is overwritten on the racing rank, so
// every rank's sum of it is wrong (2 ranks x 5000 per step); the other tensors stay right.
TEST(ExampleRuns, RaceElemsResizesTheRacedTensor) {
  const Result r = RunExample("send-race --race-elems 5000 --steps 2");
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.out, ::testing::HasSubstr("step 0: #wrong 10000\nstep 1: #wrong 10000\n"));
}

// --processes: one process per rank, as launchers run real jobs; each prints its own steps.
TEST(ExampleRuns, ProcessesRunOneRankEach) {
  const Result swap = RunExample("swap-same-size --ranks 3 --processes");
  EXPECT_EQ(swap.code, 1) << swap.out;
  for (const char* line : {"rank 0 step 1: #wrong 2048\n", "rank 1 step 1: #wrong 2048\n",
                           "rank 2 step 1: #wrong 2048\n", "rank 1 step 2: #wrong 0\n",
                           "processes: 3 rank(s), exit 1\n"})
    EXPECT_THAT(swap.out, ::testing::HasSubstr(line));
  EXPECT_EQ(RunExample("clean --processes").code, 0);
  const Result hang = RunExample("missing-collective --processes");
  EXPECT_EQ(hang.code, 3) << hang.out;
  EXPECT_THAT(hang.out, ::testing::HasSubstr("#hang"));
  EXPECT_EQ(RunExample("clean --processes --group").code, 2);
}

TEST(ExampleRuns, UsageErrors) {
  EXPECT_EQ(RunExample("no-such-scenario").code, 2);
  EXPECT_EQ(RunExample("clean --ranks 0").code, 2);
  EXPECT_EQ(RunExample("clean --race-elems 5000").code, 2);
  EXPECT_EQ(RunExample("send-race --race-elems -5").code, 2);
  EXPECT_EQ(RunExample("send-race --race-elems 12x").code, 2);
}

}  // namespace
