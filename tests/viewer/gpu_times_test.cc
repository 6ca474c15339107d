// GPU times as `ncclrr record --gpu-timing` writes them, through the viewer's models: a GPU lane
// under each stream with one box per GpuTime record (a call captured into a CUDA graph: one per
// launch), the boxes painted, the stragglers note listed, and the details of a graph template.
#include <gtest/gtest.h>
#include <QAbstractItemModelTester>

#include "models/call_details.h"
#include "models/findings_model.h"
#include "models/model_dump.h"
#include "models/timeline_style.h"
#include "ncclrr/analysis/check.h"
#include "ncclrr/trace/trace_reader.h"
#include "viewer_test_util.h"

namespace ncclrr::viewer {
namespace {

constexpr uint64_t kGraph = 0x6000, kGraphStream = 0x7000;
constexpr int64_t kLate = 30'000;  // rank 1's kernels start this much after rank 0's

// Two ranks: four allreduces, one captured into a graph launched three times. GPU times: CUPTI
// for the live calls (rank 1 late), event pairs for the graph's launches.
std::shared_ptr<const TraceSession> GpuTimedSession() {
  SyntheticScript script;
  script.dir = testing::TempDir("gpu-times");
  script.comms = {{0xabc, "gpu.world", {0, 1}}};
  for (int p = 0; p < 2; ++p) {
    ScriptProcess proc;
    for (int k = 0; k < 4; ++k) proc.calls.push_back({});
    ScriptCall captured;
    captured.capture = 1;
    captured.graph = kGraph;
    captured.stream = kGraphStream;
    proc.calls.push_back(captured);
    for (int k = 0; k < 3; ++k) {
      ScriptCall launch;
      launch.launch_graph = kGraph;
      launch.stream = kGraphStream;
      proc.calls.push_back(launch);
    }
    script.processes.push_back(proc);
  }
  const std::string dir = testing::WriteScript("gpu-times", script);
  const analysis::TraceModel plain = analysis::TraceModel::Build(*LoadTraceDir(dir));
  TraceDir d = *LoadTraceDir(dir);
  for (const analysis::RankView& r : plain.comms().at(0).ranks)
    for (const analysis::CollectiveSlot& s : r.collectives) {
      const int64_t offset = plain.files()[s.call.file].clock_offset_ns;
      GpuTimeRecord g{};
      g.call_uid = plain.call(s.call).uid;
      g.start_ns = plain.SlotTime(s) - offset + 20'000 + (s.launch == 0 && r.rank == 1 ? kLate : 0);
      g.end_ns = g.start_ns + 40'000;
      g.source =
          static_cast<uint8_t>(s.launch == 0 ? GpuTimeSource::kCupti : GpuTimeSource::kEventPair);
      d.files[s.call.file].gpu_times.push_back(g);
    }
  analysis::TraceModel model = analysis::TraceModel::Build(std::move(d));
  analysis::Report report = analysis::Check(model);
  return TraceSession::Make(dir, std::move(model), std::move(report));
}

// The GPU lane of `stream` on device row `d`; with `other`, the GPU lane of any other stream.
const Lane* GpuLane(const TimelineIndex& x, const DeviceRow& d, uint64_t stream,
                    bool other = false) {
  for (uint32_t l : d.lanes)
    if (x.lanes[l].gpu && (x.lanes[l].stream == stream) != other) return &x.lanes[l];
  return nullptr;
}

TEST(GpuTimes, EachStreamHasAGpuLaneWithABoxPerLaunchAndTheBoxesArePainted) {
  testing::EnsureApp();
  auto s = GpuTimedSession();
  const TimelineIndex& x = s->timeline();
  ASSERT_EQ(x.devices.size(), 2u);
  for (const DeviceRow& d : x.devices) {
    const Lane* live = GpuLane(x, d, kGraphStream, /*other=*/true);  // the default stream
    const Lane* graph = GpuLane(x, d, kGraphStream);
    ASSERT_NE(live, nullptr);
    ASSERT_NE(graph, nullptr) << "the graph's stream gets a GPU lane of its own";
    EXPECT_EQ(live->boxes.size(), 4u);
    EXPECT_EQ(graph->boxes.size(), 3u) << "one box per launch of the captured call";
    for (size_t k = 0; k < graph->boxes.size(); ++k)
      EXPECT_EQ(graph->boxes.end[k] - graph->boxes.begin[k], 40'000);
  }
  auto r = testing::Render(*s, 1600, 400);
  const DeviceRow& d0 = x.devices[0];
  for (uint32_t l : d0.lanes) {
    if (!x.lanes[l].gpu) continue;
    const DisplayRow& row = r->layout.rows[r->layout.RowOfLane(l)];
    const double top = r->scene.geometry.ruler_height + row.y;
    const double x0 =
        r->scene.geometry.label_width + r->scene.axis.ToPixel(x.lanes[l].boxes.begin[0]);
    EXPECT_GT(testing::CountPixels(r->image, StyleColor(BoxStyle::kAllReduce),
                                   QRectF(x0 - 1, top, 4, row.height)),
              0)
        << "GPU lane of stream " << x.lanes[l].stream;
  }
}

TEST(GpuTimes, StragglersNoteIsListedAndTemplateDetailsCountLaunches) {
  testing::EnsureApp();
  auto s = GpuTimedSession();
  ASSERT_EQ(s->report().notes.size(), 1u);
  EXPECT_EQ(s->report().notes[0].kind, analysis::NoteKind::kStragglers);
  EXPECT_EQ(s->report().notes[0].count, 7u) << "4 live calls and 3 launches on both ranks";
  FindingsModel fm;
  QAbstractItemModelTester tester(&fm, QAbstractItemModelTester::FailureReportingMode::Fatal);
  fm.SetSession(s);
  const std::string findings = DumpModel(fm).toStdString();
  EXPECT_NE(findings.find("stragglers: comm 0x0000000000000abc | "), std::string::npos) << findings;

  const auto& slots = s->model().comms()[0].ranks[0].collectives;
  ASSERT_EQ(slots.size(), 7u);
  CallDetailsModel details;
  details.Show(s, slots[4].call);  // the captured call
  const std::string dump = DumpModel(details).toStdString();
  for (const char* want : {"GPU time (first launch) | ", "  launches timed | 3",
                           "  source | event pair", "  duration | 40.0 us"})
    EXPECT_NE(dump.find(want), std::string::npos) << want << "\n" << dump;
  details.Show(s, slots[0].call);
  const std::string live = DumpModel(details).toStdString();
  EXPECT_NE(live.find("GPU time | "), std::string::npos) << live;
  EXPECT_NE(live.find("  source | CUPTI"), std::string::npos) << live;
}

}  // namespace
}  // namespace ncclrr::viewer
