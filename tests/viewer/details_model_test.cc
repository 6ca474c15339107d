// CallDetailsModel: every recorded field of a call, and what it is paired with.
#include "models/call_details.h"

#include <gtest/gtest.h>
#include <QAbstractItemModelTester>

#include "models/model_dump.h"
#include "viewer_test_util.h"

namespace ncclrr::viewer {
namespace {

// The dump up to the first line that starts with `section` (times since the first call and the
// process's clock offset depend on when the test ran).
std::string DumpUntil(const QAbstractItemModel& m, const std::string& section) {
  const std::string all = DumpModel(m).toStdString();
  const size_t cut = all.find("\n" + section);
  return cut == std::string::npos ? all : all.substr(0, cut + 1);
}

std::string WithoutLinesContaining(std::string text, const std::string& needle) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    if (line.find(needle) == std::string::npos) out += line + "\n";
    start = end + 1;
  }
  return out;
}

TEST(CallDetailsModel, ShowsEveryFieldOfTheCallAndItsPairing) {
  testing::EnsureApp();
  const std::string dir = testing::WriteSwapTrace("details");
  auto s = testing::LoadWithReport(dir, {});
  ASSERT_TRUE(s);
  CallDetailsModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  // Rank 1's seq 5: the file of rank 1, its sixth call.
  uint32_t f1 = 0;
  while (s->model().file(f1).calls.front().rank != 1) ++f1;
  m.Show(s, CallRef{f1, 5});
  const std::string text = WithoutLinesContaining(
      WithoutLinesContaining(DumpUntil(m, "Process"), "since the first call"), "as NCCL would");
  EXPECT_EQ(text,
            "Field | Value\n"
            "Call: AllReduce | \n"
            "  rank | 1\n"
            "  seq | 5\n"
            "  index among this API's calls | 5\n"
            "  count | 36864\n"
            "  datatype | float32 (4 bytes)\n"
            "  reduction | sum\n"
            "  sendbuff | 0x00007f1002000000\n"
            "  recvbuff | 0x00007f1002000000\n"
            "  flags | in-place\n"
            "  device | 1\n"
            "  stream | 0x0000000000005001\n"
            "  thread id | 101\n"
            "  group | not in a group\n"
            "  graph | not captured\n"
            "  host duration | 4.58 us\n"
            "  result | ncclSuccess\n"
            "  record uid | 0x0000010000000005\n"
            "Same position on every rank (seq 5) | \n"
            "  rank 0 | AllReduce 36864 \u00d7 float32 sum\n"
            "  rank 1 | AllReduce 36864 \u00d7 float32 sum\n"
            "Communicator | \n"
            "  commHash | 0x5a17c0de00000001\n"
            "  name | synthetic.dp\n"
            "  ranks | 2\n"
            "  created by | InitRank\n"
            "  collectives issued (max over ranks) | 16\n");
  const std::string full = DumpModel(m).toStdString();
  EXPECT_NE(full.find("  file | synthetic-rank1.ncclrr"), std::string::npos) << full;
  EXPECT_NE(full.find("  closed in order | yes"), std::string::npos) << full;
  EXPECT_NE(full.find("  entered | "), std::string::npos);
}

TEST(CallDetailsModel, NamesTheFindingsOfACall) {
  testing::EnsureApp();
  auto s = testing::Load(testing::WriteSwapTrace("details-finding"));
  ASSERT_TRUE(s);
  ASSERT_FALSE(s->report().findings.empty());
  const CallRef call = s->CallsOfFinding(0).front();
  CallDetailsModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  m.Show(s, call);
  const std::string dump = DumpModel(m).toStdString();
  EXPECT_NE(dump.find("Findings about this call"), std::string::npos) << dump;
  EXPECT_NE(dump.find(s->report().findings[0].short_text), std::string::npos) << dump;
  EXPECT_NE(dump.find("\u25c0 named by a finding"), std::string::npos) << dump;
  m.Show(s, std::nullopt);
  EXPECT_EQ(m.rowCount(), 0);
  m.Show(s, CallRef{99, 0});  // a stale reference: nothing, not a crash
  EXPECT_EQ(m.rowCount(), 0);
}

TEST(CallDetailsModel, ShowsGpuTimesSketchesAndStackFrames) {
  testing::EnsureApp();
  auto s = testing::LoadWithReport(testing::WriteRichTrace("details-rich"), {});
  ASSERT_TRUE(s);
  uint32_t f0 = 0;
  while (s->model().file(f0).calls.front().rank != 0) ++f0;
  CallDetailsModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  m.Show(s, CallRef{f0, 0});
  // Hovering the call (timeline, alignment view) names its innermost site too.
  EXPECT_NE(s->CallTip(CallRef{f0, 0}).find("\nat train.py:42 in step"), std::string::npos)
      << s->CallTip(CallRef{f0, 0});
  const std::string dump = DumpModel(m).toStdString();
  for (const char* want :
       {"  call site | train.py:42 in step", "    frame 0 | train.py:42 in step",
        "    frame 1 | ddp.py:310 in allreduce_bucket", "GPU time | ", "  duration | 40.0 us",
        "  source | CUPTI", "  queued before running | 20.0 us", "Sketches (2) | ",
        "  send buffer before the call | 4096 elements from 0",
        "  send buffer before the call (race sample) | 4096 elements from 0",
        "    sum of squares | 42", "    NaN / +Inf / -Inf | 0 / 0 / 0",
        "    samples (2) | [0]=0.25 [7]=-1"})
    EXPECT_NE(dump.find(want), std::string::npos) << want << "\n" << dump;
  uint32_t f1 = 1 - f0;
  m.Show(s, CallRef{f1, 4});
  const std::string hung = DumpModel(m).toStdString();
  EXPECT_NE(hung.find("  returned | never: in flight when the trace ended"), std::string::npos)
      << hung;
  EXPECT_NE(hung.find("  in flight | the call had not returned"), std::string::npos) << hung;
  EXPECT_NE(hung.find("  closed in order | no (killed, hung or still running)"), std::string::npos)
      << hung;
}

}  // namespace
}  // namespace ncclrr::viewer
