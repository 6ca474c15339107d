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
    testing::EnsureApp();  // before any widget exists (ctest runs each test in its own process)
    session_ = testing::Load(testing::WriteSwapTrace("widget"));
    ASSERT_TRUE(session_);
    widget_ = std::make_unique<TimelineWidget>();
    widget_->resize(1200, 400);
    widget_->show();
    widget_->SetSession(session_);
    QApplication::processEvents();
  }
  QPointF PlotPoint(double fraction, double y) const {
    return {w().scene().geometry.label_width + fraction * w().axis().width_px, y};
  }
  std::shared_ptr<const TraceSession> session_;
  std::unique_ptr<TimelineWidget> widget_;
  TimelineWidget& w() const { return *widget_; }
};

TEST_F(TimelineWidgetTest, KeysZoomPanAndFit) {
  const TimeAxis fitted = w().axis();
  QTest::keyClick(&w(), Qt::Key_Plus);
  EXPECT_NEAR(w().axis().ns_per_px, fitted.ns_per_px / 1.5, 1e-9);
  const int64_t origin = w().axis().origin_ns;
  QTest::keyClick(&w(), Qt::Key_Right);
  EXPECT_GT(w().axis().origin_ns, origin);
  QTest::keyClick(&w(), Qt::Key_A);
  EXPECT_EQ(w().axis().origin_ns, origin);
  QTest::keyClick(&w(), Qt::Key_F);
  EXPECT_EQ(w().axis().origin_ns, fitted.origin_ns);
  EXPECT_DOUBLE_EQ(w().axis().ns_per_px, fitted.ns_per_px);
}

TEST_F(TimelineWidgetTest, WheelZoomsAtTheCursor) {
  const QPointF at = PlotPoint(0.25, 100);
  const int64_t under = w().axis().ToTime(at.x() - w().scene().geometry.label_width);
  QWheelEvent wheel(at, w().mapToGlobal(at), QPoint(), QPoint(0, 240), Qt::NoButton, Qt::NoModifier,
                    Qt::NoScrollPhase, false);
  QApplication::sendEvent(&w(), &wheel);
  EXPECT_NEAR(
      static_cast<double>(w().axis().ToTime(at.x() - w().scene().geometry.label_width) - under),
      0.0, 2.0);
  EXPECT_LT(w().axis().ns_per_px, session_->timeline().end_ns / 900.0);
}

TEST_F(TimelineWidgetTest, DragPansAndRightDragZoomsToTheBox) {
  const int64_t origin = w().axis().origin_ns;
  const double npp = w().axis().ns_per_px;
  QTest::mousePress(&w(), Qt::LeftButton, {}, PlotPoint(0.5, 100).toPoint());
  QTest::mouseMove(&w(), PlotPoint(0.4, 100).toPoint());
  QTest::mouseMove(&w(), PlotPoint(0.3, 100).toPoint());
  QTest::mouseRelease(&w(), Qt::LeftButton, {}, PlotPoint(0.3, 100).toPoint());
  EXPECT_NEAR(static_cast<double>(w().axis().origin_ns - origin), 0.2 * w().axis().width_px * npp,
              2 * npp);
  const int64_t a = w().axis().ToTime(0.2 * w().axis().width_px);
  const int64_t b = w().axis().ToTime(0.4 * w().axis().width_px);
  QTest::mousePress(&w(), Qt::RightButton, {}, PlotPoint(0.2, 100).toPoint());
  QTest::mouseMove(&w(), PlotPoint(0.3, 100).toPoint());
  QTest::mouseMove(&w(), PlotPoint(0.4, 100).toPoint());
  QTest::mouseRelease(&w(), Qt::RightButton, {}, PlotPoint(0.4, 100).toPoint());
  EXPECT_NEAR(static_cast<double>(w().axis().span_ns()), (b - a) / 0.96, (b - a) * 0.02);
}

TEST_F(TimelineWidgetTest, ClickSelectsACallAndTheLabelCollapsesTheHost) {
  QSignalSpy selected(&w(), &TimelineWidget::callSelected);
  const CallRef target{0, 5};
  w().SelectCall(target, true);
  QApplication::processEvents();
  auto rect = CallRect(w().scene(), target);
  ASSERT_TRUE(rect);
  w().SelectCall(std::nullopt, false);
  QTest::mouseClick(&w(), Qt::LeftButton, {}, rect->center().toPoint());
  ASSERT_EQ(selected.count(), 1);
  EXPECT_EQ(selected.front().front().toULongLong(), CallKey(target));
  // The host header row is the first row under the ruler.
  const size_t rows = w().scene().layout->rows.size();
  QTest::mouseClick(&w(), Qt::LeftButton, {},
                    QPoint(20, static_cast<int>(w().scene().geometry.ruler_height + 5)));
  EXPECT_EQ(w().scene().layout->rows.size(), 1u);
  EXPECT_TRUE(w().scene().layout->rows[0].collapsed);
  QTest::mouseClick(&w(), Qt::LeftButton, {},
                    QPoint(20, static_cast<int>(w().scene().geometry.ruler_height + 5)));
  EXPECT_EQ(w().scene().layout->rows.size(), rows);
}

}  // namespace
}  // namespace ncclrr::viewer
