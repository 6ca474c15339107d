// Recorded features the replay rebuilds: CUDA-graph launches (replayed as eager calls at the
// positions the launches took) and PreMulSum reductions with per-rank scalars.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ncclrr/trace/trace_writer.h"
#include "replay_scripts.h"

namespace ncclrr::testing {
namespace {

using replay::Outcome;
using ::testing::Contains;
using ::testing::HasSubstr;

// Each rank captures two allreduces into a graph and launches it `launches(rank)` times
// between two eager calls.
SyntheticScript GraphScript(int launches_of_rank1) {
  SyntheticScript s;
  ScriptComm comm;
  comm.id = 0x6161;
  comm.name = "graphs";
  comm.members = {0, 1};
  s.comms.push_back(comm);
  s.processes.resize(2);
  for (int p = 0; p < 2; ++p) {
    const uint64_t graph = 0x6000 + static_cast<uint64_t>(p);
    ScriptCall eager;
    eager.count = 16;
    eager.tensor = 1;
    s.processes[p].calls.push_back(eager);
    for (int k = 0; k < 2; ++k) {
      ScriptCall t;
      t.count = k == 0 ? 1024 : 2048;
      t.tensor = 2 + k;
      t.capture = 1;
      t.graph = graph;
      s.processes[p].calls.push_back(t);
    }
    for (int l = 0; l < (p == 1 ? launches_of_rank1 : 3); ++l) {
      ScriptCall launch;
      launch.launch_graph = graph;
      s.processes[p].calls.push_back(launch);
    }
    s.processes[p].calls.push_back(eager);
  }
  return s;
}

TEST(Features, GraphLaunchesReplayAsEagerCalls) {
  auto model = WriteAndLoad(GraphScript(3), "graphs");
  ASSERT_NE(model, nullptr);
  const replay::ReplayReport r = MustReplay(*model, TestOptions("recorded,canonical"));
  EXPECT_EQ(r.results[0].outcome, Outcome::kRight) << replay::FormatText(r);
  EXPECT_EQ(r.results[0].calls, 2u * (1 + 6 + 1));
  EXPECT_EQ(r.results[1].outcome, Outcome::kRight);
  EXPECT_THAT(r.warnings, Contains(HasSubstr("CUDA-graph launches are replayed as eager calls")));
}

TEST(Features, AMissingGraphLaunchHangs) {
  auto model = WriteAndLoad(GraphScript(2), "graphs-missing");
  ASSERT_NE(model, nullptr);
  const replay::ReplayReport r = MustReplay(*model, TestOptions("recorded", 0.5));
  EXPECT_NE(r.results[0].outcome, Outcome::kRight) << replay::FormatText(r);
  EXPECT_EQ(r.ExitCode(), 1);
}

// Rank r premultiplies its input by its own scalar: 0.5 on rank 0, 2 on rank 1.
TEST(Features, PreMulSumUsesEachRanksScalar) {
  const std::string dir = FreshDir("premulsum");
  const double scalars[2] = {0.5, 2.0};
  for (int r = 0; r < 2; ++r) {
    WriterOptions w;
    w.dir = dir;
    w.file_name = "premul-rank" + std::to_string(r) + ".ncclrr";
    w.overflow = OverflowPolicy::kBlock;
    auto writer = TraceWriter::Create(w);
    ASSERT_TRUE(writer.ok());
    Record comm{};
    comm.kind = RecordKind::kComm;
    comm.comm = CommRecord{0x9e, 0, 0x1000, 1, 2, r,
                           r,    0, r,      0, 0, static_cast<uint8_t>(CommOrigin::kInitRank),
                           1,    1, 0};
    (*writer)->Append(comm);
    for (uint64_t seq = 0; seq < 3; ++seq) {
      CallRecord c{};
      c.uid = (*writer)->NextCallUid();
      c.comm_id = 0x9e;
      c.seq = c.type_seq = seq;
      c.sendbuff = 0x10000 + (seq << 20);
      c.recvbuff = c.sendbuff + 0x8000;
      c.count = 500;
      c.stream = 0x5000;
      c.enter_ns = 1'000'000 + static_cast<int64_t>(seq) * 10'000;
      c.exit_ns = c.enter_ns + 100;
      c.scalar = scalars[r];
      c.root_peer = -1;
      c.device = r;
      c.op = kNumBuiltinOps;  // a dynamic op handle
      c.rank = r;
      c.api = static_cast<uint16_t>(seq == 2 ? Api::kReduceScatter : Api::kAllReduce);
      c.count = seq == 2 ? 250 : 500;
      c.dtype = static_cast<uint8_t>(seq == 1 ? Dtype::kFloat64 : Dtype::kFloat32);
      c.flags = call_flags::kPreMulSum;
      (*writer)->AppendCall(c);
    }
    ASSERT_TRUE((*writer)->Close().ok());
  }
  auto model = analysis::TraceModel::Load(dir);
  ASSERT_TRUE(model.ok()) << model.status().message();
  const replay::ReplayReport r = MustReplay(*model, TestOptions("recorded"));
  EXPECT_EQ(r.results[0].outcome, Outcome::kRight) << replay::FormatText(r);
  EXPECT_EQ(r.results[0].checked_calls, 6u);
}

}  // namespace
}  // namespace ncclrr::testing

