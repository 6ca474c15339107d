// Processes, threads, nonblocking communicators and fork, as the trace shows them.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "run_util.h"

namespace ncclrr::testing {
namespace {

TEST(InterposerLifecycle, RanksInSeparateProcessesShareCommunicatorIds) {
  const std::string dir = FreshDir("procs");
  const std::string idfile = dir + "/id.bin";
  const int n = 3;
  std::vector<std::thread> ranks;
  std::vector<RunResult> results(n);
  for (int r = 0; r < n; ++r)
    ranks.emplace_back([&, r] {
      results[r] = RunApp("interposer_app_direct",
                          {"rank", std::to_string(r), std::to_string(n), idfile, "10"}, dir);
    });
  for (auto& t : ranks) t.join();
  for (int r = 0; r < n; ++r) ASSERT_EQ(results[r].exit_code, 0) << results[r].err;
  std::filesystem::remove(idfile);
  const auto files = ReadTraces(dir);
  ASSERT_EQ(files.size(), 3u);
  std::set<uint64_t> ids;
  std::set<int> ranks_seen;
  for (const TraceFile& t : files) {
    ASSERT_EQ(t.comms.size(), 1u);
    ids.insert(t.comms[0].comm_id);
    ranks_seen.insert(t.comms[0].rank);
    EXPECT_EQ(t.comms[0].nranks, 3);
    EXPECT_EQ(t.comms[0].nccl_hash_known, 1);
    // 10 x (AllReduce, AllGather): collective seqs 0..19; p2p 0..9 per direction.
    std::vector<uint64_t> coll;
    for (const CallRecord& c : t.calls) {
      if (IsCollective(static_cast<Api>(c.api))) coll.push_back(c.seq);
      if (IsP2p(static_cast<Api>(c.api))) {
        EXPECT_LT(c.seq, 10u);
      }
    }
    ASSERT_EQ(coll.size(), 20u);
    for (size_t i = 0; i < coll.size(); ++i) {
      EXPECT_EQ(coll[i], i);
    }
    EXPECT_EQ(CallsOf(t, Api::kSend).back().seq, 9u);
  }
  EXPECT_EQ(ids.size(), 1u) << "one communicator, one id in every process";
  EXPECT_EQ(ranks_seen, (std::set<int>{0, 1, 2}));
  // Rank 0's GetUniqueId record names the communicator its id creates.
  for (const TraceFile& t : files) {
    for (const CallRecord& c : CallsOf(t, Api::kGetUniqueId)) {
      EXPECT_EQ(c.comm_id, *ids.begin());
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(InterposerLifecycle, SixteenThreadsOnSixteenCommunicators) {
  const std::string dir = FreshDir("threads");
  const RunResult r = RunApp("interposer_app_direct", {"threads", "16", "200"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const TraceFile t = ReadOnlyTrace(dir);
  EXPECT_EQ(t.DroppedRecords(), 0u);
  std::map<uint64_t, std::vector<CallRecord>> by_comm;
  for (const CallRecord& c : CallsOf(t, Api::kAllReduce)) by_comm[c.comm_id].push_back(c);
  ASSERT_EQ(by_comm.size(), 16u);
  std::set<uint32_t> tids;
  for (const auto& [id, calls] : by_comm) {
    ASSERT_EQ(calls.size(), 200u);
    for (size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(calls[i].seq, i);
      EXPECT_EQ(calls[i].tid, calls[0].tid);
    }
    tids.insert(calls[0].tid);
  }
  EXPECT_EQ(tids.size(), 16u);
  std::filesystem::remove_all(dir);
}

TEST(InterposerLifecycle, NonblockingCommunicators) {
  const std::string dir = FreshDir("nonblocking");
  const RunResult r = RunApp("interposer_app_direct", {"nonblocking"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const TraceFile t = ReadOnlyTrace(dir);
  ASSERT_EQ(t.comms.size(), 2u);
  EXPECT_EQ(t.comms[0].comm_id, t.comms[1].comm_id);
  for (const CommRecord& c : t.comms) {
    EXPECT_EQ(c.blocking, 0);
    EXPECT_EQ(t.String(c.name_id), "nonblocking-pair");
  }
  EXPECT_EQ(std::set<int>({t.comms[0].rank, t.comms[1].rank}), (std::set<int>{0, 1}));
  const auto reduces = CallsOf(t, Api::kAllReduce);
  ASSERT_EQ(reduces.size(), 8u);
  std::map<int, uint64_t> next_seq;
  for (const CallRecord& c : reduces) {
    EXPECT_TRUE(c.flags & call_flags::kNonblocking);
    EXPECT_GE(c.rank, 0);
    EXPECT_EQ(c.seq, next_seq[c.rank]++);
  }
  // The asynchronous error went from "in progress" to success once per rank as its init
  // completed; the same flip after each call (polled as PyTorch does) is routine, not recorded.
  const auto changes = CallsOf(t, Api::kAsyncErrorChange);
  ASSERT_EQ(changes.size(), 2u);
  for (const CallRecord& c : changes) {
    EXPECT_EQ(c.result, 0);
    EXPECT_EQ(c.aux, 7);  // from ncclInProgress
  }
  std::filesystem::remove_all(dir);
}

TEST(InterposerLifecycle, CallTimesAreOnTheMonotonicClock) {
  // Calls 60 ms apart: the first on clock_gettime, later ones on the TSC once it is anchored.
  const std::string dir = FreshDir("clock");
  const RunResult r = RunApp("interposer_app_direct", {"clock", "8"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto calls = CallsOf(ReadOnlyTrace(dir), Api::kAllReduce);
  ASSERT_EQ(calls.size(), 8u);
  std::istringstream out(r.out);
  std::string word;
  int i = 0;
  long long before = 0, after = 0;
  while (out >> word >> i >> before >> after) {
    ASSERT_LT(i, 8);
    constexpr long long kSlackNs = 50'000;  // TSC anchoring error bound, generous
    EXPECT_GE(calls[i].enter_ns, before - kSlackNs) << "call " << i;
    EXPECT_LE(calls[i].exit_ns, after + kSlackNs) << "call " << i;
    EXPECT_LE(calls[i].enter_ns, calls[i].exit_ns);
  }
  EXPECT_EQ(i, 7);
  std::filesystem::remove_all(dir);
}

TEST(InterposerLifecycle, ForkedChildRecordsIntoItsOwnFile) {
  const std::string dir = FreshDir("fork");
  const RunResult r = RunApp("interposer_app_direct", {"fork"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto files = ReadTraces(dir);
  ASSERT_EQ(files.size(), 2u);
  const TraceFile& parent = files[0].header.pid < files[1].header.pid ? files[0] : files[1];
  const TraceFile& child = &parent == &files[0] ? files[1] : files[0];
  EXPECT_EQ(child.header.ppid, parent.header.pid);
  ASSERT_TRUE(parent.footer && child.footer);
  EXPECT_TRUE(parent.footer->clean && child.footer->clean);
  EXPECT_EQ(CallsOf(parent, Api::kAllReduce).size(), 4u);  // 2 steps x 2 ranks
  EXPECT_EQ(CallsOf(child, Api::kAllReduce).size(), 6u);   // 3 steps x 2 ranks
  EXPECT_EQ(CallsOf(child, Api::kCommInitAll).size(), 1u);
  EXPECT_EQ(CallsOf(parent, Api::kCommInitAll).size(), 1u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ncclrr::testing
