// The rest of the API surface: version, aliases, configs, nonblocking comms, shrink, memory,
// error strings, argument checks and no-op mode.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "test_util.h"

namespace ncclrr::host::testing {
namespace {

TEST(HostApi, VersionAndIdentity) {
  int v = 0;
  ASSERT_EQ(ncclGetVersion(&v), ncclSuccess);
  EXPECT_EQ(v, 22809);
  EXPECT_EQ(ncclrrHostIsHostNccl(), 1);
  // ncclX are aliases of pncclX, as in NCCL.
  EXPECT_EQ(reinterpret_cast<void*>(&ncclAllReduce), reinterpret_cast<void*>(&pncclAllReduce));
  EXPECT_STREQ(ncclGetErrorString(ncclRemoteError),
               "remote process exited or there was a network error");
}

TEST(HostApi, InitAllReportsDevices) {
  std::vector<ncclComm_t> comms(3);
  const int devs[3] = {5, 6, 7};
  ASSERT_EQ(ncclCommInitAll(comms.data(), 3, devs), ncclSuccess);
  for (int r = 0; r < 3; ++r) {
    int d = -1, rank = -1;
    ncclCommCuDevice(comms[r], &d);
    ncclCommUserRank(comms[r], &rank);
    EXPECT_EQ(d, devs[r]);
    EXPECT_EQ(rank, r);
    ncclCommDestroy(comms[r]);
  }
}

TEST(HostApi, NonblockingInitAndCollectivesReportInProgress) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  cfg.commName = "nb";
  std::vector<ncclComm_t> comms(2);
  ASSERT_EQ(ncclCommInitRankConfig(&comms[0], 2, id, 0, &cfg), ncclInProgress);
  ncclResult_t state = ncclSuccess;
  ASSERT_EQ(ncclCommGetAsyncError(comms[0], &state), ncclSuccess);
  EXPECT_EQ(state, ncclInProgress);  // rank 1 has not joined
  ASSERT_EQ(ncclCommInitRankConfig(&comms[1], 2, id, 1, &cfg), ncclInProgress);
  for (auto c : comms) {
    do ncclCommGetAsyncError(c, &state);
    while (state == ncclInProgress);
    EXPECT_EQ(state, ncclSuccess);
  }
  std::vector<int> x(8, 1), y(8, 2);
  cudaStream_t s0 = ncclrrHostStreamCreate(), s1 = ncclrrHostStreamCreate();
  EXPECT_EQ(ncclAllReduce(x.data(), x.data(), 8, ncclInt32, ncclSum, comms[0], s0), ncclInProgress);
  EXPECT_EQ(ncclAllReduce(y.data(), y.data(), 8, ncclInt32, ncclSum, comms[1], s1), ncclInProgress);
  EXPECT_EQ(ncclrrHostStreamSynchronize(s0), ncclSuccess);
  EXPECT_EQ(x[7], 3);
  for (auto c : comms) ncclCommDestroy(c);
  ncclrrHostStreamDestroy(s0);
  ncclrrHostStreamDestroy(s1);
}

TEST(HostApi, ShrinkDropsExcludedRanks) {
  Ranks ranks(3);
  std::vector<ncclComm_t> sub(3, nullptr);
  int excluded = 1;
  ncclGroupStart();
  for (int r : {0, 2}) {
    ASSERT_EQ(ncclCommShrink(ranks.comms[r], &excluded, 1, &sub[r], nullptr, NCCL_SHRINK_DEFAULT),
              ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  int rank = -1;
  ncclCommUserRank(sub[2], &rank);
  EXPECT_EQ(rank, 1);
  std::vector<int> v = {10, 0, 20};
  ncclGroupStart();
  for (int r : {0, 2}) ncclAllReduce(&v[r], &v[r], 1, ncclInt32, ncclSum, sub[r], ranks.streams[r]);
  ncclGroupEnd();
  ASSERT_EQ(ranks.Sync(), ncclSuccess);
  EXPECT_EQ(v[0], 30);
  EXPECT_EQ(v[2], 30);
  for (int r : {0, 2}) ncclCommDestroy(sub[r]);
}

TEST(HostApi, ArgumentChecksAndMemory) {
  Ranks ranks(2);
  int x = 0;
  EXPECT_EQ(ncclAllReduce(&x, &x, 1, ncclDataType_t(99), ncclSum, ranks.comms[0], nullptr),
            ncclInvalidArgument);
  EXPECT_EQ(ncclBroadcast(&x, &x, 1, ncclInt32, 2, ranks.comms[0], nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(&x, &x, 1, ncclInt32, ncclRedOp_t(77), ranks.comms[0], nullptr),
            ncclInvalidArgument);
  ncclConfig_t bad{};
  ncclComm_t c = nullptr;
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  EXPECT_EQ(ncclCommInitRankConfig(&c, 1, id, 0, &bad), ncclInvalidArgument);
  void* p = nullptr;
  ASSERT_EQ(ncclMemAlloc(&p, 10000), ncclSuccess);
  void* handle = nullptr;
  EXPECT_EQ(ncclCommRegister(ranks.comms[0], p, 10000, &handle), ncclSuccess);
  EXPECT_EQ(ncclCommDeregister(ranks.comms[0], handle), ncclSuccess);
  ncclWindow_t win = nullptr;
  EXPECT_EQ(ncclCommWindowRegister(ranks.comms[0], p, 8192, &win, NCCL_WIN_DEFAULT), ncclSuccess);
  EXPECT_EQ(ncclCommWindowDeregister(ranks.comms[0], win), ncclSuccess);
  EXPECT_EQ(ncclMemFree(p), ncclSuccess);
}

// Null streams are the default stream of each rank's device, so two ranks can both use 0.
TEST(HostApi, NullStreamIsPerDevice) {
  Ranks ranks(2);
  std::vector<int> a(3, 1), b(3, 2);
  ncclAllReduce(a.data(), a.data(), 3, ncclInt32, ncclSum, ranks.comms[0], nullptr);
  ncclAllReduce(b.data(), b.data(), 3, ncclInt32, ncclSum, ranks.comms[1], nullptr);
  ASSERT_EQ(ncclrrHostStreamSynchronize(nullptr), ncclSuccess);
  EXPECT_EQ(a[0], 3);
}

// NCCLRR_HOST_NOOP is read once per process, so this test re-runs itself with it set.
TEST(HostApi, NoopModeReturnsAtOnce) {
  if (std::getenv("NCCLRR_HOST_NOOP") == nullptr) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      setenv("NCCLRR_HOST_NOOP", "1", 1);
      execl("/proc/self/exe", "hostnccl_test", "--gtest_filter=HostApi.NoopModeReturnsAtOnce",
            static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return;
  }
  ncclUniqueId id{};
  ncclComm_t comm = nullptr;
  // Rank 0 of 2 with nobody else: would time out, but no-op mode returns at once.
  ASSERT_EQ(ncclCommInitRank(&comm, 2, id, 0), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(nullptr, nullptr, 1 << 30, ncclFloat, ncclSum, comm, nullptr),
            ncclSuccess);
  EXPECT_EQ(ncclrrHostStreamSynchronize(nullptr), ncclSuccess);
  int count = 0;
  ncclCommCount(comm, &count);
  EXPECT_EQ(count, 2);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

}  // namespace
}  // namespace ncclrr::host::testing

namespace ncclrr::host {
namespace {

// Host callbacks run in stream order: one enqueued before a collective sees the send buffer as
// the collective will read it; one enqueued after sees the result.
TEST(HostApi, StreamCallbacksRunInStreamOrder) {
  testing::Ranks r(2);
  std::vector<std::vector<float>> buf(2, std::vector<float>(4));
  std::vector<float> seen_before(2), seen_after(2);
  struct Probe {
    const float* p;
    float* out;
  };
  std::vector<Probe> before(2), after(2);
  testing::OnThreads(2, [&](int rank) {
    for (auto& v : buf[rank]) v = static_cast<float>(rank + 1);
    before[rank] = {buf[rank].data(), &seen_before[rank]};
    after[rank] = {buf[rank].data(), &seen_after[rank]};
    auto probe = [](void* a) {
      auto* pr = static_cast<Probe*>(a);
      *pr->out = pr->p[0];
    };
    ncclrrHostStreamAddCallback(r.streams[rank], rank, probe, &before[rank]);
    ASSERT_EQ(ncclAllReduce(buf[rank].data(), buf[rank].data(), 4, ncclFloat, ncclSum,
                            r.comms[rank], r.streams[rank]),
              ncclSuccess);
    ncclrrHostStreamAddCallback(r.streams[rank], rank, probe, &after[rank]);
    ASSERT_EQ(ncclrrHostStreamSynchronize(r.streams[rank]), ncclSuccess);
  });
  EXPECT_EQ(seen_before[0], 1.0f);
  EXPECT_EQ(seen_before[1], 2.0f);
  EXPECT_EQ(seen_after[0], 3.0f);
  EXPECT_EQ(seen_after[1], 3.0f);
}

}  // namespace
}  // namespace ncclrr::host
