// --mpi: one process per rank under Open MPI (here on the host backend, whose communicators span
// processes through shared memory). Skipped where mpirun is not installed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "replay_scripts.h"

namespace ncclrr::testing {
namespace {

using ::testing::HasSubstr;

bool HaveMpirun() { return std::system("command -v mpirun >/dev/null 2>&1") == 0; }

CommandResult RunUnderMpi(int np, const std::string& args) {
  return RunNcclrr("--version >/dev/null 2>&1; mpirun --allow-run-as-root --oversubscribe -np " +
                       std::to_string(np) + " " + (std::getenv("NCCLRR_TEST_BIN") ?: "build/bin") +
                       "/ncclrr " + args,
                   false);
}

TEST(Mpi, SameReportAsOneProcess) {
  if (!HaveMpirun()) GTEST_SKIP() << "mpirun not installed (Debian: openmpi-bin)";
  const std::string dir = WriteTrace(ExampleScript("swap-same-size"), "mpi-swap");
  const CommandResult one = RunNcclrr("replay " + dir + " --order recorded,canonical");
  const CommandResult many = RunUnderMpi(2, "replay " + dir + " --mpi --order recorded,canonical");
  EXPECT_EQ(one.code, 1);
  EXPECT_EQ(many.code, 1);
  // The same report but for the line that says how it ran.
  auto without_mode = [](std::string s) {
    const size_t p = s.find("\nmode: ");
    if (p != std::string::npos) s.erase(p, s.find('\n', p + 1) - p);
    return s;
  };
  EXPECT_EQ(without_mode(one.out), without_mode(many.out));
  EXPECT_THAT(many.out, HasSubstr("mode: one process per rank under mpirun (2 processes)"));
}

TEST(Mpi, HangsAreReportedAcrossProcesses) {
  if (!HaveMpirun()) GTEST_SKIP() << "mpirun not installed (Debian: openmpi-bin)";
  const std::string dir = WriteTrace(ExampleScript("cross-comm-order"), "mpi-cross");
  const CommandResult r = RunUnderMpi(2, "replay " + dir + " --mpi --timeout 1");
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.out, HasSubstr("recorded order: hang"));
  EXPECT_THAT(r.out, HasSubstr("another communicator"));
}

TEST(Mpi, WrongProcessCountIsAnError) {
  if (!HaveMpirun()) GTEST_SKIP() << "mpirun not installed (Debian: openmpi-bin)";
  const std::string dir = WriteTrace(ExampleScript("clean"), "mpi-np");
  EXPECT_EQ(RunUnderMpi(3, "replay " + dir + " --mpi").code, 2);
}

}  // namespace
}  // namespace ncclrr::testing
