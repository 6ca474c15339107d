// Issue 6's acceptance sweep on the host NCCL: `ncclrr-example sweep` (every collective x
// datatype x op, in place and out of place, AMP-style Inf/NaN data) computes right, and
// `ncclrr record --sketch` of it gives `ncclrr check` nothing to report: no false wrong_sum,
// buffer_race or suspected_swap on correct data. Threads and --group, two and three ranks (three:
// avg's 1/N is inexact). The same runs on real NCCL: tests/gpu/sketch_acceptance.sh. (The GPU
// sketch path on the stand-in libcuda takes ~90 s per sweep step, too slow for ctest; its
// --group run was clean too.)
#include <gtest/gtest.h>

#include <filesystem>

#include "run_util.h"

namespace ncclrr::testing {
namespace {

std::string Bin(const std::string& name) {
  return std::string(std::getenv("NCCLRR_TEST_BIN")) + "/" + name;
}

class SweepCheck : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = FreshDir("sweep"); }
  void TearDown() override {
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }

  // Records the sweep with --sketch and checks the trace.
  void RecordAndCheck(const std::string& args) {
    const std::string trace = dir_ + "/t";
    const ShellResult run = RunShell(Bin("ncclrr") + " record --sketch -o " + trace + " -- " +
                                     Bin("ncclrr-example") + " sweep " + args + " 2>&1");
    EXPECT_EQ(run.code, 0) << run.out;
    EXPECT_NE(run.out.find("total: #wrong 0"), std::string::npos) << run.out;
    const ShellResult check = RunShell(Bin("ncclrr") + " check " + trace + " 2>&1");
    EXPECT_EQ(check.code, 0) << check.out;
    const ShellResult json = RunShell(Bin("ncclrr") + " check --json " + trace + " 2>&1");
    EXPECT_NE(json.out.find("\"findings\":[]"), std::string::npos) << json.out.substr(0, 4000);
    // Sketches were checked (a run that sketched nothing would pass vacuously).
    EXPECT_NE(check.out.find("calls were checked from sketches"), std::string::npos) << check.out;
  }

  std::string dir_;
};

TEST_F(SweepCheck, TwoRanksThreads) { RecordAndCheck("--ranks 2 --steps 4"); }

TEST_F(SweepCheck, ThreeRanksGroup) { RecordAndCheck("--ranks 3 --steps 3 --group"); }

}  // namespace
}  // namespace ncclrr::testing
