// `ncclrr record --sketch` on the host NCCL, as a user runs it: every collective of
// ncclrr-example's scenarios (threads and --group) gets its planned sketches, equal bit for bit
// to SketchHost on the data the example computes (the racing write of send-race shows as a
// race twin that differs from the after-call sample); the program's output and exit status are
// those of a run without --sketch; the interposer's test programs (every collective, p2p,
// PreMulSum, groups, nonblocking communicators) get the sketches their plans ask for.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "run_util.h"
#include "sketch_expect.h"

namespace ncclrr::testing {
namespace {

std::string Bin(const std::string& name) {
  return std::string(std::getenv("NCCLRR_TEST_BIN")) + "/" + name;
}

class SketchRecord : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() /
            ("ncclrr-sketchrec-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }

  // Runs CMD under `ncclrr record [--sketch]` into DIR/tag; stdout only (the program's output).
  ShellResult Record(const std::string& tag, bool sketch, const std::string& cmd) {
    return RunShell(Bin("ncclrr") + " record " + (sketch ? "--sketch " : "") + "-o " + dir_ + "/" +
                    tag + " -- " + cmd + " 2>/dev/null");
  }
  TraceFile Trace(const std::string& tag) {
    auto d = LoadTraceDir(dir_ + "/" + tag);
    EXPECT_TRUE(d.ok()) << d.status().message();
    EXPECT_EQ(d->files.size(), 1u);
    return d.ok() && !d->files.empty() ? d->files.front() : TraceFile{};
  }

  // The example with and without --sketch: same output and status; the sketches as expected.
  void CheckExample(const ExampleRun& run, int want_code) {
    const std::string cmd = Bin("ncclrr-example") + " " + run.scenario + " --ranks " +
                            std::to_string(run.ranks) + " --steps " + std::to_string(run.steps) +
                            (run.group ? " --group" : "");
    const ShellResult plain = Record("plain", false, cmd);
    const ShellResult sketched = Record("sketched", true, cmd);
    EXPECT_EQ(plain.code, want_code) << plain.out;
    EXPECT_EQ(sketched.code, plain.code) << sketched.out;
    EXPECT_EQ(sketched.out, plain.out);
    const TraceFile t = Trace("sketched");
    EXPECT_TRUE(Trace("plain").sketches.empty());
    size_t checked = 0;
    for (const std::string& p : CheckPlannedSketches(t, &checked)) ADD_FAILURE() << p;
    EXPECT_EQ(checked, size_t(run.ranks * run.steps * 4));  // 3 allreduces, 1 broadcast a step
    for (const std::string& p : CheckExampleSketches(t, run)) ADD_FAILURE() << p;
    for (const NoteData& n : t.notes)
      EXPECT_EQ(n.text.find("skipped"), std::string::npos) << n.text;
  }

  std::string dir_;
};

TEST_F(SketchRecord, CleanExampleMatchesSketchHost) { CheckExample({"clean", 2, 2, false}, 0); }

TEST_F(SketchRecord, CleanExampleInOneGroupPerStep) { CheckExample({"clean", 3, 2, true}, 0); }

TEST_F(SketchRecord, SwapSameSizeSketchesWhatEachRankSent) {
  CheckExample({"swap-same-size", 2, 2, false}, 1);
}

TEST_F(SketchRecord, SwapSameSizeInGroups) { CheckExample({"swap-same-size", 2, 2, true}, 1); }

TEST_F(SketchRecord, SendRaceShowsAsARaceTwinThatDiffers) {
  CheckExample({"send-race", 2, 2, false}, 1);
  const TraceFile t = Trace("sketched");
  int raced = 0;
  for (const auto& [uid, s] : SketchesByCall(t)) {
    const SketchData* twin = s.One(SketchWhich::kSendBeforeSample);
    const SketchData* after = s.One(SketchWhich::kSendAfterSample);
    std::string why;
    if (twin != nullptr && after != nullptr && !SameSketch(*twin, *after, &why)) ++raced;
  }
  EXPECT_EQ(raced, 2);  // rank 1's tensor-0 allreduce, each step
}

TEST_F(SketchRecord, InterposerProgramsGetTheirPlannedSketches) {
  for (const char* workload : {"basic", "nonblocking"}) {
    SCOPED_TRACE(workload);
    const std::string cmd = std::string(NCCLRR_APPS_DIR) + "/interposer_app_direct " + workload;
    const ShellResult plain = Record(std::string("plain-") + workload, false, cmd);
    const ShellResult sketched = Record(std::string("sketched-") + workload, true, cmd);
    EXPECT_EQ(plain.code, 0) << plain.out;
    EXPECT_EQ(sketched.code, 0) << sketched.out;
    EXPECT_EQ(sketched.out, plain.out);  // "checksum N": every output buffer, digested
    const TraceFile t = Trace(std::string("sketched-") + workload);
    size_t checked = 0;
    for (const std::string& p : CheckPlannedSketches(t, &checked)) ADD_FAILURE() << p;
    EXPECT_GT(checked, 0u);
  }
}

TEST_F(SketchRecord, DumpShowsSketchesUnderTheirCall) {
  ASSERT_EQ(Record("t", true, Bin("ncclrr-example") + " clean --ranks 2 --steps 1").code, 0);
  const ShellResult dump = RunShell(Bin("ncclrr") + " dump " + dir_ + "/t --stable");
  EXPECT_EQ(dump.code, 0);
  EXPECT_NE(dump.out.find("AllReduce comm"), std::string::npos) << dump.out;
  EXPECT_NE(dump.out.find("    sketch send_before first 0 count 1024 float32 dots ["),
            std::string::npos)
      << dump.out;
  EXPECT_NE(dump.out.find("    sketch recv_after first 0 count 1024"), std::string::npos);
  EXPECT_NE(dump.out.find("    sketch send_before_sample"), std::string::npos);
  EXPECT_NE(dump.out.find("    sketch send_after_sample"), std::string::npos);
}

}  // namespace
}  // namespace ncclrr::testing
