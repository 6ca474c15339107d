// Intervals and ComputeRuns: what a frame paints, and that it stays O(pixels).
#include "models/intervals.h"

#include <gtest/gtest.h>

namespace ncclrr::viewer {
namespace {

TimeAxis Axis(int64_t begin, int64_t end, double width) {
  TimeAxis a;
  a.Resize(width);
  a.origin_ns = begin;
  a.ns_per_px = static_cast<double>(end - begin) / width;
  return a;
}

TEST(Intervals, FinishSortsByBeginAndReportsThePermutation) {
  Intervals iv;
  iv.Add(30, 40);
  iv.Add(10, 100);
  iv.Add(20, 25);
  std::vector<uint32_t> perm;
  iv.Finish(&perm);
  EXPECT_EQ(iv.begin, (std::vector<int64_t>{10, 20, 30}));
  EXPECT_EQ(iv.end, (std::vector<int64_t>{100, 25, 40}));
  EXPECT_EQ(iv.max_end, (std::vector<int64_t>{100, 100, 100}));
  EXPECT_EQ(perm, (std::vector<uint32_t>{1, 2, 0}));
  EXPECT_EQ(iv.FirstReaching(50), 0u);  // the long first interval reaches 50
  EXPECT_EQ(iv.FirstReaching(101), 3u);
  EXPECT_EQ(iv.FirstBeginningAt(20), 1u);
}

TEST(Intervals, WideIntervalsGetOneRunEach) {
  Intervals iv;
  for (int i = 0; i < 3; ++i) iv.Add(i * 200, i * 200 + 100);
  iv.Finish();
  std::vector<uint8_t> style = {1, 2, 3};
  std::vector<PixelRun> runs;
  ComputeRuns(iv, {&style, nullptr, nullptr}, Axis(0, 1000, 1000), &runs);
  ASSERT_EQ(runs.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ(runs[i].x0, i * 200);
    EXPECT_DOUBLE_EQ(runs[i].x1, i * 200 + 100);
    EXPECT_EQ(runs[i].style, i + 1);
    EXPECT_EQ(runs[i].count, 1u);
    EXPECT_FALSE(runs[i].merged);
  }
}

TEST(Intervals, AMillionSubPixelCallsBecomeAFewRuns) {
  Intervals iv;
  const int n = 1'000'000;
  for (int i = 0; i < n; ++i) iv.Add(int64_t{i} * 20, int64_t{i} * 20 + 10);
  iv.Finish();
  std::vector<uint8_t> style(n, 0);
  std::vector<uint32_t> marked = {500'000};
  std::vector<uint8_t> bits = {1};
  std::vector<PixelRun> runs;
  ComputeRuns(iv, {&style, &marked, &bits}, Axis(0, int64_t{n} * 20, 1000), &runs);
  // One merged run before the marked call, its own column, one after: not a million.
  ASSERT_LE(runs.size(), 4u);
  uint64_t covered = 0;
  bool saw_mark = false;
  for (const PixelRun& r : runs) {
    covered += r.count;
    if (r.flags) {
      saw_mark = true;
      EXPECT_NEAR(r.x0, 500.0, 1.0);  // the marked call sits in the middle
      EXPECT_LE(r.x1 - r.x0, 2.0);
    }
  }
  EXPECT_TRUE(saw_mark);
  EXPECT_EQ(covered, static_cast<uint64_t>(n));  // every call is shown by exactly one run
  EXPECT_EQ(FlagsIn({&style, &marked, &bits}, 0, 500'000), 0);
  EXPECT_EQ(FlagsIn({&style, &marked, &bits}, 0, 500'001), 1);
}

TEST(Intervals, ZoomedInOnlyTheVisibleCallsAreVisited) {
  Intervals iv;
  for (int i = 0; i < 100'000; ++i) iv.Add(int64_t{i} * 1000, int64_t{i} * 1000 + 600);
  iv.Finish();
  std::vector<PixelRun> runs;
  ComputeRuns(iv, {}, Axis(50'000'300, 50'010'000, 970), &runs);  // ~10 calls, 60 px each
  ASSERT_GE(runs.size(), 10u);
  ASSERT_LE(runs.size(), 11u);
  EXPECT_EQ(runs.front().first, 50'000u);  // the call cut by the left edge is drawn from -1
  EXPECT_DOUBLE_EQ(runs.front().x0, -1.0);
  EXPECT_NEAR(runs.front().x1, 30.0, 0.01);
}

TEST(Intervals, CallsInsideALongCallAreStillDrawn) {
  Intervals iv;
  iv.Add(0, 1000);  // e.g. a call in flight until the end
  for (int i = 1; i < 10; ++i) iv.Add(i * 100, i * 100 + 50);
  iv.Finish();
  std::vector<PixelRun> runs;
  ComputeRuns(iv, {}, Axis(0, 1000, 1000), &runs);
  EXPECT_EQ(runs.size(), 10u);
}

TEST(Intervals, MergedRunsOfDifferentStylesStaySeparate) {
  Intervals iv;
  std::vector<uint8_t> style;
  for (int i = 0; i < 2000; ++i) {
    iv.Add(i * 10, i * 10 + 5);
    style.push_back(i < 1000 ? 0 : 1);
  }
  iv.Finish();
  std::vector<PixelRun> runs;
  ComputeRuns(iv, {&style, nullptr, nullptr}, Axis(0, 20'000, 100), &runs);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].style, 0);
  EXPECT_EQ(runs[1].style, 1);
  EXPECT_NEAR(runs[1].x0, 50.0, 1.0);
}

}  // namespace
}  // namespace ncclrr::viewer
