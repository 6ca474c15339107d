// Crashes, kills, flight-recorder triggers and an unwritable trace directory: the job behaves as
// it would without ncclrr, and the trace holds what it should.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "run_util.h"

namespace ncclrr::testing {
namespace {

struct CrashCase {
  const char* how;
  int signal;
};

class InterposerCrash : public ::testing::TestWithParam<CrashCase> {};

TEST_P(InterposerCrash, EveryCallBeforeTheCrashIsOnDisk) {
  const CrashCase c = GetParam();
  const std::string dir = FreshDir(c.how);
  const RunResult r = RunApp("interposer_app_direct", {"crash", c.how, "7"}, dir);
  EXPECT_EQ(r.signal, c.signal) << "the process must die as it would without ncclrr: " << r.err;
  EXPECT_NE(r.out.find("steps 7 done"), std::string::npos);
  const TraceFile t = ReadOnlyTrace(dir);
  EXPECT_EQ(CallsOf(t, Api::kAllReduce).size(), 14u) << "7 steps x 2 ranks";
  EXPECT_EQ(t.comms.size(), 2u);
  std::filesystem::remove_all(dir);
}

// One thread per rank: when one rank's thread dies right after its last call, the other rank's
// last call (returned from NCCL at the same moment, its record being appended) is on disk too,
// in every one of 20 runs.
class InterposerThreadCrash : public ::testing::TestWithParam<CrashCase> {};

TEST_P(InterposerThreadCrash, EveryCallOfEveryThreadBeforeTheCrashIsOnDisk) {
  const CrashCase c = GetParam();
  for (int run = 0; run < 20; ++run) {
    const std::string dir = FreshDir(std::string(c.how) + "-threads");
    const RunResult r = RunApp("interposer_app_direct", {"crash-threads", c.how, "50"}, dir);
    ASSERT_EQ(r.signal, c.signal) << r.err;
    const TraceFile t = ReadOnlyTrace(dir);
    int per_rank[2] = {0, 0};
    for (const CallRecord& call : CallsOf(t, Api::kAllReduce))
      if (call.rank == 0 || call.rank == 1) ++per_rank[call.rank];
    ASSERT_EQ(per_rank[0], 50) << "run " << run;
    ASSERT_EQ(per_rank[1], 50) << "run " << run;
    std::filesystem::remove_all(dir);
  }
}

// A SIGTERM for the process while the application's own threads block it goes to one of
// ncclrr's threads or NCCL's: never to the writer, whose flush the handler waits for.
TEST(InterposerSignals, ASignalTheApplicationBlocksStillFlushesEveryCall) {
  for (int run = 0; run < 2; ++run) {
    const std::string dir = FreshDir("blocked-term");
    const RunResult r = RunApp("interposer_app_direct", {"blocked-term", "7"}, dir);
    ASSERT_EQ(r.signal, SIGTERM) << r.err;
    const TraceFile t = ReadOnlyTrace(dir);
    EXPECT_EQ(CallsOf(t, Api::kAllReduce).size(), 14u) << "run " << run << ": 7 steps x 2 ranks";
    std::filesystem::remove_all(dir);
  }
}

INSTANTIATE_TEST_SUITE_P(Signals, InterposerCrash,
                         ::testing::Values(CrashCase{"segv", SIGSEGV}, CrashCase{"abort", SIGABRT},
                                           CrashCase{"kill", SIGKILL}),
                         [](const auto& p) { return std::string(p.param.how); });
// SIGKILL cannot be handled: a kill loses what was not flushed, on any thread.
INSTANTIATE_TEST_SUITE_P(Signals, InterposerThreadCrash,
                         ::testing::Values(CrashCase{"segv", SIGSEGV}, CrashCase{"abort", SIGABRT}),
                         [](const auto& p) { return std::string(p.param.how); });

std::map<std::string, std::string> Ring(int n) { return {{"NCCLRR_RING", std::to_string(n)}}; }

TEST(InterposerRing, WrittenAtExitKeepingTheLastCalls) {
  const std::string dir = FreshDir("ring-exit");
  // 10, not a power of two: the recorder's ring of 2^k slots keeps 2^k - 1 calls.
  const RunResult r = RunApp("interposer_app_direct", {"ring", "exit", "20"}, dir, Ring(10));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const TraceFile t = ReadOnlyTrace(dir);
  EXPECT_TRUE(t.header.ring_mode);
  EXPECT_EQ(t.header.ring_capacity, 10u);
  EXPECT_EQ(t.comms.size(), 2u) << "communicators are kept whatever the ring holds";
  const auto calls = CallsOf(t, Api::kAllReduce);
  ASSERT_EQ(calls.size(), 10u);
  EXPECT_EQ(calls.back().seq, 19u);  // the newest calls survive
  EXPECT_EQ(calls.front().seq, 15u);
  std::filesystem::remove_all(dir);
}

TEST(InterposerRing, Sigusr1WritesTheRingAndTheJobCarriesOn) {
  const std::string dir = FreshDir("ring-usr1");
  const RunResult r = RunApp("interposer_app_direct", {"ring", "usr1", "5"}, dir, Ring(64));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("alive after SIGUSR1"), std::string::npos);
  const TraceFile t = ReadOnlyTrace(dir);
  EXPECT_EQ(CallsOf(t, Api::kAllReduce).size(), 10u);
  std::filesystem::remove_all(dir);
}

TEST(InterposerRing, NcclErrorWritesTheRing) {
  const std::string dir = FreshDir("ring-error");
  const RunResult r = RunApp("interposer_app_direct", {"ring", "error", "5"}, dir, Ring(64));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const TraceFile t = ReadOnlyTrace(dir);
  const auto calls = CallsOf(t, Api::kAllReduce);
  ASSERT_EQ(calls.size(), 11u);
  EXPECT_NE(calls.back().result, 0);
  EXPECT_EQ(calls.back().seq, kNoSeq) << "a refused call takes no sequence number";
  std::filesystem::remove_all(dir);
}

TEST(InterposerRing, WatchdogWritesTheRingWhileACallHangs) {
  const std::string dir = FreshDir("ring-hang");
  auto env = Ring(64);
  env["NCCLRR_WATCHDOG_MS"] = "200";
  env["NCCLRR_HOST_TIMEOUT_MS"] = "1500";
  const RunResult r = RunApp("interposer_app_direct", {"ring", "hang", "3"}, dir, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const TraceFile t = ReadOnlyTrace(dir);
  EXPECT_EQ(CallsOf(t, Api::kAllReduce).size(), 6u);
  bool watchdog = false;
  for (const NoteData& n : t.notes)
    watchdog |= n.text.find("watchdog: CommInitRank") != std::string::npos;
  EXPECT_TRUE(watchdog);
  std::filesystem::remove_all(dir);
}

// The notes of every trace file in `dir` that say a dump was requested.
int RequestedDumps(const std::string& dir, const std::string& by) {
  auto d = LoadTraceDir(dir);
  EXPECT_TRUE(d.ok()) << d.status().message();
  int n = 0;
  for (const TraceFile& f : d->files)
    for (const NoteData& note : f.notes)
      n += note.text.find("flight recorder dump: requested: ") != std::string::npos &&
           note.text.find(by) != std::string::npos;
  return n;
}

// A ring-mode process blocked in a lonely init for `hold_ms` (its own watchdog off), started in
// the background: the other processes of a job, as far as a dump request goes.
std::thread BlockedRingProcess(const std::string& dir, int hold_ms) {
  auto env = Ring(64);
  env["NCCLRR_WATCHDOG_MS"] = "0";
  env["NCCLRR_HOST_TIMEOUT_MS"] = std::to_string(hold_ms);
  std::thread t([dir, env] {
    const RunResult r = RunApp("interposer_app_direct", {"ring", "hang", "3"}, dir, env);
    EXPECT_EQ(r.exit_code, 0) << r.err;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // its housekeeping has looked
  return t;
}

// Dump-on-timeout for any framework: one process's watchdog makes every process recording into
// the directory write its ring, not just its own.
TEST(InterposerRing, AWatchdogAsksEveryProcessInTheDirectoryToDump) {
  const std::string dir = FreshDir("ring-everyone");
  std::thread other = BlockedRingProcess(dir, 2500);
  auto env = Ring(64);
  env["NCCLRR_WATCHDOG_MS"] = "200";
  env["NCCLRR_HOST_TIMEOUT_MS"] = "1000";
  const RunResult r = RunApp("interposer_app_direct", {"ring", "hang", "3"}, dir, env);
  other.join();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(RequestedDumps(dir, "watchdog on"), 1) << "the other process dumped once, on request";
  std::filesystem::remove_all(dir);
}

TEST(InterposerRing, StatusDumpAsksEveryProcessToWriteItsRingNow) {
  const std::string dir = FreshDir("ring-status-dump");
  std::thread other = BlockedRingProcess(dir, 3000);
  const ShellResult s = RunShell(std::string(std::getenv("NCCLRR_TEST_BIN")) + "/ncclrr status " +
                                 dir + " --dump --json 2>/dev/null");
  other.join();
  // Read while the process still ran: its ring's calls were on disk because it dumped.
  EXPECT_NE(s.out.find("\"ring_files\":1"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("\"seq\":2,\"call\":\"AllReduce(16 float32, sum)\""), std::string::npos)
      << s.out;  // the third of the 3 steps' allreduces
  EXPECT_EQ(RequestedDumps(dir, "ncclrr status --dump"), 1);
  std::filesystem::remove_all(dir);
}

TEST(InterposerSafety, UnwritableDirectoryLeavesTheJobAlone) {
  const RunResult plain = RunApp("interposer_app_direct", {"basic"}, "");
  const RunResult r = RunApp("interposer_app_direct", {"basic"}, "/proc/ncclrr-cannot-write");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, plain.out);
  EXPECT_NE(r.err.find("ncclrr: cannot record this process"), std::string::npos) << r.err;
}

TEST(InterposerSafety, DisabledRecordsNothing) {
  const std::string dir = FreshDir("disabled");
  const RunResult r = RunApp("interposer_app_dlsym", {"basic"}, dir, {{"NCCLRR_DISABLE", "1"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::is_empty(dir));
  std::filesystem::remove_all(dir);
}

TEST(InterposerSafety, BadKnobValuesAreReportedAndIgnored) {
  const std::string dir = FreshDir("badknob");
  const RunResult r = RunApp("interposer_app_direct", {"threads", "1", "3"}, dir,
                             {{"NCCLRR_FLUSH_MS", "soon"},
                              {"NCCLRR_GPU_TIMING_ALL_API", "2"},
                              {"NCCLRR_SKETCH_SLOTS", "3"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("NCCLRR_FLUSH_MS=\"soon\" is not a whole number"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("NCCLRR_GPU_TIMING_ALL_API=\"2\" is not 0 or 1"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("NCCLRR_SKETCH_SLOTS=3 is below 16, the sketches of one fused launch"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(CallsOf(ReadOnlyTrace(dir), Api::kAllReduce).size(), 3u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ncclrr::testing
