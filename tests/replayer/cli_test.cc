// `ncclrr replay` as users and scripts run it: exit codes 0/1/2 (docs/design.md), byte-identical
// stdout between two runs, JSON on request, usage errors that say what to do.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "replay_scripts.h"

namespace ncclrr::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class ReplayCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    clean_ = new std::string(WriteTrace(ExampleScript("clean"), "cli-clean"));
    swap_ = new std::string(WriteTrace(ExampleScript("swap-same-size"), "cli-swap"));
  }
  static void TearDownTestSuite() {
    delete clean_;
    delete swap_;
  }
  static std::string* clean_;
  static std::string* swap_;
};
std::string* ReplayCli::clean_ = nullptr;
std::string* ReplayCli::swap_ = nullptr;

TEST_F(ReplayCli, ExitCodesFollowTheContract) {
  EXPECT_EQ(RunNcclrr("replay " + *clean_).code, 0);
  EXPECT_EQ(RunNcclrr("replay " + *swap_).code, 1);
  EXPECT_EQ(RunNcclrr("replay " + *swap_ + " --order canonical").code, 0);
  EXPECT_EQ(RunNcclrr("replay " + *swap_ + " --order canonical,recorded").code, 1);
  EXPECT_EQ(RunNcclrr("replay /nonexistent/trace").code, 2);
}

TEST_F(ReplayCli, SummaryAndStableBytes) {
  const CommandResult a = RunNcclrr("replay " + *swap_ + " --order recorded,canonical");
  const CommandResult b = RunNcclrr("replay " + *swap_ + " --order recorded,canonical");
  EXPECT_EQ(a.out, b.out);
  EXPECT_THAT(a.out, HasSubstr("summary: recorded order: 2 of 4 steps wrong: 1, 3 (seq 4\u20135, "
                               "12\u201313 swapped on rank 1); canonical order: 0 wrong\n"));
  const CommandResult j1 = RunNcclrr("replay " + *swap_ + " --json --order permute:3");
  const CommandResult j2 = RunNcclrr("replay " + *swap_ + " --json --order permute:3");
  EXPECT_EQ(j1.out, j2.out);
  EXPECT_THAT(j1.out, StartsWith("{\n  \"trace\": "));
  EXPECT_THAT(j1.out, HasSubstr("\"#wrong\": "));
  EXPECT_THAT(j1.out, HasSubstr("\"reproduced\": null"));
  EXPECT_THAT(j1.out, HasSubstr("\"exit_code\": 1\n}"));
}

TEST_F(ReplayCli, ProgressGoesToStderr) {
  const CommandResult r = RunNcclrr("replay " + *clean_, true);
  EXPECT_THAT(r.out, HasSubstr("ncclrr replay: recorded order: replaying 32 calls of 2 rank(s)"));
  EXPECT_THAT(RunNcclrr("replay " + *clean_).out, ::testing::Not(HasSubstr("replaying")));
}

TEST_F(ReplayCli, UsageErrors) {
  for (const char* bad : {"--order sideways", "--order permute:0", "--backend gpu", "--data random",
                          "--timeout -3", "--seed x", "--frobnicate"}) {
    const CommandResult r = RunNcclrr("replay " + *clean_ + " " + bad, true);
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_THAT(r.out, HasSubstr("replay")) << bad;
  }
  const CommandResult r = RunNcclrr("replay " + *clean_ + " --data captured --json", true);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("no captured buffers"));
  EXPECT_THAT(r.out, HasSubstr("\"exit_code\":2"));
}

// docs/replay.md: under --json, usage errors are JSON on stdout too (the text on stderr).
TEST_F(ReplayCli, UsageErrorsUnderJsonAreJson) {
  for (const char* bad : {"--order sideways", "--timeout -3", "--frobnicate", ""}) {
    const std::string dir = std::string(bad).empty() ? "" : *clean_;
    const CommandResult r = RunNcclrr("replay " + dir + " " + bad + " --json");
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_THAT(r.out, ::testing::StartsWith("{\"error\":\"")) << bad << ": " << r.out;
    EXPECT_THAT(r.out, HasSubstr("\"exit_code\":2}")) << bad << ": " << r.out;
  }
}

// A trace path that is not UTF-8 (a Latin-1 directory name) is written as valid UTF-8 JSON.
TEST_F(ReplayCli, JsonOfANonUtf8PathIsValidUtf8) {
  const std::string dir = FreshDir("caf\xe9-trace");
  for (const auto& e : std::filesystem::directory_iterator(*clean_))
    std::filesystem::copy(e.path(), dir + "/" + e.path().filename().string());
  const CommandResult r = RunNcclrr("replay '" + dir + "' --json");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find('\xe9'), std::string::npos) << r.out;
  EXPECT_THAT(r.out, HasSubstr("caf\\ufffd-trace")) << r.out;
}

// Without a GPU the nccl backend refuses with what to do; with one, a 2-rank trace needs two.
TEST_F(ReplayCli, NcclBackendSaysWhatItNeeds) {
  const CommandResult r = RunNcclrr("replay " + *clean_ + " --backend nccl --timeout 20", true);
  if (r.code == 2) {
    EXPECT_THAT(r.out, HasSubstr("--backend nccl"));
  } else {
    EXPECT_EQ(r.code, 0) << r.out;
  }
}

}  // namespace
}  // namespace ncclrr::testing
