// The timeline widget's interaction: keys, wheel, drag, box zoom, clicks on calls and labels.
#include "timeline_widget.h"

#include <gtest/gtest.h>
#include <QApplication>
#include <QSignalSpy>
#include <QTest>
#include <QWheelEvent>

#include "viewer_test_util.h"

namespace ncclrr::viewer {
namespace {

class TimelineWidgetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::EnsureApp();
    session_ = testing::Load(testing::WriteSwapTrace("widget"));
    ASSERT_TRUE(session_);
    w_.resize(1200, 400);
    w_.show();
    w_.SetSession(session_);
    QApplication::processEvents();
  }
  QPointF PlotPoint(double fraction, double y) const {
    return {w_.scene().geometry.label_width + fraction * w_.axis().width_px, y};
  }
  std::shared_ptr<const TraceSession> session_;
  TimelineWidget w_;
};

TEST_F(TimelineWidgetTest, KeysZoomPanAndFit) {
  const TimeAxis fitted = w_.axis();
  QTest::keyClick(&w_, Qt::Key_Plus);
  EXPECT_NEAR(w_.axis().ns_per_px, fitted.ns_per_px / 1.5, 1e-9);
  const int64_t origin = w_.axis().origin_ns;
  QTest::keyClick(&w_, Qt::Key_Right);
  EXPECT_GT(w_.axis().origin_ns, origin);
  QTest::keyClick(&w_, Qt::Key_A);
  EXPECT_EQ(w_.axis().origin_ns, origin);
  QTest::keyClick(&w_, Qt::Key_F);
  EXPECT_EQ(w_.axis().origin_ns, fitted.origin_ns);
  EXPECT_DOUBLE_EQ(w_.axis().ns_per_px, fitted.ns_per_px);
}

TEST_F(TimelineWidgetTest, WheelZoomsAtTheCursor) {
  const QPointF at = PlotPoint(0.25, 100);
  const int64_t under = w_.axis().ToTime(at.x() - w_.scene().geometry.label_width);
  QWheelEvent wheel(at, w_.mapToGlobal(at), QPoint(), QPoint(0, 240), Qt::NoButton, Qt::NoModifier,
                    Qt::NoScrollPhase, false);
  QApplication::sendEvent(&w_, &wheel);
  EXPECT_NEAR(
      static_cast<double>(w_.axis().ToTime(at.x() - w_.scene().geometry.label_width) - under), 0.0,
      2.0);
  EXPECT_LT(w_.axis().ns_per_px, session_->timeline().end_ns / 900.0);
}

TEST_F(TimelineWidgetTest, DragPansAndRightDragZoomsToTheBox) {
  const int64_t origin = w_.axis().origin_ns;
  const double npp = w_.axis().ns_per_px;
  QTest::mousePress(&w_, Qt::LeftButton, {}, PlotPoint(0.5, 100).toPoint());
  QTest::mouseMove(&w_, PlotPoint(0.4, 100).toPoint());
  QTest::mouseMove(&w_, PlotPoint(0.3, 100).toPoint());
  QTest::mouseRelease(&w_, Qt::LeftButton, {}, PlotPoint(0.3, 100).toPoint());
  EXPECT_NEAR(static_cast<double>(w_.axis().origin_ns - origin), 0.2 * w_.axis().width_px * npp,
              2 * npp);
  const int64_t a = w_.axis().ToTime(0.2 * w_.axis().width_px);
  const int64_t b = w_.axis().ToTime(0.4 * w_.axis().width_px);
  QTest::mousePress(&w_, Qt::RightButton, {}, PlotPoint(0.2, 100).toPoint());
  QTest::mouseMove(&w_, PlotPoint(0.3, 100).toPoint());
  QTest::mouseMove(&w_, PlotPoint(0.4, 100).toPoint());
  QTest::mouseRelease(&w_, Qt::RightButton, {}, PlotPoint(0.4, 100).toPoint());
  EXPECT_NEAR(static_cast<double>(w_.axis().span_ns()), (b - a) / 0.96, (b - a) * 0.02);
}

TEST_F(TimelineWidgetTest, ClickSelectsACallAndTheLabelCollapsesTheHost) {
  QSignalSpy selected(&w_, &TimelineWidget::callSelected);
  const CallRef target{0, 5};
  w_.SelectCall(target, true);
  QApplication::processEvents();
  auto rect = CallRect(w_.scene(), target);
  ASSERT_TRUE(rect);
  w_.SelectCall(std::nullopt, false);
  QTest::mouseClick(&w_, Qt::LeftButton, {}, rect->center().toPoint());
  ASSERT_EQ(selected.count(), 1);
  EXPECT_EQ(selected.front().front().toULongLong(), CallKey(target));
  // The host header row is the first row under the ruler.
  const size_t rows = w_.scene().layout->rows.size();
  QTest::mouseClick(&w_, Qt::LeftButton, {},
                    QPoint(20, static_cast<int>(w_.scene().geometry.ruler_height + 5)));
  EXPECT_EQ(w_.scene().layout->rows.size(), 1u);
  EXPECT_TRUE(w_.scene().layout->rows[0].collapsed);
  QTest::mouseClick(&w_, Qt::LeftButton, {},
                    QPoint(20, static_cast<int>(w_.scene().geometry.ruler_height + 5)));
  EXPECT_EQ(w_.scene().layout->rows.size(), rows);
}

}  // namespace
}  // namespace ncclrr::viewer
