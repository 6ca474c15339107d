// `ncclrr status`'s model on scripted traces of running jobs (files not closed, calls in flight):
// hung, straggler, running and finished verdicts, the ranks named and what they do instead, and
// following files that grow between refreshes (only what was appended is read; a frame being
// written is no warning).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "ncclrr/analysis/live_status.h"
#include "ncclrr/trace/trace_follower.h"
#include "ncclrr/trace/trace_reader.h"
#include "scenarios.h"

namespace ncclrr::analysis {
namespace {

using testing::AllReduce;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::ScriptBuilder;

std::string Dir(const std::string& name) {
  const auto d = std::filesystem::path(::testing::TempDir()) / ("live-" + name);
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d.string();
}

std::string Write(SyntheticScript s, const std::string& name) {
  s.dir = Dir(name);
  auto r = WriteSyntheticScript(s);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return s.dir;
}

// The real time of the latest call issued in `dir`, plus `later_s`: "now" for a refresh.
int64_t LatestIssuePlus(const std::string& dir, double later_s) {
  auto d = LoadTraceDir(dir);
  EXPECT_TRUE(d.ok());
  int64_t latest = 0;
  for (const TraceFile& f : d->files)
    for (const CallRecord& c : f.calls)
      latest = std::max(latest, c.enter_ns + f.header.start_real_ns - f.header.start_mono_ns);
  return latest + static_cast<int64_t>(later_s * 1e9);
}

LiveReport Refresh(const std::string& dir, double later_s) {
  LiveStatus live(dir);
  auto r = live.Refresh(LatestIssuePlus(dir, later_s));
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : LiveReport{};
}

// Three ranks of a training loop; rank 1 skips step 2's second allreduce and stops issuing.
SyntheticScript SkippedCollective(bool close) {
  ScriptBuilder b(3);
  const int c = b.Comm(0xd1, "dp", {0, 1, 2});
  for (int step = 0; step < 3; ++step)
    for (int t = 1; t <= 2; ++t)
      b.All(c, AllReduce(1024 * t, t), [&](int p, ScriptCall& call) {
        if (p == 1 && step == 2 && t == 2) call.api = Api::kUnknown;  // dropped below
      });
  auto& calls = b.s.processes[1].calls;
  calls.erase(std::remove_if(calls.begin(), calls.end(),
                             [](const ScriptCall& k) { return k.api == Api::kUnknown; }),
              calls.end());
  for (ScriptProcess& p : b.s.processes) p.close = close;
  return b.s;
}

TEST(LiveStatus, ARankThatNeverIssuedTheCollectiveIsNamedAfterTheHangThreshold) {
  const std::string dir = Write(SkippedCollective(false), "skip");
  const LiveReport r = Refresh(dir, 15);
  EXPECT_EQ(r.verdict, LiveVerdict::kHung);
  EXPECT_EQ(r.ExitCode(), 1);
  ASSERT_EQ(r.comms.size(), 1u);
  const LiveComm& c = r.comms[0];
  EXPECT_EQ(c.state, LiveState::kHung);
  EXPECT_EQ(c.name, "dp");
  EXPECT_EQ(c.wait_seq, 5u);
  EXPECT_EQ(c.wait_call, "AllReduce(2048 float32, sum)");
  EXPECT_EQ(c.waiting, (std::vector<int>{0, 2}));
  ASSERT_EQ(c.missing.size(), 1u);
  EXPECT_EQ(c.missing[0].rank, 1);
  EXPECT_EQ(c.missing[0].calls_behind, 1u);
  ASSERT_TRUE(c.missing[0].has_elsewhere);
  EXPECT_EQ(c.missing[0].last_anywhere.seq, 4u);
  EXPECT_FALSE(c.missing[0].last_anywhere.in_flight);
  EXPECT_GE(c.wait_s, 15.0);
  const std::string text = FormatLiveText(r);
  EXPECT_THAT(text, HasSubstr("<-- never issued seq 5"));
  EXPECT_THAT(text, HasSubstr("it runs outside NCCL"));
  EXPECT_THAT(text, HasSubstr("verdict: hung; comm 0x00000000000000d1 \"dp\" hung at seq 5, "
                              "waiting for rank(s) 1"));
  const std::string json = FormatLiveJson(r);
  EXPECT_THAT(json, HasSubstr("\"verdict\":\"hung\""));
  EXPECT_THAT(json, HasSubstr("\"missing\":[{\"rank\":1,"));
  EXPECT_THAT(json, HasSubstr("\"exit_code\":1"));
}

TEST(LiveStatus, AShortWaitIsAStragglerNotAHang) {
  const std::string dir = Write(SkippedCollective(false), "straggler");
  const LiveReport r = Refresh(dir, 1);
  EXPECT_EQ(r.verdict, LiveVerdict::kStraggler);
  EXPECT_EQ(r.ExitCode(), 0);
  EXPECT_THAT(r.comms[0].why, HasSubstr("rank(s) 1 behind"));
  EXPECT_THAT(FormatLiveText(r), HasSubstr("verdict: straggler"));
}

TEST(LiveStatus, RanksAtTheSameCollectiveAreRunningAndClosedFilesFinished) {
  ScriptBuilder b(2);
  const int c = b.Comm(0xd2, "", {0, 1});
  for (int i = 0; i < 4; ++i) b.All(c, AllReduce(256, 1));
  for (ScriptProcess& p : b.s.processes) p.close = false;
  EXPECT_EQ(Refresh(Write(b.s, "running"), 60).verdict, LiveVerdict::kRunning);
  for (ScriptProcess& p : b.s.processes) p.close = true;
  const LiveReport done = Refresh(Write(b.s, "finished"), 60);
  EXPECT_EQ(done.verdict, LiveVerdict::kFinished);
  EXPECT_EQ(done.comms[0].state, LiveState::kFinished);
  EXPECT_EQ(done.open_files, 0);
}

// Two communicators used in opposite orders: each rank blocked in its first collective (the
// golden scenario of `check`).
SyntheticScript Scenario(const std::string& name) {
  for (const testing::Scenario& s : testing::GoldenScenarios())
    if (s.name == name) return s.build();
  ADD_FAILURE() << "no scenario " << name;
  return {};
}

TEST(LiveStatus, OppositeCommunicatorsShowEachRankBlockedOnTheOther) {
  ScriptBuilder b(0);
  b.s = Scenario("cross_comm_in_flight");
  const LiveReport r = Refresh(Write(b.s, "cross"), 20);
  EXPECT_EQ(r.verdict, LiveVerdict::kHung);
  ASSERT_EQ(r.comms.size(), 2u);
  for (const LiveComm& comm : r.comms) {
    EXPECT_EQ(comm.state, LiveState::kHung);
    ASSERT_EQ(comm.missing.size(), 1u);
    EXPECT_TRUE(comm.missing[0].last_anywhere.in_flight);
    EXPECT_NE(comm.missing[0].last_anywhere.comm_id, comm.id);
  }
  EXPECT_THAT(FormatLiveText(r), HasSubstr("used in opposite orders"));
}

TEST(LiveStatus, EveryRankBlockedInsideOneCollectiveIsAHang) {
  ScriptBuilder b(2);
  const int c = b.Comm(0xd3, "", {0, 1});
  b.All(c, AllReduce(64, 1));
  ScriptCall stuck = AllReduce(64, 1);
  stuck.in_flight = true;
  b.All(c, stuck);
  for (ScriptProcess& p : b.s.processes) p.close = false;
  const LiveReport r = Refresh(Write(b.s, "inside"), 30);
  EXPECT_EQ(r.verdict, LiveVerdict::kHung);
  EXPECT_EQ(r.comms[0].waiting, (std::vector<int>{0, 1}));
  EXPECT_THAT(r.comms[0].why, HasSubstr("every rank issued seq 1"));
}

// GPU progress (`record --gpu-timing`): every rank issued the last three allreduces and
// returned from them, as PyTorch does. Rank 1's stream never reached the first (a kernel before
// it does not end); rank 0's GPU runs it and waits, its later two queued behind it. Earlier
// calls ended on the GPU.
SyntheticScript GpuProgress(bool progress, uint8_t rank1_first) {
  ScriptBuilder b(2);
  const int c = b.Comm(0xd5, "dp", {0, 1});
  ScriptCall done = AllReduce(256, 1);
  done.gpu = 2;
  for (int i = 0; i < 3; ++i) b.All(c, done);
  b.All(c, AllReduce(256, 1),
        [&](int p, ScriptCall& call) { call.gpu = p == 0 ? 1 : rank1_first; });
  for (int i = 0; i < 2; ++i) b.All(c, AllReduce(512, 2));
  for (ScriptProcess& p : b.s.processes) {
    p.close = false;
    p.gpu_progress = progress;
  }
  return b.s;
}

TEST(LiveStatus, ACollectiveNotStartedOnOneRanksGpuIsAHangNamingThatRank) {
  const std::string dir = Write(GpuProgress(true, 0), "gpu-not-started");
  auto loaded = LoadTraceDir(dir);
  ASSERT_TRUE(loaded.ok());
  for (const TraceFile& f : loaded->files) {  // start marks are kept apart from GPU times
    EXPECT_EQ(f.gpu_times.size(), 3u);
    EXPECT_EQ(f.gpu_started.size(), f.path.find("rank0") != std::string::npos ? 1u : 0u);
  }
  const LiveReport r = Refresh(dir, 15);
  EXPECT_EQ(r.verdict, LiveVerdict::kHung);
  ASSERT_EQ(r.comms.size(), 1u);
  const LiveComm& c = r.comms[0];
  EXPECT_EQ(c.wait_seq, 3u);
  EXPECT_EQ(c.wait_call, "AllReduce(256 float32, sum)");
  EXPECT_EQ(c.waiting, (std::vector<int>{0}));
  ASSERT_EQ(c.missing.size(), 1u);
  EXPECT_EQ(c.missing[0].rank, 1);
  EXPECT_TRUE(c.missing[0].gpu_not_started);
  EXPECT_EQ(c.missing[0].last_anywhere.seq, 3u);
  ASSERT_TRUE(c.ranks[0].has_gpu_front);
  EXPECT_EQ(c.ranks[0].gpu_front.seq, 3u);
  EXPECT_EQ(c.ranks[0].gpu_front.gpu, LiveGpu::kRunning);
  EXPECT_GE(c.ranks[0].gpu_front.gpu_s, 14.9);
  EXPECT_EQ(c.ranks[1].gpu_front.seq, 3u);
  EXPECT_EQ(c.ranks[1].gpu_front.gpu, LiveGpu::kNotStarted);
  EXPECT_THAT(c.why,
              HasSubstr("every rank issued seq 3; on rank(s) 1 it has not started on the GPU"));
  EXPECT_THAT(c.why, HasSubstr("while rank(s) 0 run it on the GPU"));
  std::string text = FormatLiveText(r);
  std::replace(text.begin(), text.end(), '\n', ' ');
  EXPECT_THAT(text, HasSubstr("; GPU: seq 3 running 15.0 s"));
  EXPECT_THAT(text, HasSubstr("; GPU: seq 3 not started"));
  EXPECT_THAT(text, HasSubstr("but its GPU has not started it"));
  const std::string json = FormatLiveJson(r);
  EXPECT_THAT(json, HasSubstr("\"gpu\":\"not started\""));
  EXPECT_THAT(json, HasSubstr("\"gpu_not_started\":true"));
}

TEST(LiveStatus, ACollectiveRunningOnEveryRanksGpuThatLongIsAHang) {
  const LiveReport r = Refresh(Write(GpuProgress(true, 1), "gpu-running"), 15);
  EXPECT_EQ(r.verdict, LiveVerdict::kHung);
  EXPECT_THAT(r.comms[0].why, HasSubstr("it has run on every rank's GPU for"));
  EXPECT_EQ(r.comms[0].waiting, (std::vector<int>{0, 1}));
  EXPECT_TRUE(r.comms[0].missing.empty());
}

TEST(LiveStatus, WithoutGpuProgressOrTooSoonNothingIsClaimedAboutTheGpu) {
  // No progress note (recorded without --gpu-timing): the host side sees every rank keep up.
  const LiveReport plain = Refresh(Write(GpuProgress(false, 0), "gpu-off"), 15);
  EXPECT_EQ(plain.verdict, LiveVerdict::kRunning);
  EXPECT_FALSE(plain.comms[0].ranks[1].has_gpu_front);
  EXPECT_THAT(FormatLiveText(plain), Not(HasSubstr("GPU:")));
  EXPECT_THAT(FormatLiveJson(plain), HasSubstr("\"gpu\":null"));
  EXPECT_THAT(FormatLiveJson(plain), HasSubstr("\"gpu_front\":null"));
  // With progress, half a second after the issue the timer may not have looked yet.
  const LiveReport soon = Refresh(Write(GpuProgress(true, 0), "gpu-soon"), 0.5);
  EXPECT_EQ(soon.verdict, LiveVerdict::kRunning);
  EXPECT_EQ(soon.comms[0].ranks[1].gpu_front.gpu, LiveGpu::kUnknown);
  EXPECT_EQ(soon.comms[0].ranks[0].gpu_front.gpu, LiveGpu::kRunning);
  // Every call ended on the GPU: done, running.
  ScriptBuilder b(2);
  const int c = b.Comm(0xd6, "", {0, 1});
  ScriptCall ended = AllReduce(64, 1);
  ended.gpu = 2;
  for (int i = 0; i < 4; ++i) b.All(c, ended);
  for (ScriptProcess& p : b.s.processes) {
    p.close = false;
    p.gpu_progress = true;
  }
  const LiveReport idle = Refresh(Write(b.s, "gpu-done"), 15);
  EXPECT_EQ(idle.verdict, LiveVerdict::kRunning);
  EXPECT_FALSE(idle.comms[0].ranks[0].has_gpu_front);
  EXPECT_THAT(FormatLiveText(idle), HasSubstr("; GPU: done"));
  // Not started for less than the hang threshold: shown, not a hang.
  const LiveReport waiting = Refresh(Write(GpuProgress(true, 0), "gpu-wait"), 3);
  EXPECT_EQ(waiting.verdict, LiveVerdict::kRunning);
  EXPECT_EQ(waiting.comms[0].ranks[1].gpu_front.gpu, LiveGpu::kNotStarted);
}

// A communicator record that claims a billion ranks (a damaged file; found by the structured
// fuzzer: 3.5 GB and a timeout) lists only the first of the ranks without a file.
TEST(LiveStatus, AHugeClaimedCommunicatorListsFewAbsentRanks) {
  ScriptBuilder b(2);
  const int c = b.Comm(0xd4, "", {0, 1});
  b.s.comms[c].nranks_override = 1 << 30;
  b.All(c, AllReduce(64, 1));
  ScriptCall stuck = AllReduce(64, 1);
  stuck.in_flight = true;
  b.All(c, stuck);
  for (ScriptProcess& p : b.s.processes) p.close = false;
  const LiveReport r = Refresh(Write(b.s, "huge"), 30);
  ASSERT_EQ(r.comms.size(), 1u);
  EXPECT_EQ(r.comms[0].unseen_ranks, (1 << 30) - 2);
  EXPECT_EQ(r.comms[0].missing.size(), 64u);
  EXPECT_EQ(r.comms[0].missing.front().rank, 2);
}

TEST(LiveStatus, NoDataAndBadDirectories) {
  const std::string empty = Dir("empty");
  LiveStatus live(empty);
  auto r = live.Refresh(0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->verdict, LiveVerdict::kNoData);
  EXPECT_EQ(r->ExitCode(), 2);
  std::ofstream(empty + "/foreign.ncclrr") << "not a trace at all";
  auto foreign = LiveStatus(empty).Refresh(0);
  ASSERT_TRUE(foreign.ok());
  ASSERT_EQ(foreign->notes.size(), 1u);
  EXPECT_THAT(foreign->notes[0], HasSubstr("is not an ncclrr trace"));
  EXPECT_FALSE(LiveStatus(empty + "/nope").Refresh(0).ok());
}

// A file copied over in pieces, as a running process appends it: every refresh reads only the
// new bytes, a piece that ends inside a frame is no error, and the end result is the whole.
TEST(LiveStatus, FollowsAGrowingFileReadingOnlyWhatWasAppended) {
  const std::string src = Write(SkippedCollective(false), "grow-src");
  std::string file;
  for (const auto& e : std::filesystem::directory_iterator(src))
    if (e.path().filename() == "synthetic-rank0.ncclrr") file = e.path().string();
  std::ifstream in(file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  const std::string dst = Dir("grow") + "/rank0.ncclrr";
  TraceFollower follower(dst);
  std::ofstream(dst, std::ios::binary).close();
  size_t calls = 0, polls = 0;
  for (size_t end = 0; end <= bytes.size(); end += 37) {
    std::ofstream out(dst, std::ios::binary | std::ios::app);
    const size_t from = std::min(bytes.size(), end == 0 ? 0 : end - 37);
    out.write(bytes.data() + from,
              static_cast<std::streamsize>(std::min(bytes.size(), end) - from));
    out.close();
    TraceFile delta;
    ASSERT_TRUE(follower.Poll(&delta).ok());
    calls += delta.calls.size();
    EXPECT_LE(follower.bytes_read(), std::min(bytes.size(), end));
    ++polls;
  }
  {
    std::ofstream out(dst, std::ios::binary | std::ios::app);
    const size_t done = (bytes.size() / 37) * 37;
    out.write(bytes.data() + done, static_cast<std::streamsize>(bytes.size() - done));
  }
  TraceFile delta;
  ASSERT_TRUE(follower.Poll(&delta).ok());
  calls += delta.calls.size();
  auto whole = ReadTraceFile(file);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(calls, whole->calls.size());
  EXPECT_EQ(follower.bytes_read(), bytes.size());
  EXPECT_EQ(follower.bad_frames(), 0u);
  EXPECT_GT(polls, 3u);
}

// A job of thousands of ranks has more files than a process may hold open (ulimit -n is 1,024
// by default): following them all must not keep one open each.
TEST(LiveStatus, FollowsMoreFilesThanItMayHoldOpen) {
  constexpr int kRanks = 128;
  ScriptBuilder b(kRanks);
  std::vector<int> ranks(kRanks);
  for (int r = 0; r < kRanks; ++r) ranks[r] = r;
  const int c = b.Comm(0xd2, "dp", ranks);
  for (int step = 0; step < 3; ++step) b.All(c, AllReduce(1024, 1));
  const std::string dir = Write(b.s, "many-files");
  const int64_t now = LatestIssuePlus(dir, 1);
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  size_t open_now = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd");
       it != std::filesystem::directory_iterator(); ++it)
    ++open_now;
  rlimit low = saved;
  low.rlim_cur = open_now + 16;  // room for a few more, far fewer than the files
  ASSERT_LT(low.rlim_cur, rlim_t{kRanks});
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  LiveStatus live(dir);
  auto first = live.Refresh(now);
  auto again = live.Refresh(now);
  setrlimit(RLIMIT_NOFILE, &saved);
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_TRUE(again.ok()) << again.status().message();
  for (const LiveReport* r : {&*first, &*again}) {
    EXPECT_EQ(r->files, kRanks);
    EXPECT_EQ(r->calls, kRanks * 3u);
    EXPECT_THAT(r->notes, Not(::testing::Contains(HasSubstr("cannot open"))));
    EXPECT_EQ(r->verdict, LiveVerdict::kFinished);
  }
}

// A file replaced under its name (another run writing to the same directory) is read from its
// start, even when the new one is already longer than what was read of the old.
TEST(LiveStatus, AFileReplacedUnderItsNameIsReadFromItsStart) {
  const std::string small = Write(SkippedCollective(true), "replace-small");
  ScriptBuilder b(3);
  const int c = b.Comm(0xd3, "dp", {0, 1, 2});
  // Enough calls that the new file is longer than the old one however well each compresses.
  constexpr int kSteps = 400;
  for (int step = 0; step < kSteps; ++step) b.All(c, AllReduce(4096, 1));
  for (ScriptProcess& p : b.s.processes) p.close = true;
  const std::string big = Write(b.s, "replace-big");
  const std::string name = "synthetic-rank0.ncclrr";
  const std::string dst = Dir("replace") + "/rank0.ncclrr";
  std::filesystem::copy_file(small + "/" + name, dst);
  TraceFollower follower(dst);
  TraceFile delta;
  ASSERT_TRUE(follower.Poll(&delta).ok());
  EXPECT_EQ(delta.calls.size(), ReadTraceFile(dst)->calls.size());
  ASSERT_GT(std::filesystem::file_size(big + "/" + name), std::filesystem::file_size(dst));
  std::filesystem::copy_file(big + "/" + name, dst + ".new");
  std::filesystem::rename(dst + ".new", dst);  // as a writer replaces a file: a new inode
  ASSERT_TRUE(follower.Poll(&delta).ok());
  EXPECT_EQ(delta.calls.size(), static_cast<size_t>(kSteps));
  EXPECT_EQ(delta.bad_frames, 0u);
  EXPECT_EQ(follower.bytes_read(), std::filesystem::file_size(dst));
}

TEST(LiveStatus, ADumpRequestIsWrittenWholeIntoTheDirectory) {
  const std::string dir = Dir("dump");
  auto id = RequestDump(dir, "test");
  ASSERT_TRUE(id.ok()) << id.status().message();
  std::ifstream in(dir + "/" + kDumpRequestFile);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, *id + " test");
  auto again = RequestDump(dir, "test");
  ASSERT_TRUE(again.ok());
  EXPECT_NE(*again, *id);
  EXPECT_FALSE(RequestDump(dir + "/missing", "test").ok());
}

}  // namespace
}  // namespace ncclrr::analysis

