// The three loading styles record the same trace, and that trace says what the program did.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "run_util.h"

namespace ncclrr::testing {
namespace {

const char* kApps[] = {"interposer_app_direct", "interposer_app_local", "interposer_app_dlsym"};

TEST(InterposerLoading, DirectDlsymAndRtldLocalRecordIdenticalTraces) {
  const RunResult plain = RunApp("interposer_app_direct", {"basic"}, "");
  ASSERT_EQ(plain.exit_code, 0) << "signal " << plain.signal << ": " << plain.err;
  std::string first;
  for (const char* app : kApps) {
    const std::string dir = FreshDir(app);
    const RunResult r = RunApp(app, {"basic"}, dir);
    ASSERT_EQ(r.exit_code, 0) << app << ": signal " << r.signal << ": " << r.err;
    EXPECT_EQ(r.out, plain.out) << app << ": results changed under recording";
    const TraceFile t = ReadOnlyTrace(dir);
    ASSERT_TRUE(t.footer && t.footer->clean) << app;
    EXPECT_EQ(t.header.route, Route::kPreload);
    EXPECT_EQ(t.nccl_version, 22809);
    EXPECT_EQ(t.DroppedRecords(), 0u);
    const std::string text = Normalized(t);
    if (first.empty()) {
      first = text;
    } else {
      EXPECT_EQ(text, first) << app << " recorded a different trace than " << kApps[0];
    }
    std::filesystem::remove_all(dir);
  }
  EXPECT_GT(first.size(), 1000u);
}

class BasicTrace : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(FreshDir("basic"));
    const RunResult r = RunApp("interposer_app_direct", {"basic"}, *dir_);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    trace_ = new TraceFile(ReadOnlyTrace(*dir_));
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete trace_;
    delete dir_;
  }
  static const TraceFile& T() { return *trace_; }
  static std::string* dir_;
  static TraceFile* trace_;
};
std::string* BasicTrace::dir_ = nullptr;
TraceFile* BasicTrace::trace_ = nullptr;

TEST_F(BasicTrace, NestedCallsOfNcclAreNotRecorded) {
  // InitAll calls GetUniqueId and Bcast calls Broadcast inside NCCL: recorded once each.
  EXPECT_EQ(CallsOf(T(), Api::kCommInitAll).size(), 1u);
  EXPECT_EQ(CallsOf(T(), Api::kGetUniqueId).size(), 0u);
  EXPECT_EQ(CallsOf(T(), Api::kBcast).size(), 4u);
  EXPECT_EQ(CallsOf(T(), Api::kBroadcast).size(), 4u);  // the workload's own, one per rank
}

TEST_F(BasicTrace, CollectivesAreNumberedPerCommunicatorAndRank) {
  const auto init = CallsOf(T(), Api::kCommInitAll)[0];
  std::map<int, std::vector<uint64_t>> seqs;  // rank -> seqs on the root comm
  for (const CallRecord& c : T().calls)
    if (c.comm_id == init.comm_id && IsCollective(static_cast<Api>(c.api)) && c.result == 0)
      seqs[c.rank].push_back(c.seq);
  ASSERT_EQ(seqs.size(), 4u);
  for (const auto& [rank, s] : seqs) {
    // 1 allreduce, 8 collectives, 1 PreMulSum allreduce, 1 simulated (rolled back), 1 allreduce
    ASSERT_EQ(s.size(), 12u) << "rank " << rank;
    for (size_t i = 0; i < 10; ++i) {
      EXPECT_EQ(s[i], i);
    }
    EXPECT_EQ(s[10], 10u);  // the simulated group's call ...
    EXPECT_EQ(s[11], 10u);  // ... gave its number back to the next real one
  }
}

TEST_F(BasicTrace, PointToPointIsNumberedPerPeerAndDirection) {
  for (const CallRecord& c : T().calls) {
    if (!IsP2p(static_cast<Api>(c.api))) continue;
    EXPECT_LE(c.seq, 1u);
    EXPECT_EQ(c.root_peer,
              static_cast<Api>(c.api) == Api::kSend ? (c.rank + 1) % 4 : (c.rank + 3) % 4);
    EXPECT_GT(c.group_id, 0u);
    EXPECT_EQ(c.group_depth, 1u);
  }
  EXPECT_EQ(CallsOf(T(), Api::kSend).size(), 8u);
}

TEST_F(BasicTrace, GroupsShareAnIdAndArgumentsAreKept) {
  std::set<uint64_t> group_of_first_step;
  for (const CallRecord& c : CallsOf(T(), Api::kAllReduce))
    if (c.seq == 0 && c.count == 1024) group_of_first_step.insert(c.group_id);
  EXPECT_EQ(group_of_first_step.size(), 1u);
  EXPECT_NE(*group_of_first_step.begin(), 0u);
  const auto gathers = CallsOf(T(), Api::kAllGather);
  ASSERT_EQ(gathers.size(), 4u);
  for (const auto& c : gathers) {
    EXPECT_TRUE(c.flags & call_flags::kInPlace);
  }
  for (const auto& c : CallsOf(T(), Api::kReduceScatter)) {
    EXPECT_TRUE(c.flags & call_flags::kInPlace);
  }
  for (const auto& c : CallsOf(T(), Api::kGather)) {
    EXPECT_EQ(c.root_peer, 3);
  }
  int premul = 0;
  for (const auto& c : CallsOf(T(), Api::kAllReduce)) {
    if (c.flags & call_flags::kPreMulSum) {
      ++premul;
      EXPECT_EQ(c.scalar, 0.5);
      EXPECT_GE(c.op, 5);
    }
  }
  EXPECT_EQ(premul, 4);
  const auto creates = CallsOf(T(), Api::kRedOpCreatePreMulSum);
  ASSERT_EQ(creates.size(), 4u);
  EXPECT_EQ(creates[0].scalar, 0.5);
}

