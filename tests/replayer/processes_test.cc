// One process per rank without MPI (`replay --processes`; on the nccl backend also whenever the
// trace has more ranks than GPUs): the same report as one process, hangs explained across
// processes, a dead child named, and where ranks that share a GPU replay. Here on the host NCCL,
// whose communicators span processes through shared memory; tests/gpu/replayer_acceptance.sh
// runs the same on real NCCL with ranks sharing one GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "gpu_sharing.h"
#include "plan.h"
#include "replay_scripts.h"

namespace ncclrr::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The report without its "mode:" line (the one line that differs between modes).
std::string WithoutMode(const std::string& report) {
  std::istringstream in(report);
  std::string line, out;
  while (std::getline(in, line))
    if (line.rfind("mode: ", 0) != 0) out += line + "\n";
  return out;
}

std::string Bin() { return std::getenv("NCCLRR_TEST_BIN") ?: "build/bin"; }

TEST(Processes, SameReportAsOneProcess) {
  for (const char* scenario : {"swap-same-size", "swap-diff-size", "p2p-mismatch"}) {
    const std::string dir = WriteTrace(ExampleScript(scenario, 3), std::string("proc-") + scenario);
    const std::string args = "replay " + dir + " --timeout 1 --order recorded,canonical,permute:3";
    const CommandResult one = RunNcclrr(args);
    const CommandResult many = RunNcclrr(args + " --processes");
    EXPECT_EQ(one.code, many.code) << scenario;
    EXPECT_EQ(WithoutMode(one.out), WithoutMode(many.out)) << scenario;
    EXPECT_THAT(one.out, HasSubstr("mode: one process, a thread per rank\n"));
    EXPECT_THAT(many.out, HasSubstr("mode: one process per rank: 3 process(es) on the host NCCL"));
  }
}

TEST(Processes, JsonSaysTheMode) {
  const std::string dir = WriteTrace(ExampleScript("clean"), "proc-json");
  const CommandResult r = RunNcclrr("replay " + dir + " --processes --json");
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("\"mode\": \"one process per rank: 2 process(es)"));
}

TEST(Processes, HangsAreExplainedAcrossProcesses) {
  const std::string dir = WriteTrace(ExampleScript("cross-comm-order"), "proc-cross");
  const CommandResult r = RunNcclrr("replay " + dir + " --processes --timeout 1");
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.out, HasSubstr("recorded order: hang"));
  EXPECT_THAT(r.out, HasSubstr("another communicator"));
}

TEST(Processes, ChildrenPrintNothingButTheParentsReport) {
  const std::string dir = WriteTrace(ExampleScript("swap-same-size"), "proc-quiet");
  const CommandResult r = RunNcclrr("replay " + dir + " --processes", true);
  // Progress comes once, from the parent; the report once.
  size_t loads = 0;
  for (size_t p = r.out.find("trace files"); p != std::string::npos;
       p = r.out.find("trace files", p + 1))
    ++loads;
  EXPECT_EQ(loads, 1u) << r.out;
  EXPECT_EQ(r.out.find("summary:"), r.out.rfind("summary:")) << r.out;
}

TEST(Processes, ADeadChildIsAnErrorThatNamesIt) {
  const std::string dir = WriteTrace(ExampleScript("clean", 2, 400), "proc-kill");
  // Kill the first child as soon as it exists: before it can report, whatever it was doing.
  const std::string cmd = "bash -c '" + Bin() + "/ncclrr replay " + dir +
                          " --processes --timeout 2 >" + dir +
                          "/out.txt 2>/dev/null & p=$!; "
                          "for i in $(seq 400); do c=$(pgrep -P $p | head -1); "
                          "[ -n \"$c\" ] && break; sleep 0.01; done; kill -9 $c; wait $p; "
                          "echo rc=$? >>" +
                          dir + "/out.txt'";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const CommandResult out = RunNcclrr("--version >/dev/null; cat " + dir + "/out.txt");
  EXPECT_THAT(out.out, HasSubstr("recorded order: error"));
  EXPECT_THAT(out.out, HasSubstr("the process replaying rank 0 was killed by signal 9"));
  EXPECT_THAT(out.out, HasSubstr("rc=2"));
}

TEST(Processes, AForgedChildLinkIsRefused) {
  const std::string dir = WriteTrace(ExampleScript("clean"), "proc-forged");
  const CommandResult r = RunNcclrr("--version >/dev/null; NCCLRR_REPLAY_CHILD=7,0,0,0 " + Bin() +
                                        "/ncclrr replay " + dir + " 7>&-",
                                    true);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("is not a link from a parent replay"));
}

