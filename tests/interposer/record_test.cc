// `ncclrr record` as a user runs it: exit statuses, refusals, the summary line, the environment
// it gives the command, and record -> dump/check end to end on ncclrr-example.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "run_util.h"

namespace ncclrr::testing {
namespace {

struct Cli {
  int code;
  std::string out;  // stdout and stderr together
};

// Runs `ncclrr ARGS` in `cwd` with extra environment assignments `env` ("A=1 B=2").
Cli Ncclrr(const std::string& args, const std::string& cwd = "", const std::string& env = "") {
  const std::string bin = std::string(std::getenv("NCCLRR_TEST_BIN")) + "/ncclrr";
  const std::string cmd =
      (cwd.empty() ? "" : "cd '" + cwd + "' && ") + env + " " + bin + " " + args + " 2>&1";
  const ShellResult r = RunShell(cmd);
  return {r.code, r.out};
}

std::string App(const char* name) { return std::string(NCCLRR_APPS_DIR) + "/" + name; }

TEST(RecordVerb, ExitsWithTheCommandsStatus) {
  const std::string dir = FreshDir("status");
  EXPECT_EQ(Ncclrr("record -o " + dir + "/a -- sh -c 'exit 3'").code, 3);
  EXPECT_EQ(Ncclrr("record -o " + dir + "/b -- sh -c 'kill -TERM $$'").code, 128 + 15);
  EXPECT_EQ(Ncclrr("record -o " + dir + "/c -- true").code, 0);
  const Cli missing = Ncclrr("record -o " + dir + "/d -- ncclrr-no-such-command");
  EXPECT_EQ(missing.code, 127);
  EXPECT_NE(missing.out.find("cannot run 'ncclrr-no-such-command'"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(RecordVerb, FailuresBeforeLaunchExit125WithAReason) {
  const std::string dir = FreshDir("refuse");
  const Cli capture = Ncclrr("record --capture lots -o " + dir + "/x -- true");
  EXPECT_EQ(capture.code, 125);
  EXPECT_NE(capture.out.find("--capture: 'lots' is not a byte count"), std::string::npos)
      << capture.out;
  EXPECT_EQ(Ncclrr("record --capture-filter seq=x --capture 64 -- true").code, 125);
  const Cli none = Ncclrr("record -o " + dir + "/y");
  EXPECT_EQ(none.code, 125);
  EXPECT_NE(none.out.find("no command to record"), std::string::npos);
  const Cli ring = Ncclrr("record --ring zero -- true");
  EXPECT_EQ(ring.code, 125);
  EXPECT_NE(ring.out.find("--ring"), std::string::npos);
  // A directory holding another run's trace is refused; other files do not matter.
  std::filesystem::create_directories(dir + "/old");
  std::ofstream(dir + "/old/notes.txt") << "hello";
  EXPECT_EQ(Ncclrr("record -o " + dir + "/old -- true").code, 0);
  // Another host's file is expected there (one record per node, a shared -o); this host's is not.
  std::ofstream(dir + "/old/ncclrr-other-host-1.ncclrr") << "x";
  EXPECT_EQ(Ncclrr("record -o " + dir + "/old -- true").code, 0);
  std::array<char, 256> host{};
  gethostname(host.data(), host.size() - 1);
  std::ofstream(dir + "/old/" + std::string(host.data()) + "-1.ncclrr") << "x";
  const Cli taken = Ncclrr("record -o " + dir + "/old -- true");
  EXPECT_EQ(taken.code, 125);
  EXPECT_NE(taken.out.find("already holds the trace of another run"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// LD_PRELOAD is split at spaces and cannot quote one: an install path holding a space (and a
// trace directory holding one too) still records every call.
TEST(RecordVerb, AnInstallPathWithASpaceStillRecords) {
  namespace fs = std::filesystem;
  const std::string root = FreshDir("space") + "/install with space";
  const fs::path bin(std::getenv("NCCLRR_TEST_BIN"));
  const fs::path lib = bin.parent_path() / "lib";
  fs::create_directories(root + "/bin");
  for (const char* exe : {"ncclrr", "ncclrr-example"}) fs::copy(bin / exe, root + "/bin/" + exe);
  fs::create_directories(root + "/lib");
  for (const auto& e : fs::directory_iterator(lib))
    if (e.path().filename() != "static")
      fs::copy(e.path(), root + "/lib/" + e.path().filename().string(),
               fs::copy_options::recursive);
  for (const std::string& out : {root + "/trace", root + "/trace with space"}) {
    const ShellResult r = RunShell("'" + root + "/bin/ncclrr' record -o '" + out + "' -- '" + root +
                                   "/bin/ncclrr-example' clean 2>&1");
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("ncclrr: recorded 1 process, 1 communicator (ranks 2 of 2)"),
              std::string::npos)
        << out << ": " << r.out;
  }
  fs::remove_all(fs::path(root).parent_path());
}

// The closing line of `record` for interposer_app_direct's basic workload into `dir`.
std::string BasicSummary(const std::string& dir) {
  return "ncclrr: recorded 1 process, 6 communicators (ranks 4 of 4), 126 calls, 0 dropped, "
         "route preload, in " +
         dir + "\n";
}

TEST(RecordVerb, SummaryLineAndEnvironment) {
  const std::string dir = FreshDir("summary");
  const Cli r = Ncclrr("record -o " + dir + "/t -- " + App("interposer_app_direct") + " basic");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(BasicSummary(dir + "/t")), std::string::npos) << r.out;
  // LD_PRELOAD is appended to, and the mode variables are set.
  const Cli env = Ncclrr("record -o " + dir + "/e -- sh -c 'echo \"[$LD_PRELOAD][$NCCLRR_RING]\"'");
  ASSERT_EQ(env.code, 0);
  EXPECT_NE(env.out.find("libncclrr-interpose.so][0]"), std::string::npos) << env.out;
  // With a preload of the user's own, ncclrr's comes after it.
  const Cli user = Ncclrr("record -o " + dir + "/g -- sh -c 'echo \"[$LD_PRELOAD]\"'", "",
                          "LD_PRELOAD=libm.so.6");
  EXPECT_NE(user.out.find("[libm.so.6 "), std::string::npos) << user.out;
  EXPECT_NE(user.out.find("libncclrr-interpose.so]"), std::string::npos) << user.out;
  std::filesystem::remove_all(dir);
}

// The closing summary comes from the files' footers, never from loading the trace: damage to
// the file's body after the job wrote it changes nothing in the summary (a whole-file read would
// skip the damaged frame and count fewer calls), and a killed process's file, which has no
// footer, is said so and still counted (a small file: one scan, nothing kept).
TEST(RecordVerb, SummaryComesFromTheFooters) {
  const std::string dir = FreshDir("footer-summary");
  const std::string damage =
      "f=$(ls " + dir +
      "/t/*.ncclrr) && n=$(stat -c %s $f) && "
      "dd if=/dev/zero of=$f bs=1 seek=$((n / 3)) count=64 conv=notrunc 2>/dev/null";
  const Cli r = Ncclrr("record -o " + dir + "/t -- sh -c '" + App("interposer_app_direct") +
                       " basic && " + damage + "'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(BasicSummary(dir + "/t")), std::string::npos) << r.out;
  const Cli info = Ncclrr("info " + dir + "/t");
  EXPECT_NE(info.out.find("corrupt frame"), std::string::npos)
      << "the damage is real: " << info.out;
  // Killed after its calls were flushed: no footer.
  const Cli killed =
      Ncclrr("record -o " + dir + "/k -- " + App("interposer_app_direct") + " crash kill 7");
  EXPECT_EQ(killed.code, 128 + 9) << killed.out;
  EXPECT_NE(killed.out.find("ncclrr: recorded 1 process, 1 communicator (ranks 2 of 2), "),
            std::string::npos)
      << killed.out;
  EXPECT_NE(killed.out.find("(1 file(s) not closed: a process was killed or is still running)"),
            std::string::npos)
      << killed.out;
  std::filesystem::remove_all(dir);
}

// A job stopped by a signal before its first NCCL call (a JAX process hung compiling, a
// rendezvous that never completed): nothing recorded, and the summary says where it hung.
TEST(RecordVerb, AJobKilledBeforeItsFirstNcclCallIsSaidToHaveHungBeforeIt) {
  const std::string cwd = FreshDir("killed-early");
  const Cli r = Ncclrr("record -o " + cwd + "/t -- sh -c 'kill -TERM $$'", cwd);
  EXPECT_EQ(r.code, 128 + 15) << r.out;
  EXPECT_NE(r.out.find("ncclrr: no NCCL call was seen"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ncclrr: the job ended by signal 15 (Terminated): if it hung, it hung "
                       "before its first NCCL call"),
            std::string::npos)
      << r.out;
  const Cli plain = Ncclrr("record -o " + cwd + "/u -- true", cwd);
  EXPECT_EQ(plain.out.find("ended by signal"), std::string::npos) << plain.out;
  std::filesystem::remove_all(cwd);
}

TEST(RecordVerb, DefaultDirectoryAndNoNcclCall) {
  const std::string cwd = FreshDir("default");
  const Cli r = Ncclrr("record -- true", cwd);
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("ncclrr: no NCCL call was seen"), std::string::npos) << r.out;
  int dirs = 0;
  for (const auto& e : std::filesystem::directory_iterator(cwd)) {
    ++dirs;
    EXPECT_TRUE(
        std::regex_match(e.path().filename().string(), std::regex("ncclrr-[0-9]{8}-[0-9]{6}")))
        << e.path();
  }
  EXPECT_EQ(dirs, 1);
  std::filesystem::remove_all(cwd);
}

// Two records started together never share a directory: without -o each makes its own
// (ncclrr-YYYYmmdd-HHMMSS, then -2 in the same second); with one -o the second is refused while
// the first records, and its job is not run.
TEST(RecordVerb, ConcurrentRecordsNeverMix) {
  const std::string cwd = FreshDir("concurrent");
  const std::string bin = std::string(std::getenv("NCCLRR_TEST_BIN")) + "/ncclrr";
  const ShellResult both = RunShell("cd '" + cwd + "' && (" + bin + " record -- sleep 1 & " + bin +
                                    " record -- sleep 1 & wait) 2>&1");
  EXPECT_EQ(both.code, 0) << both.out;
  std::set<std::string> dirs;
  for (const auto& e : std::filesystem::directory_iterator(cwd)) {
    dirs.insert(e.path().filename().string());
    EXPECT_TRUE(std::regex_match(e.path().filename().string(),
                                 std::regex("ncclrr-[0-9]{8}-[0-9]{6}(-[0-9]+)?")))
        << e.path();
  }
  EXPECT_EQ(dirs.size(), 2u) << both.out;

  const std::string one = cwd + "/one";
  const ShellResult same =
      RunShell("(" + bin + " record -o '" + one + "' -- sleep 2 & sleep 0.5; " + bin +
               " record -o '" + one + "' -- touch '" + cwd + "/ran'; echo second=$?; wait) 2>&1");
  EXPECT_NE(same.out.find("second=125"), std::string::npos) << same.out;
  EXPECT_NE(same.out.find("another ncclrr record on this host is recording into " + one),
            std::string::npos)
      << same.out;
  EXPECT_FALSE(std::filesystem::exists(cwd + "/ran"));  // the refused job never ran
  std::filesystem::remove_all(cwd);
}

// Nothing recorded is explained by what happened, not blamed on a static NCCL.
TEST(RecordVerb, NothingRecordedSaysWhy) {
  const std::string dir = FreshDir("gone");
  const Cli gone = Ncclrr("record -o " + dir + "/t -- rm -rf " + dir + "/t");
  EXPECT_EQ(gone.code, 0);
  EXPECT_NE(gone.out.find("the trace directory " + dir + "/t was removed while the job ran"),
            std::string::npos)
      << gone.out;
  EXPECT_EQ(gone.out.find("statically linked"), std::string::npos) << gone.out;
  const Cli none = Ncclrr("record -o " + dir + "/u -- true");
  EXPECT_NE(none.out.find("could not create its trace file there"), std::string::npos) << none.out;
  std::filesystem::remove_all(dir);
}

// `kill -9` of ncclrr record (a scheduler's timeout -s KILL) does not leave the job running
// unwatched: the command gets SIGTERM.
TEST(RecordVerb, KillingRecordEndsTheJob) {
  const std::string dir = FreshDir("killed");
  const std::string bin = std::string(std::getenv("NCCLRR_TEST_BIN")) + "/ncclrr";
  const std::string pidfile = dir + "/job.pid";
  const ShellResult r = RunShell(
      bin + " record -o '" + dir + "/t' -- sh -c 'echo $$ > " + pidfile +
      "; exec sleep 30' & rec=$!; sleep 1; kill -9 $rec; sleep 1; job=$(cat '" + pidfile +
      "'); st=$(cut -d\\) -f2 /proc/$job/stat 2>/dev/null | cut -d\\  -f2); " +
      "[ -n \"$st\" ] && [ \"$st\" != Z ] && { echo STILL-RUNNING; kill $job; }; echo done");
  // (a zombie is fine: the job died, and whoever adopted it has not reaped it yet)
  EXPECT_NE(r.out.find("done"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("STILL-RUNNING"), std::string::npos) << r.out;
  std::filesystem::remove_all(dir);
}

TEST(RecordVerb, RingModeReachesTheProcess) {
  const std::string dir = FreshDir("ring");
  const Cli r = Ncclrr("record --ring 10 -o " + dir + "/t -- " + App("interposer_app_direct") +
                       " ring exit 20");
  ASSERT_EQ(r.code, 0) << r.out;
  const TraceFile t = ReadOnlyTrace(dir + "/t");
  EXPECT_TRUE(t.header.ring_mode);
  EXPECT_EQ(CallsOf(t, Api::kAllReduce).size(), 10u);
  std::filesystem::remove_all(dir);
}

TEST(RecordVerb, RecordThenDumpAndCheckAnExample) {
  const std::string example = std::string(std::getenv("NCCLRR_TEST_BIN")) + "/ncclrr-example";
  if (!std::filesystem::exists(example)) GTEST_SKIP() << "ncclrr-example is not built";
  const std::string dir = FreshDir("example");
  // swap-same-size: rank 1 swaps two same-size allreduces; the example reports #wrong (exit 1).
  const Cli r = Ncclrr("record -o " + dir + "/t -- " + example + " swap-same-size --ranks 2");
  EXPECT_EQ(r.code, 1) << "the example's own status: " << r.out;
  EXPECT_NE(r.out.find("ncclrr: recorded 1 process, 1 communicator (ranks 2 of 2)"),
            std::string::npos)
      << r.out;
  const Cli dump = Ncclrr("dump " + dir + "/t --stable");
  EXPECT_EQ(dump.code, 0) << dump.out;
  EXPECT_NE(dump.out.find("AllReduce comm 0x"), std::string::npos);
  EXPECT_NE(dump.out.find(" rank 1 seq 0 count "), std::string::npos) << dump.out;
  const Cli check = Ncclrr("check " + dir + "/t");
  if (check.code != 2) {  // 2: the check verb is not in this build
    EXPECT_EQ(check.code, 1) << check.out;
  }
  std::filesystem::remove_all(dir);
}

TEST(RecordVerb, GpuTimingOnTheHostNcclLeavesTheJobAloneAndSaysWhy) {
  const std::string dir = FreshDir("gpu");
  const Cli plain = Ncclrr("record -o " + dir + "/a -- " + App("interposer_app_direct") + " basic");
  const Cli timed =
      Ncclrr("record --gpu-timing -o " + dir + "/b -- " + App("interposer_app_direct") + " basic");
  ASSERT_EQ(plain.code, 0) << plain.out;
  EXPECT_EQ(timed.code, 0) << timed.out;
  EXPECT_NE(timed.out.find("126 calls, 0 dropped"), std::string::npos) << timed.out;
  EXPECT_NE(timed.out.find("ncclrr: no GPU times: GPU timing (--gpu-timing) is unavailable"),
            std::string::npos)
      << timed.out;
  const TraceFile t = ReadOnlyTrace(dir + "/b");
  EXPECT_TRUE(t.gpu_times.empty());
  EXPECT_EQ(t.header.env.count("NCCLRR_GPU_TIMING"), 1u);
  bool noted = false;
  for (const NoteData& n : t.notes)
    noted |= n.text.find(
                 "GPU timing (--gpu-timing) is unavailable in this process: the NCCL in "
                 "use is ncclrr's host NCCL") != std::string::npos;
  EXPECT_TRUE(noted);
  const Cli env =
      Ncclrr("record --gpu-timing -o " + dir + "/e -- sh -c 'echo \"[$NCCLRR_GPU_TIMING]\"'");
  EXPECT_NE(env.out.find("[1]"), std::string::npos) << env.out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ncclrr::testing