TEST_F(BasicTrace, QueriesAreCountedNotRecorded) {
  EXPECT_TRUE(CallsOf(T(), Api::kCommGetAsyncError).empty());
  std::map<std::pair<uint64_t, int32_t>, uint64_t> async_by_rank;  // cumulative per rank
  std::map<uint64_t, uint64_t> async_counts;
  uint64_t count_calls = 0, version_calls = 0;
  for (const QueryCountRecord& q : T().queries) {
    if (static_cast<Api>(q.api) == Api::kCommGetAsyncError) {
      auto& n = async_by_rank[{q.comm_id, q.rank}];
      n = std::max(n, q.count);
    }
    if (static_cast<Api>(q.api) == Api::kCommCount) count_calls += q.count;
    if (static_cast<Api>(q.api) == Api::kGetVersion) version_calls = q.count;
  }
  for (const auto& [key, n] : async_by_rank) async_counts[key.first] += n;
  const auto init = CallsOf(T(), Api::kCommInitAll)[0];
  EXPECT_EQ(async_by_rank.size(), 4u);          // one counter per rank of the InitAll communicator
  EXPECT_EQ(async_counts[init.comm_id], 200u);  // 50 polls x 4 ranks of one communicator
  EXPECT_EQ(count_calls, 1u);
  EXPECT_EQ(version_calls, 1u);
}

TEST_F(BasicTrace, SplitAndShrinkLineage) {
  const uint64_t root = CallsOf(T(), Api::kCommInitAll)[0].comm_id;
  std::map<uint64_t, std::vector<CommRecord>> by_id;
  for (const CommRecord& c : T().comms) by_id[c.comm_id].push_back(c);
  std::vector<uint64_t> halves, trio, shrinks;
  for (const auto& [id, recs] : by_id) {
    const CommRecord& c = recs[0];
    if (c.origin == uint8_t(CommOrigin::kSplit) && c.nranks == 2) halves.push_back(id);
    if (c.origin == uint8_t(CommOrigin::kSplit) && c.nranks == 3) trio.push_back(id);
    if (c.origin == uint8_t(CommOrigin::kShrink)) shrinks.push_back(id);
    if (c.origin != uint8_t(CommOrigin::kInitAll)) {
      EXPECT_EQ(c.parent_id, root);
    }
  }
  ASSERT_EQ(by_id[root].size(), 4u);
  EXPECT_EQ(halves.size(), 2u);  // colors 0 and 1
  ASSERT_EQ(trio.size(), 1u);    // NOCOLOR made none for rank 3
  EXPECT_EQ(by_id[trio[0]].size(), 3u);
  for (uint64_t id : halves) {
    EXPECT_EQ(by_id[id][0].nccl_hash_known, 1);
  }
  // NCCL gives both shrinks one hash; ncclrr keeps them apart with lineage 1 and 2.
  ASSERT_EQ(shrinks.size(), 2u);
  std::set<uint32_t> lineages;
  for (uint64_t id : shrinks) {
    ASSERT_EQ(by_id[id].size(), 3u);
    lineages.insert(by_id[id][0].lineage);
    EXPECT_EQ(by_id[id][0].nccl_hash_known, 0);
  }
  EXPECT_EQ(lineages, (std::set<uint32_t>{1, 2}));
}

TEST(InterposerLoading, StacksGiveEachCallSiteAnId) {
  const std::string dir = FreshDir("stacks");
  const RunResult r =
      RunApp("interposer_app_direct", {"threads", "2", "5"}, dir, {{"NCCLRR_STACKS", "1"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const TraceFile t = ReadOnlyTrace(dir);
  std::set<uint32_t> sites;
  for (const CallRecord& c : CallsOf(t, Api::kAllReduce)) sites.insert(c.callsite);
  ASSERT_EQ(sites.size(), 1u) << "one call site in the source, one id";
  const std::string text = t.String(*sites.begin());
  EXPECT_NE(text.find("libinterposer_workload.so+0x"), std::string::npos) << text;
  EXPECT_NE(CallsOf(t, Api::kCommInitRank)[0].callsite, *sites.begin());
  std::filesystem::remove_all(dir);
}

TEST(InterposerLoading, QueriesAloneCreateNoTraceFile) {
  const std::string dir = FreshDir("version");
  const RunResult r = RunApp("interposer_app_direct", {"version"}, dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::is_empty(dir));
  const RunResult none = RunApp("interposer_app_direct", {"no-such-scenario"}, dir);
  EXPECT_EQ(none.exit_code, 64);
  EXPECT_TRUE(std::filesystem::is_empty(dir));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ncclrr::testing
