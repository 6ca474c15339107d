// TimelineIndex and RowLayout over real traces (written by the synthetic generator, read by the
// recorder's reader, modelled and checked by the analysis library).
#include "models/timeline_index.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "models/timeline_layout.h"
#include "viewer_test_util.h"

namespace ncclrr::viewer {
namespace {

using testing::Load;

TEST(TimelineIndex, OneRowPerRankWithEveryCallInTimeOrder) {
  auto s = Load(testing::WriteSwapTrace("index-swap"));
  ASSERT_TRUE(s);
  const TimelineIndex& x = s->timeline();
  ASSERT_EQ(x.devices.size(), 2u);
  ASSERT_EQ(x.hosts.size(), 1u);
  EXPECT_EQ(x.hosts[0].host, "synthetic");
  EXPECT_EQ(x.devices[0].Label(), "rank 0 \u00b7 GPU 0");
  EXPECT_EQ(x.devices[1].Label(), "rank 1 \u00b7 GPU 1");
  EXPECT_EQ(x.boxes, 32u);
  for (const DeviceRow& d : x.devices) {
    ASSERT_EQ(d.lanes.size(), 1u);
    const Lane& lane = x.lanes[d.lanes[0]];
    EXPECT_EQ(lane.boxes.size(), 16u);
    EXPECT_TRUE(std::is_sorted(lane.boxes.begin.begin(), lane.boxes.begin.end()));
    EXPECT_TRUE(d.ended_cleanly);
    EXPECT_EQ(d.world_rank, static_cast<int>(d.device));
  }
  EXPECT_EQ(x.begin_ns, 0);  // times count from the first call
  EXPECT_GT(x.end_ns, x.begin_ns);
}

TEST(TimelineIndex, EveryCallIsLocatedWhereItIsDrawn) {
  auto s = Load(testing::WriteSwapTrace("index-locate"));
  ASSERT_TRUE(s);
  const TimelineIndex& x = s->timeline();
  for (uint32_t f = 0; f < s->model().dir().files.size(); ++f)
    for (uint32_t i = 0; i < s->model().file(f).calls.size(); ++i) {
      auto box = x.Locate(s->model(), {f, i});
      ASSERT_TRUE(box) << f << ":" << i;
      EXPECT_EQ(x.CallAt(*box), (CallRef{f, i}));
    }
  EXPECT_FALSE(x.Locate(s->model(), {9, 0}));
}

TEST(TimelineIndex, FindingCallsAreMarked) {
  auto s = Load(testing::WriteSwapTrace("index-marks"));
  ASSERT_TRUE(s);
  ASSERT_FALSE(s->report().findings.empty()) << "the analysis should explain the swap";
  size_t marked = 0;
  for (const Lane& lane : s->timeline().lanes) {
    marked += lane.marked.size();
    for (size_t k = 0; k < lane.marked.size(); ++k) {
      const CallRef call{lane.file, lane.call[lane.marked[k]]};
      EXPECT_EQ(lane.mark_bits[k], s->marks().MarksOf(call));
    }
  }
  EXPECT_EQ(marked, s->marks().all().size());
  for (CallRef c : s->CallsOfFinding(0)) EXPECT_TRUE(s->marks().MarksOf(c) & mark::kAnyFinding);
}

// The viewer shows the timeline before the check is done, then adds the findings' marks to a
// copy of it: the result must be the index built with the findings from the start (in-flight
// marks of a hang and finding marks on the same calls included).
TEST(TimelineIndex, MarksAddedAfterTheTimelineAreTheMarksOfOneBuild) {
  for (const std::string& dir :
       {testing::WriteSwapTrace("index-later-swap"), testing::WriteHangTrace("index-later-hang")}) {
    auto whole = Load(dir);
    ASSERT_TRUE(whole);
    std::shared_ptr<const TraceSession> first;
    auto later = TraceSession::Load(
        dir, {}, [&](std::shared_ptr<const TraceSession> s) { first = std::move(s); });
    ASSERT_TRUE(later.ok()) << later.status().message();
    ASSERT_TRUE(first);
    EXPECT_FALSE(first->checked());
    EXPECT_TRUE(first->report().findings.empty());
    EXPECT_TRUE((*later)->checked());
    EXPECT_EQ(&first->model(), &(*later)->model());  // shared, not loaded twice
    ASSERT_FALSE(whole->report().findings.empty()) << dir;
    EXPECT_EQ((*later)->report().findings.size(), whole->report().findings.size());
    const auto& a = whole->timeline().lanes;
    const auto& b = (*later)->timeline().lanes;
    ASSERT_EQ(a.size(), b.size());
    size_t marked = 0;
    for (size_t l = 0; l < a.size(); ++l) {
      EXPECT_EQ(a[l].marked, b[l].marked) << dir << " lane " << l;
      EXPECT_EQ(a[l].mark_bits, b[l].mark_bits) << dir << " lane " << l;
      marked += b[l].marked.size();
    }
    EXPECT_GT(marked, 0u) << dir;
    size_t first_marked = 0;  // before the check: only calls that never returned
    for (const Lane& lane : first->timeline().lanes)
      for (uint8_t bits : lane.mark_bits) {
        EXPECT_EQ(bits, mark::kInFlight);
        ++first_marked;
      }
    EXPECT_LT(first_marked, marked);
  }
}

TEST(TimelineIndex, FiltersKeepOnlyWhatWasAskedFor) {
  auto s = Load(testing::WriteSwapTrace("index-filter"));
  ASSERT_TRUE(s);
  TimelineFilter by_rank;
  by_rank.rank = 1;
  const TimelineIndex r1 = TimelineIndex::Build(s->model(), s->marks(), by_rank);
  ASSERT_EQ(r1.devices.size(), 1u);
  EXPECT_EQ(r1.devices[0].world_rank, 1);
  EXPECT_EQ(r1.boxes, 16u);

  TimelineFilter by_api;
  by_api.api = Api::kBroadcast;
  EXPECT_EQ(TimelineIndex::Build(s->model(), s->marks(), by_api).boxes, 0u);
  by_api.api = Api::kAllReduce;
  EXPECT_EQ(TimelineIndex::Build(s->model(), s->marks(), by_api).boxes, 32u);

  TimelineFilter by_comm;
  by_comm.comm = 0;
  EXPECT_EQ(TimelineIndex::Build(s->model(), s->marks(), by_comm).boxes, 32u);

  // The first step only: the generator leaves a millisecond between steps.
  TimelineFilter window;
  window.window = std::make_pair(int64_t{0}, int64_t{500'000});
  const TimelineIndex w = TimelineIndex::Build(s->model(), s->marks(), window);
  EXPECT_EQ(w.boxes, 8u);
  EXPECT_LE(w.end_ns, 500'000 + 100'000);
  // A filtered index still finds the calls it kept, and only those.
  const CallRef first{0, 0};
  EXPECT_TRUE(w.Locate(s->model(), first));
  const uint32_t other_file = r1.devices[0].file == 0 ? 1 : 0;
  EXPECT_FALSE(r1.Locate(s->model(), {other_file, 0}));
}

TEST(TimelineIndex, StreamsGetLanesAndGroupsGetScopes) {
  SyntheticScript script;
  script.processes.resize(2);
  ScriptComm comm;
  comm.id = 0x77;
  comm.name = "pp";
  comm.members = {0, 1};
  script.comms.push_back(comm);
  for (int p = 0; p < 2; ++p) {
    for (int k = 0; k < 3; ++k) {
      ScriptCall c;
      c.api = Api::kAllReduce;
      c.count = 1024;
      c.tensor = k;
      c.stream = k == 1 ? 0x2000 : 0x1000;  // the middle call on a second stream
      script.processes[p].calls.push_back(c);
    }
    ScriptCall send;
    send.api = p == 0 ? Api::kSend : Api::kRecv;
    send.root_peer = 1 - p;
    send.group = 7;
    send.stream = 0x1000;
    script.processes[p].calls.push_back(send);
    ScriptCall send2 = send;
    send2.gap_ns = 5'000;
    script.processes[p].calls.push_back(send2);
  }
  auto s = Load(testing::WriteScript("index-streams", script));
  ASSERT_TRUE(s);
  const TimelineIndex& x = s->timeline();
  ASSERT_EQ(x.devices.size(), 2u);
  for (const DeviceRow& d : x.devices) {
    ASSERT_EQ(d.lanes.size(), 2u) << "one lane per stream";
    const Lane& main = x.lanes[d.lanes[0]];
    const Lane& side = x.lanes[d.lanes[1]];
    EXPECT_EQ(main.stream, 0x1000u);
    EXPECT_EQ(side.stream, 0x2000u);
    EXPECT_EQ(side.boxes.size(), 1u);
    ASSERT_EQ(main.groups.size(), 1u) << "the two p2p calls share one group scope";
    EXPECT_LE(main.groups.begin[0], main.boxes.begin[main.boxes.size() - 2]);
    EXPECT_GE(main.groups.end[0], main.boxes.end.back());
  }
  // Linked p2p: the send is paired with the peer's receive.
  const Lane& lane0 = x.lanes[x.devices[0].lanes[0]];
  const CallRef send{lane0.file, lane0.call[lane0.boxes.size() - 2]};
  const auto linked = s->Linked(send);
  ASSERT_EQ(linked.size(), 2u);
  EXPECT_EQ(static_cast<Api>(s->model().call(linked[1]).api), Api::kRecv);

  // Collapsing a device paints its lanes in one row; hit testing finds the calls there.
  CollapseState collapsed;
  collapsed.devices.insert({x.devices[0].file, x.devices[0].device});
  const RowLayout layout = LayOutRows(x, collapsed);
  ASSERT_EQ(layout.rows.size(), 1u + 1u + 2u);  // host, collapsed rank 0, rank 1's two lanes
  EXPECT_TRUE(layout.rows[1].collapsed);
  EXPECT_EQ(layout.rows[1].lanes.size(), 2u);
  EXPECT_EQ(layout.RowAt(layout.rows[2].y + 1), 2);
  EXPECT_EQ(layout.RowAt(-5), -1);
  EXPECT_EQ(layout.RowOfLane(x.devices[0].lanes[1]), 1);
  TimeAxis axis;
  axis.Resize(1000);
  axis.Fit(x.begin_ns, x.end_ns);
  const Lane& side0 = x.lanes[x.devices[0].lanes[1]];
  const double mid = axis.ToPixel((side0.boxes.begin[0] + side0.boxes.end[0]) / 2);
  auto hit = HitTest(x, layout.rows[1], axis, mid);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->lane, x.devices[0].lanes[1]);
  EXPECT_FALSE(HitTest(x, layout.rows[1], axis, 999.0));
}

TEST(TimelineIndex, AHangShowsWhereTheTraceEnds) {
  auto s = Load(testing::WriteHangTrace("index-hang"));
  ASSERT_TRUE(s);
  const TimelineIndex& x = s->timeline();
  ASSERT_EQ(x.devices.size(), 2u);
  EXPECT_FALSE(x.devices[1].ended_cleanly);
  EXPECT_LT(x.lanes[x.devices[1].lanes[0]].boxes.size(),
            x.lanes[x.devices[0].lanes[0]].boxes.size());
  bool hang_marked = false;
  for (const Lane& lane : x.lanes)
    for (uint8_t b : lane.mark_bits) hang_marked |= (b & mark::kHang) != 0;
  EXPECT_TRUE(hang_marked) << "the analysis's missing_call names the calls where ranks stopped";
}

TEST(TimelineIndex, GpuTimesGetTheirLaneAndCallsInFlightAreMarked) {
  auto s = Load(testing::WriteRichTrace("index-rich"));
  ASSERT_TRUE(s);
  const TimelineIndex& x = s->timeline();
  ASSERT_EQ(x.devices.size(), 2u);
  for (const DeviceRow& d : x.devices) {
    ASSERT_EQ(d.lanes.size(), 2u) << "host lane and GPU lane of the stream";
    const Lane& host = x.lanes[d.lanes[0]];
    const Lane& gpu = x.lanes[d.lanes[1]];
    EXPECT_FALSE(host.gpu);
    EXPECT_TRUE(gpu.gpu);
    EXPECT_EQ(gpu.stream, host.stream);
    ASSERT_EQ(gpu.boxes.size(), 4u);
    EXPECT_EQ(gpu.boxes.begin[0] - host.boxes.begin[0], 20'000);  // queued 20 us, ran 40 us
    EXPECT_EQ(gpu.boxes.end[0] - gpu.boxes.begin[0], 40'000);
  }
  const DeviceRow& r1 = x.devices[1];
  EXPECT_FALSE(r1.ended_cleanly);
  const Lane& lane = x.lanes[r1.lanes[0]];
  ASSERT_EQ(lane.boxes.size(), 5u);
  ASSERT_EQ(lane.marked.size(), 1u);
  EXPECT_EQ(lane.marked[0], 4u);
  EXPECT_TRUE(lane.mark_bits[0] & mark::kInFlight);
  // It lasts until the process's last sign of life.
  EXPECT_EQ(lane.boxes.end[4], std::max(r1.last_alive_ns, lane.boxes.begin[4]));
}

}  // namespace
}  // namespace ncclrr::viewer
