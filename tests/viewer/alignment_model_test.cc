// AlignmentModel: rows = seq, columns = ranks; cells that differ from their row's majority and
// ranks missing at a position are marked. The viewer's own presentation, so these tests give the
// session an empty report (what is *wrong* is the analysis library's business).
#include "models/alignment_model.h"

#include <gtest/gtest.h>
#include <QAbstractItemModelTester>

#include "models/model_dump.h"
#include "viewer_test_util.h"

namespace ncclrr::viewer {
namespace {

QString Dump(const AlignmentModel& m, int rows) {
  DumpOptions o;
  o.max_rows = rows;
  o.extra_role = AlignmentModel::kStateRole;
  o.vertical_headers = true;
  return DumpModel(m, o);
}

// Two steps of the generator's loop; rank `delta_rank` changes the count of one call by `delta`.
std::shared_ptr<const TraceSession> TwoSteps(const std::string& name, int ranks, int delta_rank,
                                             int delta_step, int delta_index, int64_t delta,
                                             int missing_rank = -1) {
  testing::EnsureApp();
  SyntheticTraceOptions o;
  o.dir = testing::TempDir(name);
  o.ranks = ranks;
  o.steps = 2;
  o.count_delta_rank = delta_rank;
  o.count_delta_step = delta_step;
  o.count_delta_index = delta_index;
  o.count_delta = delta;
  o.missing_rank = missing_rank;  // stops at step 1, call 2
  o.missing_step = 1;
  o.missing_index = 2;
  EXPECT_TRUE(WriteSyntheticTrace(o).ok());
  return testing::LoadWithReport(o.dir, {});
}

TEST(AlignmentModel, ACountMismatchIsTheOddCellOut) {
  auto s = TwoSteps("align-count", 3, /*delta_rank=*/2, /*step=*/1, /*index=*/2, 100);
  ASSERT_TRUE(s);
  AlignmentModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  m.SetSession(s);
  m.SetComm(0);
  EXPECT_EQ(m.rowCount(), 8);
  EXPECT_EQ(m.columnCount(), 3);
  EXPECT_EQ(Dump(m, -1).toStdString(),
            " | rank 0 | rank 1 | rank 2\n"
            "seq 0 | AllReduce 1728 \u00d7 float32 sum{0} | AllReduce 1728 \u00d7 float32 sum{0} | "
            "AllReduce 1728 \u00d7 float32 sum{0}\n"
            "seq 1 | AllReduce 36864 \u00d7 float32 sum{0} | AllReduce 36864 \u00d7 float32 sum{0} "
            "| AllReduce 36864 \u00d7 float32 sum{0}\n"
            "seq 2 | AllReduce 36864 \u00d7 float32 sum{0} | AllReduce 36864 \u00d7 float32 sum{0} "
            "| AllReduce 36864 \u00d7 float32 sum{0}\n"
            "seq 3 | AllReduce 512 \u00d7 float32 sum{0} | AllReduce 512 \u00d7 float32 sum{0} | "
            "AllReduce 512 \u00d7 float32 sum{0}\n"
            "seq 4 | AllReduce 1728 \u00d7 float32 sum{0} | AllReduce 1728 \u00d7 float32 sum{0} | "
            "AllReduce 1728 \u00d7 float32 sum{0}\n"
            "seq 5 | AllReduce 36864 \u00d7 float32 sum{0} | AllReduce 36864 \u00d7 float32 sum{0} "
            "| AllReduce 36864 \u00d7 float32 sum{0}\n"
            "seq 6 | AllReduce 36864 \u00d7 float32 sum{0} | AllReduce 36864 \u00d7 float32 sum{0} "
            "| AllReduce 36964 \u00d7 float32 sum{1}\n"
            "seq 7 | AllReduce 512 \u00d7 float32 sum{0} | AllReduce 512 \u00d7 float32 sum{0} | "
            "AllReduce 512 \u00d7 float32 sum{0}\n");
  EXPECT_EQ(m.StateAt(6, 2), AlignmentModel::kDiffers);
  EXPECT_TRUE(m.data(m.index(6, 2), Qt::BackgroundRole).isValid());
  EXPECT_FALSE(m.data(m.index(6, 1), Qt::BackgroundRole).isValid());
  // The cell knows its call, and the call its cell.
  auto call = m.CallAt(m.index(6, 2));
  ASSERT_TRUE(call);
  EXPECT_EQ(s->model().call(*call).count, 36964u);
  EXPECT_EQ(m.IndexOf(6, 2), m.index(6, 2));
  EXPECT_FALSE(m.IndexOf(8, 0).isValid());
}

TEST(AlignmentModel, ARankThatStoppedLeavesMissingCellsAndATieMarksBoth) {
  auto s = TwoSteps("align-missing", 2, /*delta_rank=*/1, /*step=*/0, /*index=*/0, -8,
                    /*missing_rank=*/1);
  ASSERT_TRUE(s);
  AlignmentModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  m.SetSession(s);
  m.SetComm(0);
  EXPECT_EQ(
      Dump(m, -1).toStdString(),
      " | rank 0 | rank 1\n"
      "seq 0 | AllReduce 1728 \u00d7 float32 sum{1} | AllReduce 1720 \u00d7 float32 sum{1}\n"
      "seq 1 | AllReduce 36864 \u00d7 float32 sum{0} | AllReduce 36864 \u00d7 float32 sum{0}\n"
      "seq 2 | AllReduce 36864 \u00d7 float32 sum{0} | AllReduce 36864 \u00d7 float32 sum{0}\n"
      "seq 3 | AllReduce 512 \u00d7 float32 sum{0} | AllReduce 512 \u00d7 float32 sum{0}\n"
      "seq 4 | AllReduce 1728 \u00d7 float32 sum{0} | AllReduce 1728 \u00d7 float32 sum{0}\n"
      "seq 5 | AllReduce 36864 \u00d7 float32 sum{0} | AllReduce 36864 \u00d7 float32 sum{0}\n"
      "seq 6 | AllReduce 36864 \u00d7 float32 sum{0} | \u2014 (no call){2}\n"
      "seq 7 | AllReduce 512 \u00d7 float32 sum{0} | \u2014 (no call){2}\n");
}

TEST(AlignmentModel, FindingCellsTakeTheFindingColour) {
  testing::EnsureApp();
  auto s = testing::Load(testing::WriteSwapTrace("align-swap"));
  ASSERT_TRUE(s);
  ASSERT_FALSE(s->report().findings.empty());
  AlignmentModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  m.SetSession(s);
  m.SetComm(0);
  int finding_cells = 0;
  for (int r = 0; r < m.rowCount(); ++r)
    for (int c = 0; c < m.columnCount(); ++c)
      if (m.StateAt(r, c) == AlignmentModel::kFinding) {
        ++finding_cells;
        EXPECT_TRUE(s->marks().MarksOf(*m.CallAt(m.index(r, c))) & mark::kAnyFinding);
        EXPECT_TRUE(m.data(m.index(r, c), Qt::ToolTipRole).toString().contains("seq"));
      }
  EXPECT_GT(finding_cells, 0);
  m.SetComm(5);  // no such communicator: an empty table, not a crash
  EXPECT_EQ(m.rowCount(), 0);
}

}  // namespace
}  // namespace ncclrr::viewer
