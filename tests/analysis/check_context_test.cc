// CheckContext claims (intervals), repeat grouping and report basics.
#include <gtest/gtest.h>

#include "ncclrr/analysis/check.h"
#include "ncclrr/analysis/report_format.h"

namespace ncclrr::analysis {
namespace {

TEST(CheckContext, ClaimsMergeIntervals) {
  TraceModel m = TraceModel::Build(TraceDir{});
  CheckOptions o;
  LogicalIdentity id = LogicalIdentity::Compute(m);
  CheckContext ctx(m, o, id);
  ctx.Claim(0, 5);
  ctx.Claim(0, 7, 9);
  EXPECT_TRUE(ctx.Claimed(0, 5));
  EXPECT_FALSE(ctx.Claimed(0, 6));
  EXPECT_TRUE(ctx.Claimed(0, 8));
  EXPECT_FALSE(ctx.Claimed(1, 8));
  ctx.Claim(0, 6);  // joins [5,5] and [7,9]
  EXPECT_TRUE(ctx.Claimed(0, 6));
  ctx.Claim(0, 20, kNoSeq);
  EXPECT_TRUE(ctx.Claimed(0, ~uint64_t{0} - 1));
  EXPECT_FALSE(ctx.Claimed(0, 19));
  ctx.Claim(0, 0, kNoSeq);
  EXPECT_TRUE(ctx.Claimed(0, 12));
}

Finding Occurrence(uint64_t seq, int64_t t, const std::string& pattern) {
  Finding f;
  f.kind = FindingKind::kCountMismatch;
  f.comm = 0x1;
  f.seq = seq;
  f.ranks = {1};
  f.first_time = t;
  f.pattern = pattern;
  return f;
}

TEST(GroupRepeats, SamePatternIsGroupedAndSortedByFirstOccurrence) {
  std::vector<Finding> in = {Occurrence(30, 300, "a"), Occurrence(10, 100, "a"),
                             Occurrence(20, 200, "b"), Occurrence(40, 400, "a")};
  const auto out = GroupRepeats(in);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(*out[0].seq, 10u);
  EXPECT_EQ(out[0].repeats, 2u);
  EXPECT_EQ(*out[0].last_seq, 40u);
  EXPECT_EQ(*out[1].seq, 20u);
  EXPECT_EQ(out[1].repeats, 0u);
}

TEST(Report, ExitCodes) {
  Report r;
  EXPECT_EQ(r.ExitCode(false), 0);
  r.notes.push_back({});
  EXPECT_EQ(r.ExitCode(false), 0);
  EXPECT_EQ(r.ExitCode(true), 1);
  r.findings.push_back({});
  EXPECT_EQ(r.ExitCode(false), 1);
  r.usable = false;
  EXPECT_EQ(r.ExitCode(false), 2);
}

TEST(FindingKind, NamesRoundTrip) {
  for (int i = 0; i < kNumFindingKinds; ++i) {
    FindingKind k;
    ASSERT_TRUE(FindingKindFromName(FindingKindName(static_cast<FindingKind>(i)), &k));
    EXPECT_EQ(static_cast<int>(k), i);
  }
  FindingKind k;
  EXPECT_FALSE(FindingKindFromName("hang", &k));
}

// A trace without calls is no usable trace (docs/check.md: exit 2), and the note says why.
TEST(ReportFormat, JsonOfAnEmptyReportFollowsTheContract) {
  TraceModel m = TraceModel::Build(TraceDir{});
  Report r = Check(m, {});
  FormatOptions o;
  o.stable = true;
  EXPECT_EQ(FormatJson(r, &m, o),
            "{\"findings\":[],\"notes\":[{\"kind\":\"trace_incomplete\",\"file\":null,"
            "\"ranks\":[],\"count\":0,\"message\":\"the trace holds no NCCL call that can be "
            "checked (0 files read, no call record in them, or only damaged ones): nothing was "
            "checked. Was the job stopped before its first NCCL call? `ncclrr info DIR` lists "
            "what each file holds.\"}],\"summary\":{\"files\":0,\"comms\":0,\"ranks\":0,"
            "\"calls\":0,\"findings\":0,\"occurrences\":0,\"notes\":1,"
            "\"by_kind\":{\"trace_incomplete\":1},\"strict\":false,\"exit_code\":2}}\n");
}

}  // namespace
}  // namespace ncclrr::analysis
