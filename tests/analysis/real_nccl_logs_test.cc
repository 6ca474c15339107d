// NCCL and RCCL console logs that people posted publicly (tests/data/nccl-logs, each with a
// .source file naming where it came from): each must import, say how its communicators and
// ranks were inferred, and `check --stable` must give its golden text — no finding on the clean
// ones, the problem named on the broken ones.
#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "golden_file.h"
#include "ncclrr/analysis/check.h"
#include "ncclrr/analysis/nccl_log_import.h"
#include "ncclrr/analysis/report_format.h"
#include "ncclrr/testing/temp_dir.h"

namespace ncclrr::analysis {
namespace {

namespace fs = std::filesystem;

fs::path LogDir() { return ncclrr::testing::SourceDataDir("tests/data/nccl-logs"); }

struct RealLog {
  std::string name;
  std::vector<FindingKind> kinds;  // the findings expected, in report order
  std::string inferred;            // a phrase the `inferred` notes must hold
  std::string absent;              // a phrase the absent-ranks note must hold ("" = none)
};

void PrintTo(const RealLog& l, std::ostream* os) { *os << l.name; }

class RealNcclLogTest : public ::testing::TestWithParam<RealLog> {};

TEST_P(RealNcclLogTest, ImportsAndChecks) {
  const RealLog& want = GetParam();
  const fs::path out =
      fs::temp_directory_path() / ("ncclrr-real-log-" + std::to_string(getpid()) + "-" + want.name);
  fs::remove_all(out);
  auto imported = ImportNcclLogs({(LogDir() / (want.name + ".log")).string()}, out.string());
  ASSERT_TRUE(imported.ok()) << imported.status().message();
  EXPECT_TRUE(fs::exists(LogDir() / (want.name + ".source"))) << "every log names its source";
  auto model = TraceModel::Load(out.string());
  ASSERT_TRUE(model.ok()) << model.status().message();
  CheckOptions o;
  o.stable = true;
  const Report r = Check(*model, o);
  FormatOptions fo;
  fo.stable = true;
  const std::string text = FormatText(r, &*model, fo);
  fs::remove_all(out);
  std::vector<FindingKind> kinds;
  for (const Finding& f : r.findings) kinds.push_back(f.kind);
  EXPECT_EQ(kinds, want.kinds) << text;
  std::string inferred, incomplete;
  for (const Note& n : r.notes) {
    if (n.kind == NoteKind::kInferred) inferred += n.message + "\n";
    if (n.kind == NoteKind::kTraceIncomplete) incomplete += n.message + "\n";
  }
  EXPECT_NE(inferred.find(want.inferred), std::string::npos) << text;
  if (want.absent.empty())
    EXPECT_EQ(incomplete, "") << text;
  else
    EXPECT_NE(incomplete.find(want.absent), std::string::npos) << text;
  for (const Finding& f : r.findings)
    EXPECT_NE(f.kind, FindingKind::kLifecycleError) << "a log without INIT lines is no error";
  const fs::path golden = LogDir() / (want.name + ".check.txt");
  ncclrr::testing::ExpectGolden(golden, text);
}

TEST(RealNcclLogs, EveryCollectedLogIsTested) {
  size_t logs = 0;
  for (const auto& e : fs::directory_iterator(LogDir())) logs += e.path().extension() == ".log";
  EXPECT_EQ(logs, 12u) << "add the new log to RealNcclLogTest's list";
}

// Checks the text as a log and returns the report.
Report CheckLog(const std::string& name, const std::string& text) {
  const fs::path dir = ncclrr::testing::FreshTempDir("log-" + name);
  std::ofstream(dir / "job.log") << text;
  auto imported = ImportNcclLogs({(dir / "job.log").string()}, (dir / "t").string());
  EXPECT_TRUE(imported.ok()) << imported.status().message();
  auto model = TraceModel::Load((dir / "t").string());
  EXPECT_TRUE(model.ok()) << model.status().message();
  Report r = model.ok() ? Check(*model, CheckOptions{}) : Report{};
  fs::remove_all(dir);
  return r;
}

std::string AllReduce(const std::string& prefix, const std::string& comm) {
  return prefix +
         " NCCL INFO AllReduce: opCount 0 sendbuff 0x10 recvbuff 0x10 count 8 "
         "datatype 7 op 0 root 0 comm " +
         comm + " [nranks=2] stream 0x9\n";
}

// The issue's first case: a clean 2-rank job logged without INIT lines is no error.
TEST(ImportedLogs, NoInitLinesIsNoError) {
  const Report r =
      CheckLog("no-init", AllReduce("h:1:1 [0]", "0xa") + AllReduce("h:2:2 [1]", "0xb"));
  EXPECT_TRUE(r.findings.empty());
  EXPECT_EQ(r.ExitCode(false), 0);
}

// With INIT lines, two processes claiming one rank is still reported.
TEST(ImportedLogs, InitLinesStillShowACreationError) {
  const std::string init =
      " NCCL INFO ncclCommInitRank comm 0x%s rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1 "
      "commId 0x1234 - Init COMPLETE\n";
  auto line = [&](const std::string& prefix, const std::string& comm) {
    std::string s = prefix + init;
    s.replace(s.find("%s"), 2, comm);
    return s;
  };
  const Report r =
      CheckLog("dup-rank", line("h:1:1 [0]", "a") + line("h:2:2 [1]", "b") +
                               AllReduce("h:1:1 [0]", "0xa") + AllReduce("h:2:2 [1]", "0xb"));
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings[0].kind, FindingKind::kLifecycleError);
  EXPECT_NE(r.findings[0].message.find("claimed by two processes"), std::string::npos)
      << r.findings[0].message;
}

using K = FindingKind;

INSTANTIATE_TEST_SUITE_P(
    Real, RealNcclLogTest,
    ::testing::Values(
        // One TensorFlow process driving two GPUs (NCCL 2.4): a communicator from [nranks=2]
        // and the device of each thread.
        RealLog{"tf-two-gpus-one-process", {}, "ranks guessed to be the CUDA devices", ""},
        // nccl-tests on one GPU, quoted with "> ": opCount stays 0, so log order.
        RealLog{"nccl-tests-one-rank-quoted", {}, "calls aligned by log order", ""},
        // The RCCL replayer: one process, eight GPUs, all lines on device [7]; globalrank tells
        // the ranks apart; "##" kernel-trace lines between.
        RealLog{"rccl-one-process-eight-gpus", {}, "ranks from RCCL's globalrank", ""},
        // One host of a 16-rank job, every logged rank at the same AllGather.
        RealLog{"allgather-16-ranks-one-host",
                {},
                "7 of 16 ranks logged",
                "if the job hung, ranks 0-2 and 4-7 wait there for ranks 3 and 8-15"},
        // A 4-node job, one node quoted, with "[2]" before the operation name.
        RealLog{"bracketed-rank-quoted", {}, "1 of 4 ranks logged", "ranks 1-3 absent"},
        // One process's log of two 2-rank communicators of sends and receives: ranks follow
        // from the peers they send to.
        RealLog{"sendrecv-two-comms", {}, "number 2 of that size", "rank 0 absent"},
        // RCCL, 4 ranks: rank 2 issues AllGather where rank 0 issues AllReduce (the hang).
        RealLog{"rccl-allgather-vs-allreduce",
                {K::kOpMismatch, K::kOpMismatch},
                "calls aligned by opCount",
                "ranks 1 and 3 absent"},
        // PyTorch DDP on 8 GPUs: a glued line, a line without prefix; rank 0's first broadcast
        // is 25503912 float16 where the others broadcast 53 int64.
        RealLog{"broadcast-hang-glued-lines",
                {K::kDtypeMismatch, K::kMissingCall},
                "calls aligned by opCount",
                "4 of 8 ranks"},
        // Excerpts that end at different places on different ranks: the log is taken as
        // complete, so the rank whose log ends first is named.
        RealLog{"pytorch-two-ranks-memalloc", {K::kMissingCall}, "calls aligned by log order", ""},
        RealLog{"torchtitan-tp-two-ranks", {K::kMissingCall}, "calls aligned by opCount", ""},
        RealLog{"ray-128-ranks-partial",
                {K::kMissingCall},
                "3 of 128 ranks logged",
                "ranks 3-127 absent"},
        RealLog{"rccl-multi-process-globalrank",
                {K::kMissingCall},
                "ranks from RCCL's globalrank",
                "ranks 1, 3, 4, 6 and 7 absent"}));

}  // namespace
}  // namespace ncclrr::analysis
