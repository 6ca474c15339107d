// The failure modes the host NCCL must reproduce (docs/hostnccl.md, "Mismatches"): pairing by
// position, prefix semantics for count mismatches, timeouts that report and unblock, abort.
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "test_util.h"

namespace ncclrr::host::testing {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// The motivating bug: rank 1 issues two same-size allreduces in the other order. NCCL pairs by
// position, so the results are A0+B1 and B0+A1: plausible numbers, no error.
TEST(HostMismatch, SwappedSameSizeAllreducesGiveCrossedSums) {
  Ranks ranks(2);
  const size_t n = 64;
  std::vector<float> a0(n, 1), b0(n, 10), a1(n, 100), b1(n, 1000);
  ncclAllReduce(a0.data(), a0.data(), n, ncclFloat, ncclSum, ranks.comms[0], ranks.streams[0]);
  ncclAllReduce(b0.data(), b0.data(), n, ncclFloat, ncclSum, ranks.comms[0], ranks.streams[0]);
  ncclAllReduce(b1.data(), b1.data(), n, ncclFloat, ncclSum, ranks.comms[1], ranks.streams[1]);
  ncclAllReduce(a1.data(), a1.data(), n, ncclFloat, ncclSum, ranks.comms[1], ranks.streams[1]);
  ASSERT_EQ(ranks.Sync(), ncclSuccess);
  EXPECT_EQ(a0[0], 1 + 1000);  // A0 + B1
  EXPECT_EQ(b1[0], 1 + 1000);
  EXPECT_EQ(b0[0], 10 + 100);  // B0 + A1
  EXPECT_EQ(a1[0], 10 + 100);
}

// Counts that differ: the common prefix is reduced over every rank, the rest of each receive
// buffer is left as it was, and the call completes without an error.
TEST(HostMismatch, CountMismatchReducesCommonPrefixOnly) {
  Ranks ranks(2);
  std::vector<int> s0(10, 1), s1(8, 2), r0(10, -7), r1(8, -7);
  ncclAllReduce(s0.data(), r0.data(), 10, ncclInt32, ncclSum, ranks.comms[0], ranks.streams[0]);
  ncclAllReduce(s1.data(), r1.data(), 8, ncclInt32, ncclSum, ranks.comms[1], ranks.streams[1]);
  ASSERT_EQ(ranks.Sync(), ncclSuccess);
  EXPECT_EQ(r0, std::vector<int>({3, 3, 3, 3, 3, 3, 3, 3, -7, -7}));
  EXPECT_EQ(r1, std::vector<int>(8, 3));
}

TEST(HostMismatch, MissingCallTimesOutNamingPositionAndRank) {
  Ranks ranks(2);
  std::vector<float> x(16, 1);
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 2; ++i) {
    ncclAllReduce(x.data(), x.data(), 16, ncclFloat, ncclSum, ranks.comms[0], ranks.streams[0]);
  }
  ncclAllReduce(x.data(), x.data(), 16, ncclFloat, ncclSum, ranks.comms[1], ranks.streams[1]);
  const auto t0 = Clock::now();
  EXPECT_EQ(ncclrrHostStreamSynchronize(ranks.streams[1]), ncclSuccess);
  EXPECT_EQ(ncclrrHostStreamSynchronize(ranks.streams[0]), ncclRemoteError);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_LT(Seconds(t0), 5 * kTestTimeoutMs / 1000.0);
  EXPECT_THAT(err, HasSubstr("rank 0/2: AllReduce #1"));
  EXPECT_THAT(err, HasSubstr("ranks [1] have not issued this position"));
  ncclResult_t async = ncclSuccess;
  EXPECT_EQ(ncclCommGetAsyncError(ranks.comms[0], &async), ncclSuccess);
  EXPECT_EQ(async, ncclRemoteError);
  // The communicator is broken from now on, as in NCCL: further calls report the error.
  EXPECT_EQ(
      ncclAllReduce(x.data(), x.data(), 16, ncclFloat, ncclSum, ranks.comms[0], ranks.streams[0]),
      ncclRemoteError);
}

TEST(HostMismatch, DifferentCollectivesCannotCompleteAndTimeOut) {
  Ranks ranks(2);
  std::vector<float> x(16, 1), y(16, 2);
  ::testing::internal::CaptureStderr();
  ncclAllReduce(x.data(), x.data(), 16, ncclFloat, ncclSum, ranks.comms[0], ranks.streams[0]);
  ncclBroadcast(y.data(), y.data(), 16, ncclFloat, 1, ranks.comms[1], ranks.streams[1]);
  EXPECT_EQ(ranks.Sync(), ncclRemoteError);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, HasSubstr("different collectives"));
  EXPECT_THAT(err, HasSubstr("rank 1 Broadcast(count 16"));
  EXPECT_EQ(x[0], 1);  // nothing was written
}

