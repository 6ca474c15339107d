// End to end on the host NCCL: `ncclrr record [--sketch] -- ncclrr-example SCENARIO`, then check
// the trace and expect the scenario's bug with the right kind, communicator and seq (clean runs:
// nothing). With --sketch the data checks join in: the send race becomes visible, and no other
// scenario may gain a data finding it does not have.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "ncclrr/analysis/check.h"
#include "ncclrr/analysis/report_format.h"
#include "ncclrr/testing/run_program.h"

namespace ncclrr::analysis {
namespace {

namespace fs = std::filesystem;

struct Expectation {
  std::string scenario;
  std::optional<FindingKind> kind;  // nullopt: no finding at all
  uint64_t seq = 0;
  std::optional<int> peer;
  bool sketch = false;     // record --sketch
  std::vector<int> ranks;  // the finding's ranks, when given
  Expectation(std::string s, std::optional<FindingKind> k, uint64_t q = 0,
              std::optional<int> p = std::nullopt)
      : scenario(std::move(s)), kind(k), seq(q), peer(p) {}
};

Expectation Sketched(Expectation e, std::vector<int> ranks = {}) {
  e.sketch = true;
  e.ranks = std::move(ranks);
  return e;
}

void PrintTo(const Expectation& e, std::ostream* os) { *os << e.scenario; }

class ExampleScenario : public ::testing::TestWithParam<Expectation> {};

TEST_P(ExampleScenario, RecordedOnTheHostNcclAndReported) {
  const Expectation& want = GetParam();
  const std::string bin = std::getenv("NCCLRR_TEST_BIN");
  const fs::path dir = fs::temp_directory_path() / ("ncclrr-e2e-" + std::to_string(getpid()) + "-" +
                                                    want.scenario + (want.sketch ? "-sk" : ""));
  fs::remove_all(dir);
  // The example's own watchdog ends hung scenarios; 3 s keeps the suite quick.
  const std::string cmd = "NCCLRR_EXAMPLE_WATCHDOG_S=3 " + bin + "/ncclrr record -o " +
                          dir.string() + (want.sketch ? " --sketch" : "") + " -- " + bin +
                          "/ncclrr-example " + want.scenario + " --steps 4 >" + dir.string() +
                          ".log 2>&1";
  (void)std::system(cmd.c_str());  // exits with the example's status (1 or 3 for bugs)
  auto model = TraceModel::Load(dir.string());
  ASSERT_TRUE(model.ok()) << model.status().message();
  CheckOptions o;
  o.stable = true;
  const Report r = Check(*model, o);
  const std::string text = FormatText(r, &*model, {true, false});
  if (!want.kind) {
    EXPECT_TRUE(r.findings.empty()) << text;
  } else {
    ASSERT_FALSE(r.findings.empty()) << text;
    const Finding& f = r.findings.front();
    EXPECT_EQ(FindingKindName(f.kind), FindingKindName(*want.kind)) << text;
    ASSERT_TRUE(f.seq.has_value()) << text;
    EXPECT_EQ(*f.seq, want.seq) << text;
    EXPECT_EQ(f.peer, want.peer) << text;
    if (!want.ranks.empty()) {
      EXPECT_EQ(f.ranks, want.ranks) << text;
    }
    EXPECT_GE(model->FindComm(f.comm), 0) << "finding names a communicator not in the trace";
    // The only findings are the scenario's (plus data findings, which need --sketch).
    for (const Finding& g : r.findings) EXPECT_EQ(g.kind, f.kind) << text;
  }
  fs::remove_all(dir);
  fs::remove(dir.string() + ".log");
}

INSTANTIATE_TEST_SUITE_P(
    HostNccl, ExampleScenario,
    ::testing::Values(Expectation{"clean", std::nullopt},
                      Expectation{"swap-same-size", FindingKind::kSuspectedSwap, 4},
                      Expectation{"swap-diff-size", FindingKind::kOrderSwap, 4},
                      Expectation{"count-mismatch", FindingKind::kCountMismatch, 0},
                      Expectation{"missing-collective", FindingKind::kMissingCall, 5},
                      Expectation{"dtype-mismatch", FindingKind::kDtypeMismatch, 0},
                      Expectation{"root-mismatch", FindingKind::kRootMismatch, 7},
                      Expectation{"p2p-mismatch", FindingKind::kP2pMismatch, 1, 1},
                      Expectation{"cross-comm-order", FindingKind::kCrossCommOrder, 1},
                      // Data bugs: metadata shows nothing (the data checks need --sketch).
                      Expectation{"send-race", std::nullopt},
                      Expectation{"output-flip", std::nullopt}),
    [](const auto& param_info) {
      std::string n = param_info.param.scenario;
      for (char& c : n)
        if (c == '-') c = '_';
      return n;
    });

// The same programs recorded with --sketch: the race is found (and explains the wrong sums the
// example counts), the flipped bit of rank 1's output is found where the host NCCL flipped it
// (rank 1, seq 4: the identity check tells which of the two outputs is wrong), the swap is backed
// by sampled data, and the other bugs stay what they were.
INSTANTIATE_TEST_SUITE_P(
    HostNcclSketched, ExampleScenario,
    ::testing::Values(Sketched({"clean", std::nullopt}),
                      Sketched({"send-race", FindingKind::kBufferRace, 0}),
                      Sketched({"output-flip", FindingKind::kOutputDivergence, 4}, {1}),
                      Sketched({"swap-same-size", FindingKind::kSuspectedSwap, 4}),
                      Sketched({"swap-diff-size", FindingKind::kOrderSwap, 4}),
                      Sketched({"count-mismatch", FindingKind::kCountMismatch, 0}),
                      Sketched({"missing-collective", FindingKind::kMissingCall, 5}),
                      Sketched({"p2p-mismatch", FindingKind::kP2pMismatch, 1, 1})),
    [](const auto& param_info) {
      std::string n = param_info.param.scenario;
      for (char& c : n)
        if (c == '-') c = '_';
      return n;
    });

// `ncclrr diff` of real recordings: two runs of the clean example are equivalent (their
// communicator ids, pids and addresses differ), and the swap-same-size example differs from the
// clean one by the swap, at seq 4 (a same-shape swap: found through check's suspected_swap).
std::string RecordExample(const std::string& scenario, const std::string& tag) {
  const std::string bin = std::getenv("NCCLRR_TEST_BIN");
  const fs::path dir =
      fs::temp_directory_path() / ("ncclrr-e2e-diff-" + std::to_string(getpid()) + "-" + tag);
  fs::remove_all(dir);
  const std::string cmd = "NCCLRR_EXAMPLE_WATCHDOG_S=3 " + bin + "/ncclrr record -o " +
                          dir.string() + " -- " + bin + "/ncclrr-example " + scenario +
                          " --steps 4 >/dev/null 2>&1";
  (void)std::system(cmd.c_str());
  return dir.string();
}

int RunDiff(const std::string& a, const std::string& b, std::string* out) {
  const auto r = ncclrr::testing::RunNcclrr("diff --json " + a + " " + b, true);
  *out += r.out;
  return r.code;
}

TEST(ExampleDiff, TwoCleanRunsAreEquivalentAndASwapIsNamed) {
  const std::string clean1 = RecordExample("clean", "clean1");
  const std::string clean2 = RecordExample("clean", "clean2");
  const std::string swap = RecordExample("swap-same-size", "swap");
  std::string same, differ;
  EXPECT_EQ(RunDiff(clean1, clean2, &same), 0) << same;
  EXPECT_NE(same.find("\"differences\":0"), std::string::npos) << same;
  EXPECT_EQ(RunDiff(clean1, swap, &differ), 1) << differ;
  EXPECT_NE(differ.find("\"kind\":\"order\""), std::string::npos) << differ;
  EXPECT_NE(differ.find("\"seq_a\":4"), std::string::npos) << differ;
  EXPECT_NE(differ.find("same-shape calls from seq 4 in run B"), std::string::npos) << differ;
  for (const std::string& d : {clean1, clean2, swap}) fs::remove_all(d);
}

}  // namespace
}  // namespace ncclrr::analysis
