// Offscreen rendering, checked pixel by pixel: marked calls are red exactly where the calls are,
// a clean trace has no red, hangs show where the trace ends, a selection outlines the calls NCCL
// pairs, and a dense trace is painted from O(pixels) runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "models/timeline_style.h"
#include "viewer_test_util.h"

namespace ncclrr::viewer {
namespace {

using testing::CountPixels;
using testing::Render;

// The time span of some calls, in timeline ns.
std::pair<int64_t, int64_t> SpanOf(const TraceSession& s, const std::vector<CallRef>& calls) {
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (CallRef c : calls) {
    auto box = s.timeline().Locate(s.model(), c);
    EXPECT_TRUE(box);
    if (!box) continue;
    const Lane& lane = s.timeline().lanes[box->lane];
    lo = std::min(lo, lane.boxes.begin[box->pos]);
    hi = std::max(hi, lane.boxes.end[box->pos]);
  }
  return {lo, hi};
}

TEST(Render, ASwapIsRedExactlyAtTheMismatchedCalls) {
  testing::EnsureApp();
  auto s = testing::Load(testing::WriteSwapTrace("render-swap"));
  ASSERT_TRUE(s);
  ASSERT_FALSE(s->report().findings.empty());
  std::vector<CallRef> marked;
  for (const auto& [key, bits] : s->marks().all()) marked.push_back(CallFromKey(key));
  const auto [lo, hi] = SpanOf(*s, marked);
  const int64_t pad = (hi - lo) * 2;  // the unmarked neighbours too
  auto r = Render(*s, 1600, 300, lo - pad, hi + pad);
  const QColor red = FindingColor();
  // Each marked call: red inside its rectangle, on its rank's row.
  std::vector<QRectF> rects;
  for (CallRef c : marked) {
    auto rect = CallRect(r->scene, c);
    ASSERT_TRUE(rect);
    const int rank = s->model().call(c).rank;
    const DisplayRow& row =
        r->layout.rows[r->layout.RowOfLane(s->timeline().Locate(s->model(), c)->lane)];
    EXPECT_EQ(s->timeline().devices[row.device].world_rank, rank);
    EXPECT_GT(CountPixels(r->image, red, *rect), rect->width() * rect->height() / 4)
        << "rank " << rank << " seq " << s->model().call(c).seq;
    rects.push_back(rect->adjusted(-2, -2, 2, 2));
  }
  // And nowhere else.
  int total = CountPixels(r->image, red), inside = 0;
  for (const QRectF& rect : rects) inside += CountPixels(r->image, red, rect);
  EXPECT_EQ(total, inside);
  if (std::getenv("NCCLRR_VIEWER_TEST_SAVE")) r->image.save("/tmp/render-swap.png");
  // Unmarked calls keep their collective's colour.
  EXPECT_GT(CountPixels(r->image, StyleColor(BoxStyle::kAllReduce)), 100);
  EXPECT_GT(r->stats.labels, 0u);

  // Zoomed out to the whole trace, the red is still on the right rows and x-ranges.
  auto whole = Render(*s, 1600, 300);
  for (CallRef c : marked) {
    auto rect = CallRect(whole->scene, c);
    ASSERT_TRUE(rect);
    EXPECT_GT(CountPixels(whole->image, red, rect->adjusted(-1, 0, 1, 0)), 0);
  }
}

TEST(Render, ACleanTraceHasNoRed) {
  testing::EnsureApp();
  auto s = testing::Load(testing::WriteCleanTrace("render-clean", 4, 6));
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->report().findings.empty());
  auto r = Render(*s, 1400, 400);
  EXPECT_EQ(CountPixels(r->image, FindingColor()), 0);
  EXPECT_EQ(CountPixels(r->image, InFlightColor()), 0);
  EXPECT_GT(CountPixels(r->image, StyleColor(BoxStyle::kAllReduce)), 500);
  EXPECT_EQ(r->stats.labels, 0u);
}

TEST(Render, AHangIsMarkedAndTheEndOfEachTraceShown) {
  testing::EnsureApp();
  auto s = testing::Load(testing::WriteHangTrace("render-hang"));
  ASSERT_TRUE(s);
  // The synthetic generator stamps its calls with made-up times but its clock pairs (the last sign
  // of life) with real ones: show up to the last sign of life.
  const DeviceRow& d = s->timeline().devices[1];
  ASSERT_FALSE(d.ended_cleanly);
  auto r = Render(*s, 1400, 300, 0, d.last_alive_ns + d.last_alive_ns / 10);
  EXPECT_GT(CountPixels(r->image, FindingColor()), 0) << "missing_call's calls are red";
  // The dashed "trace ends" line of a rank whose file has no footer.
  const double x = r->scene.geometry.label_width + r->scene.axis.ToPixel(d.last_alive_ns);
  EXPECT_GT(CountPixels(r->image, FindingBorderColor(),
                        QRectF(x - 2, r->scene.geometry.ruler_height, 4, r->layout.height)),
            5);
}

TEST(Render, CallsInFlightAreAmberAndGpuLanesArePainted) {
  testing::EnsureApp();
  auto s = testing::LoadWithReport(testing::WriteRichTrace("render-rich"), {});
  ASSERT_TRUE(s);
  const DeviceRow& r1 = s->timeline().devices[1];
  const Lane& lane = s->timeline().lanes[r1.lanes[0]];
  auto r = Render(*s, 1400, 300, 0, lane.boxes.end[4] + 50'000);
  const CallRef hung{lane.file, lane.call[4]};
  auto rect = CallRect(r->scene, hung);
  ASSERT_TRUE(rect);
  EXPECT_GT(CountPixels(r->image, InFlightColor(), *rect), rect->width() * rect->height() / 4);
  EXPECT_EQ(CountPixels(r->image, FindingColor()), 0);  // no finding in our own empty report
  // Four GPU intervals per rank in the thinner lane under each host lane.
  const Lane& gpu = s->timeline().lanes[s->timeline().devices[0].lanes[1]];
  const DisplayRow& row = r->layout.rows[r->layout.RowOfLane(s->timeline().devices[0].lanes[1])];
  const double top = r->scene.geometry.ruler_height + row.y;
  for (size_t k = 0; k < gpu.boxes.size(); ++k) {
    const double x0 = r->scene.geometry.label_width + r->scene.axis.ToPixel(gpu.boxes.begin[k]);
    const double x1 = r->scene.geometry.label_width + r->scene.axis.ToPixel(gpu.boxes.end[k]);
    EXPECT_GT(CountPixels(r->image, StyleColor(BoxStyle::kAllReduce),
                          QRectF(x0, top, x1 - x0, row.height)),
              0)
        << "GPU interval " << k;
  }
}

TEST(Render, WrongSumsRacesAndHangsAreHatchedDistinctly) {
  testing::EnsureApp();
  const std::string dir = testing::WriteCleanTrace("render-kinds", 2, 1);
  analysis::Report report;
  const analysis::FindingKind kinds[] = {
      analysis::FindingKind::kWrongSum, analysis::FindingKind::kBufferRace,
      analysis::FindingKind::kMissingCall, analysis::FindingKind::kCountMismatch};
  for (uint32_t k = 0; k < 4; ++k) {
    analysis::Finding f;
    f.kind = kinds[k];
    f.short_text = "finding " + std::to_string(k);
    f.calls.push_back({{0, k}, 0, k});  // rank-file 0's call k
    report.findings.push_back(f);
  }
  auto s = testing::LoadWithReport(dir, report);
  ASSERT_TRUE(s);
  const Lane& lane = s->timeline().lanes[0];
  auto r = Render(*s, 1600, 200, 0, lane.boxes.end[3] + 10'000);
  // Every one is red; the hatch tells them apart: white (wrong sum), yellow (race), dark (hang),
  // none (a structural mismatch).
  const QColor hatch[] = {QColor(Qt::white), QColor(0xff, 0xe0, 0x4d), QColor(0x20, 0x20, 0x20),
                          QColor()};
  for (uint32_t k = 0; k < 4; ++k) {
    auto rect = CallRect(r->scene, {lane.file, k});
    ASSERT_TRUE(rect);
    const QRectF inner = rect->adjusted(2, 2, -2, -2);
    EXPECT_GT(CountPixels(r->image, FindingColor(), inner), 10) << k;
    for (uint32_t other = 0; other < 3; ++other) {
      const int n = CountPixels(r->image, hatch[other], inner);
      if (other == k)
        EXPECT_GT(n, 5) << "finding " << k << " lacks its hatch";
      else
        EXPECT_EQ(n, 0) << "finding " << k << " has the hatch of " << other;
    }
  }
}

TEST(Render, SelectionOutlinesAndJoinsTheCallsNcclPairs) {
  testing::EnsureApp();
  auto s = testing::LoadWithReport(testing::WriteCleanTrace("render-link", 3, 2), {});
  ASSERT_TRUE(s);
  const CallRef pick{0, 2};
  const auto linked = s->Linked(pick);
  ASSERT_EQ(linked.size(), 3u);
  const auto [lo, hi] = SpanOf(*s, linked);
  auto plain = Render(*s, 1200, 400, lo - 50'000, hi + 50'000);
  auto selected = Render(*s, 1200, 400, lo - 50'000, hi + 50'000, pick);
  EXPECT_EQ(CountPixels(plain->image, LinkColor()), 0);
  for (CallRef c : linked) {
    auto rect = CallRect(selected->scene, c);
    ASSERT_TRUE(rect);
    EXPECT_GT(CountPixels(selected->image, LinkColor(), rect->adjusted(-4, -4, 4, 4)), 10);
  }
}

TEST(Render, ADenseTraceIsPaintedFromFewRuns) {
  testing::EnsureApp();
  SyntheticTraceOptions o;
  o.dir = testing::TempDir("render-dense");
  o.ranks = 4;
  o.steps = 25'000;  // 100 k calls per rank
  ASSERT_TRUE(WriteSyntheticTrace(o).ok());
  auto s = testing::LoadWithReport(o.dir, {});
  ASSERT_TRUE(s);
  auto r = Render(*s, 1000, 300);
  EXPECT_EQ(s->timeline().boxes, 400'000u);
  // O(pixels): a bounded number of runs per row, whatever the number of calls.
  EXPECT_LE(r->stats.runs, 4u * 2u * static_cast<size_t>(r->scene.axis.width_px));
  EXPECT_GT(CountPixels(r->image, StyleColor(BoxStyle::kAllReduce)), 1000);
}

}  // namespace
}  // namespace ncclrr::viewer