namespace ncclrr::testing {
namespace {

// A memory budget smaller than the trace's buffers makes actors reuse their ring arena (waiting
// for their oldest calls); below one unit's buffers the arena still holds the largest unit. The
// verdicts stay the same.
TEST(Features, SmallMemoryBudget) {
  auto model = WriteAndLoad(ExampleScript("swap-same-size"), "budget");
  ASSERT_NE(model, nullptr);
  auto options = TestOptions("recorded,canonical");
  const replay::ReplayReport full = MustReplay(*model, options);
  for (uint64_t budget : {12u << 10, 1u << 10}) {
    options.memory_budget_bytes = budget;
    EXPECT_EQ(replay::FormatText(full), replay::FormatText(MustReplay(*model, options))) << budget;
  }
}

// The host backend keeps 32 units in flight per actor (PacedUnits) and waits for the oldest
// beyond that. Four ranks issue 240 calls each on two communicators and two streams, every rank in
// the same order: paced or not, the calls of one stream wait for the other's as recorded, and the
// replay completes with every output right (or, unverified, without a hang).
TEST(Features, PacedReplayOfCallsDeeperThanThePace) {
  SyntheticScript s;
  for (int c = 0; c < 2; ++c) {
    ScriptComm comm;
    comm.id = 0x9ace0000 + static_cast<uint64_t>(c);
    comm.name = c == 0 ? "first" : "second";
    comm.members = {0, 1, 2, 3};
    s.comms.push_back(comm);
  }
  s.processes.resize(4);
  constexpr int kCalls = 240;
  for (int p = 0; p < 4; ++p)
    for (int k = 0; k < kCalls; ++k) {
      ScriptCall call;
      call.comm = (k / 40) % 2;  // runs of 40 calls on one communicator, then the other's
      call.stream = 0x5000 + static_cast<uint64_t>(call.comm);
      call.tensor = k % 7;
      call.count = 64 + 32 * static_cast<uint64_t>(k % 5);
      s.processes[p].calls.push_back(call);
    }
  auto model = WriteAndLoad(s, "pacing");
  ASSERT_NE(model, nullptr);
  for (bool verify : {true, false}) {
    auto options = TestOptions("recorded", 5.0);
    options.verify = verify;
    const replay::ReplayReport r = MustReplay(*model, options);
    ASSERT_EQ(r.results.size(), 1u);
    EXPECT_EQ(r.results[0].outcome, Outcome::kRight) << replay::FormatText(r);
    EXPECT_EQ(r.results[0].calls, 4u * kCalls);
    EXPECT_EQ(r.results[0].checked_calls, verify ? 4u * kCalls : 0u);
    EXPECT_EQ(r.results[0].wrong_calls, 0u);
  }
}

}  // namespace
}  // namespace ncclrr::testing
