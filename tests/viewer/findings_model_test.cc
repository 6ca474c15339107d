// FindingsModel: the report as a tree grouped by kind, notes last.
#include "models/findings_model.h"

#include <gtest/gtest.h>
#include <QAbstractItemModelTester>

#include "models/model_dump.h"
#include "sketch_scenarios.h"
#include "viewer_test_util.h"

namespace ncclrr::viewer {
namespace {

analysis::Report HandWrittenReport(const TraceSession& s) {
  using analysis::Finding;
  using analysis::FindingKind;
  analysis::Report r;
  Finding swap;
  swap.kind = FindingKind::kOrderSwap;
  swap.comm = s.model().comms()[0].id;
  swap.comm_name = "synthetic.dp";
  swap.seq = 5;
  swap.last_seq = 14;
  swap.ranks = {1};
  swap.repeats = 1;
  swap.short_text = "rank 1 swapped seq 5 and 6";
  swap.message = "Rank 1 issued seq 5 and 6 in the other order.";
  for (uint32_t f = 0; f < 2; ++f) swap.calls.push_back({{f, 5}, static_cast<int>(f), 5});
  Finding sum = swap;
  sum.kind = FindingKind::kWrongSum;
  sum.seq = 9;
  sum.last_seq.reset();
  sum.repeats = 0;
  sum.ranks = {0, 1};
  sum.short_text = "seq 9 summed the wrong tensors";
  Finding err;
  err.kind = FindingKind::kNcclError;
  err.short_text = "ncclInvalidUsage from CommDestroy";
  r.findings = {swap, sum, err};
  analysis::Note note;
  note.kind = analysis::NoteKind::kTraceIncomplete;
  note.file_name = "host-12.ncclrr";
  note.ranks = {{s.model().comms()[0].id, 1}};
  note.message = "the file ends inside a frame";
  r.notes = {note};
  return r;
}

TEST(FindingsModel, GroupsByKindWithNotesLast) {
  testing::EnsureApp();
  const std::string dir = testing::WriteSwapTrace("findings-model");
  auto plain = testing::LoadWithReport(dir, {});
  ASSERT_TRUE(plain);
  auto s = testing::LoadWithReport(dir, HandWrittenReport(*plain));
  FindingsModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  m.SetSession(s);
  EXPECT_EQ(DumpModel(m).toStdString(),
            "Finding | Communicator | Seq | Ranks | Repeats\n"
            "order_swap (1) |  |  |  | \n"
            "  rank 1 swapped seq 5 and 6 | synthetic.dp | 5\u201314 | 1 | 1\n"
            "wrong_sum (1) |  |  |  | \n"
            "  seq 9 summed the wrong tensors | synthetic.dp | 9 | 0, 1 | 0\n"
            "nccl_error (1) |  |  |  | \n"
            "  ncclInvalidUsage from CommDestroy | \u2014 | \u2014 |  | 0\n"
            "notes (1) |  |  |  | \n"
            "  trace_incomplete: host-12.ncclrr |  |  | 1 | \n");
  const QModelIndex sum = m.IndexOfFinding(1);
  ASSERT_TRUE(sum.isValid());
  EXPECT_EQ(m.FindingAt(sum), 1);
  EXPECT_EQ(m.FindingAt(sum.parent()), -1);
  EXPECT_EQ(m.data(sum, Qt::ToolTipRole).toString().toStdString(),
            "Rank 1 issued seq 5 and 6 in the other order.");
  EXPECT_FALSE(m.IndexOfFinding(7).isValid());
  m.SetSession(nullptr);  // closing a trace empties the tree
  EXPECT_EQ(m.rowCount(), 0);
}

TEST(FindingsModel, TheRealReportOfASwapTrace) {
  testing::EnsureApp();
  auto s = testing::Load(testing::WriteSwapTrace("findings-real"));
  ASSERT_TRUE(s);
  FindingsModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  m.SetSession(s);
  ASSERT_GE(m.rowCount(), 1);
  int rows = 0;
  for (int g = 0; g < m.rowCount(); ++g) rows += m.rowCount(m.index(g, 0));
  EXPECT_EQ(rows, static_cast<int>(s->report().findings.size() + s->report().notes.size()));
  for (size_t i = 0; i < s->report().findings.size(); ++i)
    EXPECT_EQ(m.data(m.IndexOfFinding(i)).toString().toStdString(),
              s->report().findings[i].short_text);
}

// The data checks' findings and notes (traces recorded with --sketch) list like any other:
// `m` shows the report of the sketch scenario `name` (tests/analysis/sketch_scenarios.h).
std::string ShowSketchScenario(FindingsModel& m, const std::string& name) {
  for (const auto& sc : ::ncclrr::testing::SketchScenarios())
    if (sc.name == name)
      m.SetSession(testing::Load(testing::WriteScript("findings-" + name, sc.build())));
  return DumpModel(m).toStdString();
}

TEST(FindingsModel, DataFindingsAndNotesOfSketchedTraces) {
  testing::EnsureApp();
  FindingsModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  const std::string header = "Finding | Communicator | Seq | Ranks | Repeats\n";
  EXPECT_EQ(
      ShowSketchScenario(m, "sketch_buffer_race"),
      header +
          "buffer_race (2) |  |  |  | \n"
          "  rank 1's send buffer of AllReduce(5000 float32, sum) changed while the collective "
          "was in flight | dp | 6 | 1 | 0\n"
          "  rank 1's send buffer of AllReduce(3000 float32, sum) changed while the collective "
          "was in flight | dp | 12 | 1 | 0\n");
  // One rank's output differs from the other's: output_divergence (its wrong sum folded in).
  EXPECT_EQ(ShowSketchScenario(m, "sketch_wrong_sum"),
            header +
                "output_divergence (1) |  |  |  | \n"
                "  rank 1's output of AllReduce(5000 float32, sum) differs from rank 0's | dp | 9 "
                "| 1 | 0\n");
  EXPECT_NE(m.data(m.IndexOfFinding(0), Qt::ToolTipRole).toString().indexOf("off by 0.25"), -1);
  // Every rank's output wrong alike: wrong_sum.
  const QString everywhere =
      QString::fromStdString(ShowSketchScenario(m, "sketch_wrong_sum_everywhere"));
  EXPECT_TRUE(everywhere.contains("wrong_sum (1)")) << everywhere.toStdString();
  EXPECT_FALSE(everywhere.contains("output_divergence")) << everywhere.toStdString();
  EXPECT_EQ(ShowSketchScenario(m, "sketch_max_op"),
            header +
                "notes (1) |  |  |  | \n"
                "  data_unchecked: comm 0xda7a000000000001 |  |  | 0, 1 | \n");
}

}  // namespace
}  // namespace ncclrr::viewer
