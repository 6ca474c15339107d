// Ranks as separate processes: the unique id names the shared-memory rendezvous.
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

#include "test_util.h"

namespace ncclrr::host::testing {
namespace {

// Runs as one forked rank; returns the number of wrong results.
int RunRank(const ncclUniqueId& id, int n, int r) {
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, n, id, r) != ncclSuccess) return 100;
  cudaStream_t s = ncclrrHostStreamCreate();
  int wrong = 0;
  const size_t count = 300000;  // several staging rounds
  std::vector<float> x(count), g(count * n);
  for (int step = 0; step < 5; ++step) {
    for (size_t i = 0; i < count; ++i) x[i] = float(r + step + i % 3);
    ncclAllReduce(x.data(), x.data(), count, ncclFloat, ncclSum, comm, s);
    ncclAllGather(x.data(), g.data(), count, ncclFloat, comm, s);
    std::vector<int> out(100, r), in(100, -1);
    ncclGroupStart();
    ncclSend(out.data(), 100, ncclInt32, (r + 1) % n, comm, s);
    ncclRecv(in.data(), 100, ncclInt32, (r + n - 1) % n, comm, s);
    ncclGroupEnd();
    if (ncclrrHostStreamSynchronize(s) != ncclSuccess) return 101;
    const float want = float(n * (n - 1) / 2 + n * step);
    for (size_t i = 0; i < count; i += 997) {
      wrong += x[i] != want + float(n * (i % 3));
      wrong += g[(n - 1) * count + i] != x[i];
    }
    wrong += in[99] != (r + n - 1) % n;
  }
  ncclrrHostStreamDestroy(s);
  ncclCommDestroy(comm);
  return wrong;
}

TEST(HostProcesses, ThreeProcessesAllreduceAllgatherSendRecv) {
  const int n = 3;
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) _exit(std::min(RunRank(id, n, r), 200));
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
}

}  // namespace
}  // namespace ncclrr::host::testing
