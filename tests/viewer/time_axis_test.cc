// TimeAxis: the time <-> pixel math of the timeline, without widgets.
#include "models/time_axis.h"

#include <gtest/gtest.h>

#include <vector>

namespace ncclrr::viewer {
namespace {

TEST(TimeAxis, PixelsAndTimesRoundTripFarFromZero) {
  TimeAxis a;
  a.origin_ns = 1'700'000'000'000'000'000;  // absolute CLOCK_REALTIME ns would lose precision
  a.ns_per_px = 2.5;
  a.Resize(1000);
  for (int64_t t : {a.origin_ns, a.origin_ns + 1, a.origin_ns + 2500, a.origin_ns + 12345})
    EXPECT_NEAR(static_cast<double>(a.ToTime(a.ToPixel(t)) - t), 0.0, 1.0) << t;
  EXPECT_DOUBLE_EQ(a.ToPixel(a.origin_ns + 250), 100.0);
  EXPECT_EQ(a.end_ns(), a.origin_ns + 2500);
}

TEST(TimeAxis, FitLeavesTheMarginOnBothSides) {
  TimeAxis a;
  a.Resize(1000);
  a.Fit(1000, 2000, 0.02);
  // The origin is a whole nanosecond: at ~1 ns per pixel that is within half a pixel.
  EXPECT_NEAR(a.ToPixel(1000), 20.0, 0.5);
  EXPECT_NEAR(a.ToPixel(2000), 980.0, 0.5);
  a.Fit(0, 1'000'000'000, 0.02);
  EXPECT_NEAR(a.ToPixel(0), 20.0, 0.001);
  EXPECT_NEAR(a.ToPixel(1'000'000'000), 980.0, 0.001);
  a.Fit(5000, 5000);  // an empty range still gives a usable axis
  EXPECT_GT(a.ns_per_px, 0);
  EXPECT_LE(a.ToPixel(5000), 1000);
}

TEST(TimeAxis, ZoomKeepsTheTimeUnderTheCursor) {
  TimeAxis a;
  a.Resize(1200);
  a.Fit(0, 1'000'000'000);
  for (double px : {0.0, 300.0, 1199.0}) {
    const int64_t before = a.ToTime(px);
    a.ZoomAt(px, 3.0);
    EXPECT_NEAR(static_cast<double>(a.ToTime(px) - before), 0.0, 1.0);
    a.ZoomAt(px, 1 / 3.0);
    EXPECT_NEAR(static_cast<double>(a.ToTime(px) - before), 0.0, 1.0);
  }
}

TEST(TimeAxis, ZoomIsClampedBothWays) {
  TimeAxis a;
  a.Resize(1000);
  a.Fit(0, 1000);
  a.ZoomAt(500, 1e12);
  EXPECT_DOUBLE_EQ(a.ns_per_px, TimeAxis::kMinNsPerPx);
  a.ZoomAt(500, 1e-30);
  EXPECT_DOUBLE_EQ(a.ns_per_px, TimeAxis::kMaxSpanNs / 1000);
  a.ZoomAt(500, 0);  // ignored, not a division by zero
  EXPECT_DOUBLE_EQ(a.ns_per_px, TimeAxis::kMaxSpanNs / 1000);
}

TEST(TimeAxis, PanMovesByWholePixels) {
  TimeAxis a;
  a.Resize(800);
  a.ns_per_px = 10;
  a.origin_ns = 500;
  a.PanPixels(100);
  EXPECT_EQ(a.origin_ns, 1500);
  a.PanPixels(-150);
  EXPECT_EQ(a.origin_ns, 0);
}

TEST(TimeAxis, CenterOnKeepsTheZoomWhenTheRangeFits) {
  TimeAxis a;
  a.Resize(1000);
  a.ns_per_px = 10;
  a.CenterOn(100'000, 101'000);  // 100 px wide: fits
  EXPECT_DOUBLE_EQ(a.ns_per_px, 10);
  EXPECT_NEAR(a.ToPixel(100'500), 500.0, 0.5);
  a.CenterOn(0, 1'000'000);  // 100000 px at this zoom: zooms out to 80% of the width
  EXPECT_NEAR(a.ToPixel(0), 100.0, 0.5);
  EXPECT_NEAR(a.ToPixel(1'000'000), 900.0, 0.5);
}

TEST(TimeAxis, TicksFollowTheOneTwoFiveSeries) {
  TimeAxis a;
  a.Resize(1000);
  a.origin_ns = 0;
  a.ns_per_px = 10'000;  // 10 ms across
  std::vector<std::string> labels;
  int minor = 0;
  for (const RulerTick& t : a.Ticks(90)) {
    if (t.major)
      labels.push_back(t.label);
    else
      ++minor;
  }
  EXPECT_EQ(labels, (std::vector<std::string>{"0 ms", "1 ms", "2 ms", "3 ms", "4 ms", "5 ms",
                                              "6 ms", "7 ms", "8 ms", "9 ms", "10 ms"}));
  EXPECT_EQ(minor, 40);  // 1 ms majors, 200 us minors
  a.ns_per_px = 3;       // 3 us across: 500 ns majors, labelled in us
  labels.clear();
  for (const RulerTick& t : a.Ticks(90))
    if (t.major) labels.push_back(t.label);
  EXPECT_EQ(labels, (std::vector<std::string>{"0.0 us", "0.5 us", "1.0 us", "1.5 us", "2.0 us",
                                              "2.5 us", "3.0 us"}));
}

TEST(TimeAxis, TicksStartAtTheFirstVisibleStep) {
  TimeAxis a;
  a.Resize(500);
  a.origin_ns = -1234;
  a.ns_per_px = 1;
  const auto ticks = a.Ticks(90);
  ASSERT_FALSE(ticks.empty());
  EXPECT_GE(ticks.front().x, 0);
  EXPECT_LT(ticks.front().x, 100);
  for (size_t i = 1; i < ticks.size(); ++i) EXPECT_GT(ticks[i].time_ns, ticks[i - 1].time_ns);
}

TEST(TimeAxis, FormatTimeUsesTheUnitOfTheStep) {
  EXPECT_EQ(FormatTime(1500, 500), "1.5 us");
  EXPECT_EQ(FormatTime(0, 1'000'000), "0 ms");
  EXPECT_EQ(FormatTime(250, 50), "250 ns");
  EXPECT_EQ(FormatTime(1'234'567, 1), "1234.567 us");  // long numbers move up a unit
  EXPECT_EQ(FormatTime(-2'000'000, 1'000'000), "-2 ms");
  EXPECT_EQ(FormatTime(3'000'000'000, 1'000'000'000), "3 s");
}

TEST(TimeAxis, FormatDurationHasThreeSignificantDigits) {
  EXPECT_EQ(FormatDuration(999), "999 ns");
  EXPECT_EQ(FormatDuration(4580), "4.58 us");
  EXPECT_EQ(FormatDuration(12'345'678), "12.3 ms");
  EXPECT_EQ(FormatDuration(2'500'000'000), "2.50 s");
  EXPECT_EQ(FormatDuration(123'456), "123 us");
}

}  // namespace
}  // namespace ncclrr::viewer
