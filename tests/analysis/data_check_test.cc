// The data checks on traces with sketches computed from real buffers: each scenario's findings
// and notes asserted one by one (the golden tests compare the full text and JSON).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "ncclrr/analysis/check.h"
#include "ncclrr/analysis/report_format.h"
#include "sketch_scenarios.h"

namespace ncclrr::testing {
namespace {

namespace fs = std::filesystem;
using analysis::FindingKind;

struct Checked {
  analysis::TraceModel model;
  analysis::Report report;
  std::string text;
};

Checked CheckScript(const std::string& name, SyntheticScript script) {
  const fs::path dir =
      fs::temp_directory_path() / ("ncclrr-datacheck-" + std::to_string(getpid()) + "-" + name);
  fs::remove_all(dir);
  script.dir = dir.string();
  EXPECT_TRUE(WriteSyntheticScript(script).ok());
  auto model = analysis::TraceModel::Load(dir.string());
  EXPECT_TRUE(model.ok()) << model.status().message();
  fs::remove_all(dir);
  analysis::Report report = analysis::Check(*model);
  const std::string text = analysis::FormatText(report, &*model, {});
  return {std::move(*model), std::move(report), text};
}

Checked CheckScenario(const std::string& name) {
  for (const Scenario& s : SketchScenarios())
    if (s.name == name) return CheckScript(name, s.build());
  ADD_FAILURE() << "no scenario " << name;
  return CheckScript(name, {});
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The one finding of a scenario, checked for its kind, seq and ranks.
const analysis::Finding& Expect(const Checked& c, size_t i, FindingKind kind, uint64_t seq,
                                std::vector<int> ranks) {
  static const analysis::Finding none;
  EXPECT_GT(c.report.findings.size(), i) << c.text;
  if (c.report.findings.size() <= i) return none;
  const analysis::Finding& f = c.report.findings[i];
  EXPECT_EQ(f.kind, kind) << c.text;
  EXPECT_EQ(f.seq, seq) << c.text;
  EXPECT_EQ(f.ranks, ranks) << c.text;
  return f;
}

TEST(DataChecks, CleanAllreducesGiveNothing) {
  const Checked c = CheckScenario("sketch_clean");
  EXPECT_TRUE(c.report.findings.empty()) << c.text;
  EXPECT_TRUE(c.report.notes.empty()) << c.text;
  EXPECT_EQ(c.report.ExitCode(true), 0);
}

// Rank 1's output differs from rank 0's: an output_divergence (the more specific statement),
// and the identity check tells which of the two is wrong, so rank 1 alone is named.
TEST(DataChecks, OneCorruptedElementIsADivergenceAtItsRankAndSeq) {
  const Checked c = CheckScenario("sketch_wrong_sum");
  ASSERT_EQ(c.report.findings.size(), 1u) << c.text;
  const analysis::Finding& f = Expect(c, 0, FindingKind::kOutputDivergence, 9, {1});
  EXPECT_EQ(f.comm_name, "dp");
  EXPECT_TRUE(Has(f.message, "off by")) << f.message;
  EXPECT_TRUE(Has(f.message, "rounding explains at most")) << f.message;
  EXPECT_TRUE(Has(f.message, "wrong_sum, not reported separately")) << f.message;
  EXPECT_TRUE(Has(f.message,
                  "The identity check tells which output is wrong: rank 0's output is "
                  "what the ranks' inputs combine to, rank 1's output is not"))
      << f.message;
  EXPECT_TRUE(Has(f.short_text,
                  "rank 1's output of AllReduce(5000 float32, sum) differs from "
                  "rank 0's"))
      << f.short_text;
}

// Outputs that agree with each other but not with the inputs: a wrong_sum of every rank.
TEST(DataChecks, OutputsWrongAlikeAreAWrongSum) {
  const Checked c = CheckScenario("sketch_wrong_sum_everywhere");
  ASSERT_EQ(c.report.findings.size(), 1u) << c.text;
  const analysis::Finding& f = Expect(c, 0, FindingKind::kWrongSum, 4, {0, 1});
  EXPECT_TRUE(Has(f.short_text, "the outputs of ranks 0 and 1 of AllReduce(3000 float32, sum)"))
      << f.short_text;
}

TEST(DataChecks, OutputsThatDifferAcrossRanksAreADivergence) {
  const Checked c = CheckScenario("sketch_output_divergence");
  ASSERT_EQ(c.report.findings.size(), 3u) << c.text;
  // Seen by the identity too: its wrong_sum joins the divergence.
  const analysis::Finding& big = Expect(c, 0, FindingKind::kOutputDivergence, 5, {2});
  EXPECT_TRUE(Has(big.message, "wrong_sum, not reported separately")) << big.message;
  EXPECT_TRUE(Has(big.message, "faulty GPU, NVLink/PCIe link or GPU memory on rank 2"))
      << big.message;
  EXPECT_TRUE(Has(big.message, "a buffer race on rank 2")) << big.message;
  EXPECT_FALSE(Has(big.message, "mismatched call")) << big.message;
  EXPECT_TRUE(Has(big.short_text, "differs from that of ranks 0, 1 and 3")) << big.short_text;
  // Within the rounding tolerance: only the comparison across ranks sees it.
  const analysis::Finding& small = Expect(c, 1, FindingKind::kOutputDivergence, 8, {2});
  EXPECT_TRUE(Has(small.message, "within the rounding tolerance")) << small.message;
  // A max reduction, which the identity cannot check.
  Expect(c, 2, FindingKind::kOutputDivergence, 15, {3});
  for (const analysis::Finding& f : c.report.findings) EXPECT_NE(f.kind, FindingKind::kWrongSum);
  // seq 13 differs only in a NaN payload: a NaN step, unchecked, no finding.
  bool nan_note = false;
  for (const analysis::Note& n : c.report.notes) nan_note = nan_note || Has(n.message, "NaN/Inf");
  EXPECT_TRUE(nan_note) << c.text;
}

TEST(DataChecks, ARaceIsReportedAndExplainsTheWrongSum) {
  const Checked c = CheckScenario("sketch_buffer_race");
  ASSERT_EQ(c.report.findings.size(), 2u) << c.text;
  const analysis::Finding& read = Expect(c, 0, FindingKind::kBufferRace, 6, {1});
  EXPECT_TRUE(Has(read.message, "This race explains the wrong result")) << read.message;
  EXPECT_TRUE(Has(read.message, "ranks 0 and 1")) << read.message;
  const analysis::Finding& late = Expect(c, 1, FindingKind::kBufferRace, 12, {1});
  EXPECT_TRUE(Has(late.message, "still matched")) << late.message;
  for (const analysis::Finding& f : c.report.findings) EXPECT_NE(f.kind, FindingKind::kWrongSum);
}

// Calls mispaired at seq 0 (a count mismatch): a divergence later on names a mismatched call
// among its likely causes; without the mismatch it does not.
TEST(DataChecks, ADivergenceAfterAMispairedCallNamesAMismatchedCall) {
  for (const bool mismatch : {true, false}) {
    ScriptBuilder b(2);
    const int dp = b.Comm(0xda7a000000000003ull, "dp", {0, 1});
    for (int p = 0; p < 2; ++p) {
      ScriptCall c = AllReduce(p == 1 && mismatch ? 998 : 1000, 9);
      c.comm = dp;
      b.On(p, c);
    }
    DataStep d;
    d.counts = {3000};
    d.corrupt = [](int p, int, std::vector<float>& recv) {
      if (p == 1) recv[5] += 1.0f;
    };
    AddDataStep(b, dp, 0, d);
    const Checked c = CheckScript(mismatch ? "mispaired" : "paired", b.s);
    const analysis::Finding* div = nullptr;
    for (const analysis::Finding& f : c.report.findings)
      if (f.kind == FindingKind::kOutputDivergence) div = &f;
    ASSERT_NE(div, nullptr) << c.text;
    EXPECT_EQ(div->seq, 1u);
    EXPECT_EQ(div->ranks, std::vector<int>{1}) << c.text;
    EXPECT_EQ(Has(div->message,
                  "a mismatched call: this communicator's calls were mispaired at "
                  "seq 0"),
              mismatch)
        << div->message;
  }
}

TEST(DataChecks, SwappedSameSizeCallsAreConfirmedByTheirData) {
  const Checked c = CheckScenario("sketch_suspected_swap");
  ASSERT_EQ(c.report.findings.size(), 1u) << c.text;
  const analysis::Finding& f = Expect(c, 0, FindingKind::kSuspectedSwap, 9, {3});
  ASSERT_TRUE(f.confidence);
  EXPECT_GT(*f.confidence, 0.99);
  EXPECT_TRUE(Has(f.message, "rank 3's seq 9 looks like rank 0's seq 10 (0.")) << f.message;
  EXPECT_TRUE(Has(f.message, "The sketched data confirm it")) << f.message;
}

TEST(DataChecks, BuffersThatMovedWithoutTheirDataAreNoSwap) {
  const Checked c = CheckScenario("sketch_swap_buffers_only");
  EXPECT_TRUE(c.report.findings.empty()) << c.text;
}

TEST(DataChecks, UncorrelatedDataLeaveTheMetadataSuspicion) {
  const Checked c = CheckScenario("sketch_swap_uncorrelated");
  ASSERT_EQ(c.report.findings.size(), 1u) << c.text;
  const analysis::Finding& f = Expect(c, 0, FindingKind::kSuspectedSwap, 9, {3});
  ASSERT_TRUE(f.confidence);
  // The buffers' evidence alone: the ranks used the same buffers (up to the processes' address
  // offset) at 30 of the 32 aligned calls, and the other two crossed.
  EXPECT_NEAR(*f.confidence, 0.9375, 1e-6);
  EXPECT_TRUE(Has(f.message, "the buffers crossed")) << f.message;
  EXPECT_TRUE(Has(f.message, "The sketched data cannot tell")) << f.message;
}

TEST(DataChecks, BuffersAllocatedAfreshEachStepAreNoSwap) {
  const Checked c = CheckScenario("sketch_fresh_buffers");
  EXPECT_TRUE(c.report.findings.empty()) << c.text;
}

TEST(DataChecks, ABufferSeenAFewTimesIsNoSwapWhenTheDataCannotTell) {
  const Checked c = CheckScenario("sketch_reused_buffers");
  EXPECT_TRUE(c.report.findings.empty()) << c.text;
}

TEST(DataChecks, ABufferSeenOftenStaysASuspicionWhenTheDataCannotTell) {
  const Checked c = CheckScenario("sketch_duplicate_uncorrelated");
  ASSERT_EQ(c.report.findings.size(), 1u) << c.text;
  const analysis::Finding& f =
      Expect(c, 0, FindingKind::kSuspectedSwap, 82, {0, 1});  // a tie: both
  ASSERT_TRUE(f.confidence);
  EXPECT_NEAR(*f.confidence, 40.0 / 41.0, 1e-6);
  EXPECT_TRUE(Has(f.message, "The sketched data cannot tell")) << f.message;
}

// Without sketches the buffers alone decide, and the same sightings rule applies: 41 sightings
// make the suspicion, 9 do not (the cost of the rule, docs/check.md).
TEST(DataChecks, WithoutSketchesABufferSeenOftenIsASuspicion) {
  const Checked c = CheckScenario("unsketched_duplicate_long");
  ASSERT_EQ(c.report.findings.size(), 1u) << c.text;
  const analysis::Finding& f =
      Expect(c, 0, FindingKind::kSuspectedSwap, 82, {0, 1});  // a tie: both
  EXPECT_TRUE(Has(f.message, "Without data this is a suspicion")) << f.message;
}

TEST(DataChecks, WithoutSketchesABufferSeenNineTimesIsNoFinding) {
  const Checked c = CheckScenario("unsketched_duplicate_short");
  EXPECT_TRUE(c.report.findings.empty()) << c.text;
}

TEST(DataChecks, ATensorPassedTwiceAtOnePositionIsASuspectedSwapTheDataConfirm) {
  const Checked c = CheckScenario("sketch_duplicate_tensor");
  ASSERT_EQ(c.report.findings.size(), 1u) << c.text;
  const analysis::Finding& f =
      Expect(c, 0, FindingKind::kSuspectedSwap, 14, {0, 1});  // a tie: both
  ASSERT_TRUE(f.confidence);
  EXPECT_GT(*f.confidence, 0.99);
  EXPECT_TRUE(Has(f.message, "rank 1's seq 14 looks like rank 0's seq 13 (")) << f.message;
}

TEST(DataChecks, NanAndInfStepsAreNotesNeverWrongSums) {
  const Checked c = CheckScenario("sketch_nonfinite");
  EXPECT_TRUE(c.report.findings.empty()) << c.text;
  ASSERT_EQ(c.report.notes.size(), 1u) << c.text;
  EXPECT_EQ(c.report.notes[0].kind, analysis::NoteKind::kDataUnchecked);
  EXPECT_EQ(c.report.notes[0].count, 2u);
  EXPECT_TRUE(Has(c.report.notes[0].message, "NaN/Inf")) << c.report.notes[0].message;
  EXPECT_EQ(c.report.ExitCode(true), 0);  // information, even under --strict
}

TEST(DataChecks, MaxIsUncheckedNotWrong) {
  const Checked c = CheckScenario("sketch_max_op");
  EXPECT_TRUE(c.report.findings.empty()) << c.text;
  ASSERT_EQ(c.report.notes.size(), 1u) << c.text;
  EXPECT_EQ(c.report.notes[0].count, 3u);
  EXPECT_TRUE(Has(c.report.notes[0].message, "3 AllReduce max")) << c.report.notes[0].message;
  EXPECT_TRUE(Has(c.report.notes[0].message, "captured data only")) << c.report.notes[0].message;
}

TEST(DataChecks, AChangedSendRecvTransferIsAWrongCopy) {
  const Checked c = CheckScenario("sketch_p2p_wrong_copy");
  ASSERT_EQ(c.report.findings.size(), 1u) << c.text;
  const analysis::Finding& f = Expect(c, 0, FindingKind::kWrongSum, 1, {1});
  EXPECT_EQ(f.peer, 1);
  EXPECT_TRUE(Has(f.short_text, "is not a copy of what was sent")) << f.short_text;
}

TEST(DataChecks, AvgAndPreMulSumAreCheckedWithTheirScalars) {
  const Checked c = CheckScenario("sketch_scaled_reductions");
  EXPECT_TRUE(c.report.findings.empty()) << c.text;
  EXPECT_TRUE(c.report.notes.empty()) << c.text;
  // A scalar that is not the one the op was made with: every output is off (seq 2 * 4 + 1).
  const Checked bad = CheckScenario("sketch_premulsum_misrecorded");
  ASSERT_EQ(bad.report.findings.size(), 1u) << bad.text;
  Expect(bad, 0, FindingKind::kWrongSum, 9, {0, 1});
}

}  // namespace
}  // namespace ncclrr::testing
