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

Checked CheckScenario(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("ncclrr-datacheck-" + std::to_string(getpid()) + "-" + name);
  fs::remove_all(dir);
  SyntheticScript script;
  for (const Scenario& s : SketchScenarios())
    if (s.name == name) script = s.build();
  script.dir = dir.string();
  EXPECT_TRUE(WriteSyntheticScript(script).ok());
  auto model = analysis::TraceModel::Load(dir.string());
  EXPECT_TRUE(model.ok()) << model.status().message();
  fs::remove_all(dir);
  analysis::Report report = analysis::Check(*model);
  const std::string text = analysis::FormatText(report, &*model, {});
  return {std::move(*model), std::move(report), text};
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

TEST(DataChecks, OneCorruptedElementIsAWrongSumAtItsRankAndSeq) {
  const Checked c = CheckScenario("sketch_wrong_sum");
  ASSERT_EQ(c.report.findings.size(), 1u) << c.text;
  const analysis::Finding& f = Expect(c, 0, FindingKind::kWrongSum, 9, {1});
  EXPECT_EQ(f.comm_name, "dp");
  EXPECT_TRUE(Has(f.message, "off by")) << f.message;
  EXPECT_TRUE(Has(f.message, "rounding explains at most")) << f.message;
  EXPECT_TRUE(Has(f.short_text, "rank 1's output of AllReduce(5000 float32, sum)")) << f.short_text;
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
