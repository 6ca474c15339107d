// CUDA graphs without a GPU: fake_cuda.cc stands in for the driver (NCCLRR_GRAPHS=2).
#include <gtest/gtest.h>

#include <filesystem>

#include "run_util.h"

namespace ncclrr::testing {
namespace {

TEST(InterposerGraphs, CapturedCallsAreTemplatesAndLaunchesAdvanceSequenceNumbers) {
  const std::string dir = FreshDir("graphs");
  const RunResult r = RunApp("interposer_app_graphs", {}, dir, {{"NCCLRR_GRAPHS", "2"}});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const TraceFile t = ReadOnlyTrace(dir);
  std::map<int, std::vector<CallRecord>> by_rank;
  for (const CallRecord& c : CallsOf(t, Api::kAllReduce)) by_rank[c.rank].push_back(c);
  ASSERT_EQ(by_rank.size(), 2u);
  for (const auto& [rank, calls] : by_rank) {
    ASSERT_EQ(calls.size(), 4u) << "rank " << rank;
    EXPECT_EQ(calls[0].capture, 0);
    EXPECT_EQ(calls[0].seq, 0u);
    for (int i : {1, 2}) {
      EXPECT_EQ(calls[i].capture, 1);
      EXPECT_EQ(calls[i].graph_id, 0x6000u);
      EXPECT_EQ(calls[i].seq, uint64_t(i - 1)) << "a template's place in its graph";
    }
    EXPECT_EQ(calls[3].capture, 0);
    EXPECT_EQ(calls[3].seq, 7u) << "1 live call + 3 launches x 2 templates before it";
  }
  int instantiate = 0, launch = 0, destroy = 0;
  for (const GraphEventRecord& g : t.graph_events) {
    EXPECT_EQ(g.graph_id, 0x6000u) << "the graph without NCCL calls is not recorded";
    const auto kind = static_cast<GraphEventKind>(g.kind);
    instantiate += kind == GraphEventKind::kInstantiate;
    launch += kind == GraphEventKind::kLaunch;
    destroy += kind == GraphEventKind::kDestroy;
    if (kind != GraphEventKind::kDestroy || g.exec_id != 0) {
      EXPECT_EQ(g.exec_id, 0x6001u);
    }
  }
  EXPECT_EQ(instantiate, 1);
  EXPECT_EQ(launch, 3);
  EXPECT_EQ(destroy, 2);  // the executable, then the graph
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ncclrr::testing
