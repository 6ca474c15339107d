// Crashes, kills, flight-recorder triggers and an unwritable trace directory: the job behaves as
// it would without ncclrr, and the trace holds what it should.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>

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

INSTANTIATE_TEST_SUITE_P(Signals, InterposerCrash,
                         ::testing::Values(CrashCase{"segv", SIGSEGV}, CrashCase{"abort", SIGABRT},
                                           CrashCase{"kill", SIGKILL}),
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