namespace ncclrr::analysis {
namespace {

std::string RealTrace(const std::string& name) {
  const char* src = std::getenv("NCCLRR_SOURCE_DIR");
  return (std::filesystem::path(src ? src : ".") / "tests/data/real" / name).string();
}

// Real jobs (tests/data/real/README.md), looked at as if `status` ran `later_s` after the last
// call any rank issued.
TEST(LiveStatusRealJobs, ARankSleeping200msPerStepIsAStraggler) {
  const LiveReport r = Refresh(RealTrace("torch-straggler"), 0.05);
  ASSERT_EQ(r.comms.size(), 1u);
  EXPECT_EQ(r.verdict, LiveVerdict::kStraggler) << FormatLiveText(r);
  ASSERT_EQ(r.comms[0].missing.size(), 1u);
  EXPECT_EQ(r.comms[0].missing[0].rank, 1);
  EXPECT_NEAR(r.comms[0].missing[0].lag_s, 0.2, 0.05);
  EXPECT_THAT(FormatLiveText(r), HasSubstr("issues its collectives 0.2"));
}

TEST(LiveStatusRealJobs, TwoGroupsInOppositeOrdersAreADeadlock) {
  const LiveReport r = Refresh(RealTrace("two-groups"), 30);
  EXPECT_EQ(r.verdict, LiveVerdict::kHung);
  int deadlocked = 0;
  for (const LiveComm& c : r.comms)
    for (const LiveMissing& m : c.missing) deadlocked += m.deadlock;
  EXPECT_EQ(deadlocked, 2) << FormatLiveText(r);
  EXPECT_THAT(FormatLiveText(r), HasSubstr("used in opposite orders, a deadlock"));
}

// Ring attention where every rank sent first (4 ranks, killed while hung): no collective was
// issued, and each rank's grouped Send returned at once (it waits in the group's end, which the
// trace does not show). Each rank's last NCCL call is a Send its peer never matched: a hang,
// naming every rank's Send. Looked at right after the calls, it is not a hang yet.
TEST(LiveStatusRealJobs, RanksStoppedAfterUnmatchedSendsAreAHang) {
  const LiveReport r = Refresh(RealTrace("ring4-send-first"), 30);
  EXPECT_EQ(r.verdict, LiveVerdict::kHung) << FormatLiveText(r);
  ASSERT_EQ(r.comms.size(), 1u);
  EXPECT_EQ(r.comms[0].waiting, (std::vector<int>{0, 1, 2, 3}));
  for (const LiveRank& k : r.comms[0].ranks) {
    EXPECT_TRUE(k.p2p_unmatched) << k.rank;
    EXPECT_EQ(k.p2p_calls, 1u);
  }
  EXPECT_THAT(FormatLiveText(r), HasSubstr("rank 3 since Send(4194304 float32 to 0)"));
  EXPECT_THAT(FormatLiveJson(r), HasSubstr("\"p2p_unmatched\":true"));
  EXPECT_NE(Refresh(RealTrace("ring4-send-first"), 1).verdict, LiveVerdict::kHung);
  // A pipeline hung at a collective (pptp-micro) is still told by that collective.
  const LiveReport pipeline = Refresh(RealTrace("pptp-micro"), 30);
  EXPECT_EQ(pipeline.verdict, LiveVerdict::kHung);
  bool at_seq_3 = false;
  for (const LiveComm& c : pipeline.comms)
    at_seq_3 |= c.state == LiveState::kHung && c.wait_seq == 3 && c.why.find("seq 3") == 0;
  EXPECT_TRUE(at_seq_3) << FormatLiveText(pipeline);
}

TEST(LiveStatusRealJobs, AJaxProcessTakingAnExtraBranchIsNamed) {
  const LiveReport r = Refresh(RealTrace("jax-branch"), 30);
  EXPECT_EQ(r.verdict, LiveVerdict::kHung) << FormatLiveText(r);
  ASSERT_EQ(r.comms.size(), 1u);
  EXPECT_EQ(r.comms[0].wait_seq, 8u);
  ASSERT_EQ(r.comms[0].missing.size(), 1u);
}

// PyTorch under `record --gpu-timing`: rank 1 launched a kernel that spins 120 s before step
// 5's gradient all_reduces. Every rank issued every collective and returned (PyTorch enqueues);
// only GPU progress shows that rank 1's NCCL stream never reached seq 25 while rank 0's GPU runs
// it. The same with CUPTI (a start event per call beside it) and with event pairs.
TEST(LiveStatusRealJobs, AGpuStalledBehindAKernelIsNamedFromGpuProgress) {
  for (const char* name :
       {"torch-gpu-stall", "torch-gpu-stall-events", "torch-gpu-stall-cupti-flush"}) {
    const LiveReport r = Refresh(RealTrace(name), 30);
    EXPECT_EQ(r.verdict, LiveVerdict::kHung) << name << "\n" << FormatLiveText(r);
    ASSERT_EQ(r.comms.size(), 1u);
    const LiveComm& c = r.comms[0];
    EXPECT_EQ(c.wait_seq, 25u);
    EXPECT_EQ(c.waiting, (std::vector<int>{0}));
    ASSERT_EQ(c.missing.size(), 1u);
    EXPECT_EQ(c.missing[0].rank, 1);
    EXPECT_TRUE(c.missing[0].gpu_not_started);
    ASSERT_EQ(c.ranks.size(), 2u);
    EXPECT_EQ(c.ranks[0].gpu_front.gpu, LiveGpu::kRunning);
    EXPECT_EQ(c.ranks[1].gpu_front.gpu, LiveGpu::kNotStarted);
    EXPECT_THAT(FormatLiveText(r), HasSubstr("; GPU: seq 25 not started"));
  }
}

}  // namespace
}  // namespace ncclrr::analysis