TEST(Processes, MpiAndProcessesExcludeEachOther) {
  const std::string dir = WriteTrace(ExampleScript("clean"), "proc-mpi");
  const CommandResult r = RunNcclrr("replay " + dir + " --mpi --processes", true);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("--mpi and --processes exclude each other"));
}

}  // namespace
}  // namespace ncclrr::testing

namespace ncclrr::replay {
namespace {

using ::testing::HasSubstr;

TEST(GpuPlacement, RoundRobinWithAHostIdPerGroupThatSharesNoGpu) {
  const GpuPlacement p = PlaceOnGpus(5, 2, 22809);
  EXPECT_EQ(p.sharing, GpuSharing::kHostIds);
  EXPECT_EQ(p.SlotOf(0), 0);
  EXPECT_EQ(p.SlotOf(3), 1);
  EXPECT_EQ(p.SlotOf(4), 0);
  EXPECT_EQ(p.SharersOf(0), 3);
  EXPECT_EQ(p.SharersOf(1), 2);
  EXPECT_EQ(p.MaxPerGpu(), 3);
  // Processes 0 and 1 (GPUs 0 and 1) are one host to NCCL; 2 and 3 another; 4 a third.
  auto id = [&](int i) { return p.EnvFor(i, "m").at(0); };
  EXPECT_EQ(id(0).first, "NCCL_HOSTID");
  EXPECT_EQ(id(0).second, id(1).second);
  EXPECT_NE(id(1).second, id(2).second);
  EXPECT_EQ(id(2).second, id(3).second);
  EXPECT_NE(id(3).second, id(4).second);
  EXPECT_THAT(p.Describe(), HasSubstr("5 process(es) on 2 GPU(s) (up to 3 per GPU"));
  EXPECT_THAT(p.Describe(), HasSubstr("timings are not representative"));
}

TEST(GpuPlacement, NoSharingWhenThereAreGpusEnoughAndTheSwitchFromNccl230) {
  EXPECT_EQ(PlaceOnGpus(2, 2, 22809).sharing, GpuSharing::kNone);
  EXPECT_TRUE(PlaceOnGpus(2, 2, 22809).EnvFor(1, "m").empty());
  EXPECT_EQ(PlaceOnGpus(4, 0, 0).sharing, GpuSharing::kNone);  // the host backend
  const GpuPlacement p = PlaceOnGpus(4, 1, 23000);
  EXPECT_EQ(p.sharing, GpuSharing::kMultiRankGpu);
  ASSERT_EQ(p.EnvFor(3, "m").size(), 1u);
  EXPECT_EQ(p.EnvFor(3, "m")[0].first, "NCCL_MULTI_RANK_GPU_ENABLE");
}

TEST(GpuPlacement, BuffersThatCannotFitAreRefusedWithWhatTheyNeed) {
  SyntheticScript s = testing::ExampleScript("clean", 4, 2);
  for (auto& proc : s.processes)
    for (auto& c : proc.calls) c.count = 64 << 20;  // 256 MiB of float32, out of place
  auto model = testing::WriteAndLoad(s, "proc-fit");
  auto plan = BuildPlan(*model);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(LargestBlock(*plan, 0), 512ull << 20);
  // Four ranks on one GPU: 1 GiB each fits 512 MiB; 512 MiB per GPU (128 each) does not.
  EXPECT_TRUE(CheckMemoryFits(*plan, PlaceOnGpus(4, 1, 22809), 4ull << 30).ok());
  const Status s2 = CheckMemoryFits(*plan, PlaceOnGpus(4, 1, 22809), 512ull << 20);
  ASSERT_FALSE(s2.ok());
  EXPECT_THAT(s2.message(), HasSubstr("needs 512 MiB for its largest call, but 4 ranks share GPU "
                                      "0 and get 128 MiB each of 512 MiB (about 2048 MiB needed"));
  EXPECT_THAT(s2.message(), HasSubstr("NCCLRR_REPLAY_MEMORY_MB"));
  // One rank per GPU: the arena grows to the largest call as before.
  EXPECT_TRUE(CheckMemoryFits(*plan, PlaceOnGpus(4, 4, 22809), 512ull << 20).ok());
}

}  // namespace
}  // namespace ncclrr::replay