// Two communicators on the same two streams used in opposite orders: each stream's head waits
// for the other rank's head, which is behind the other call. On GPUs this hangs; here it times out.
TEST(HostMismatch, CrossCommunicatorOrderDeadlocksThenTimesOut) {
  Ranks a(2), b(2);
  std::vector<float> x(8, 1), y(8, 1), z(8, 1), w(8, 1);
  ::testing::internal::CaptureStderr();
  ncclAllReduce(x.data(), x.data(), 8, ncclFloat, ncclSum, a.comms[0], a.streams[0]);
  ncclAllReduce(y.data(), y.data(), 8, ncclFloat, ncclSum, b.comms[0], a.streams[0]);
  ncclAllReduce(z.data(), z.data(), 8, ncclFloat, ncclSum, b.comms[1], a.streams[1]);
  ncclAllReduce(w.data(), w.data(), 8, ncclFloat, ncclSum, a.comms[1], a.streams[1]);
  EXPECT_EQ(a.Sync(), ncclRemoteError);
  ::testing::internal::GetCapturedStderr();
}

TEST(HostMismatch, P2pSizeMismatchTimesOut) {
  Ranks ranks(2);
  std::vector<char> s(100), r(90);
  ::testing::internal::CaptureStderr();
  ncclSend(s.data(), 100, ncclInt8, 1, ranks.comms[0], ranks.streams[0]);
  ncclRecv(r.data(), 90, ncclInt8, 0, ranks.comms[1], ranks.streams[1]);
  EXPECT_EQ(ranks.Sync(), ncclRemoteError);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("sizes differ"));
}

TEST(HostMismatch, RootMismatchEachRankReadsTheRootItNamed) {
  Ranks ranks(2);
  std::vector<int> b0(4, 5), b1(4, 9);
  // Both ranks believe they are the root: each keeps its own data, silently.
  ncclBroadcast(b0.data(), b0.data(), 4, ncclInt32, 0, ranks.comms[0], ranks.streams[0]);
  ncclBroadcast(b1.data(), b1.data(), 4, ncclInt32, 1, ranks.comms[1], ranks.streams[1]);
  ASSERT_EQ(ranks.Sync(), ncclSuccess);
  EXPECT_EQ(b0[0], 5);
  EXPECT_EQ(b1[0], 9);
}

TEST(HostMismatch, InitWithAMissingRankTimesOut) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm = nullptr;
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(ncclCommInitRank(&comm, 2, id, 0), ncclRemoteError);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("ranks [1] never joined"));
  ncclCommDestroy(comm);
}

// Abort from another thread unblocks a synchronize waiting for a peer that never comes, and the
// peer's later calls fail at once with a remote error instead of waiting for the timeout.
TEST(HostMismatch, AbortUnblocksWaitersAndPeers) {
  Ranks ranks(2);
  std::vector<float> x(8, 1);
  ncclAllReduce(x.data(), x.data(), 8, ncclFloat, ncclSum, ranks.comms[0], ranks.streams[0]);
  const auto t0 = Clock::now();
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(ncclCommAbort(ranks.comms[0]), ncclSuccess);
    ranks.comms[0] = nullptr;
  });
  EXPECT_NE(ncclrrHostStreamSynchronize(ranks.streams[0]), ncclSuccess);
  aborter.join();
  EXPECT_LT(Seconds(t0), kTestTimeoutMs / 1000.0 / 2);
  ::testing::internal::CaptureStderr();
  ncclAllReduce(x.data(), x.data(), 4, ncclFloat, ncclSum, ranks.comms[1], ranks.streams[1]);
  ncclAllReduce(x.data(), x.data(), 4, ncclFloat, ncclSum, ranks.comms[1], ranks.streams[1]);
  const auto t1 = Clock::now();
  EXPECT_EQ(ncclrrHostStreamSynchronize(ranks.streams[1]), ncclRemoteError);
  EXPECT_LT(Seconds(t1), kTestTimeoutMs / 1000.0 / 2);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("rank 0 aborted"));
}

}  // namespace
}  // namespace ncclrr::host::testing
