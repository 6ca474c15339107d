// Ranks as threads and as one thread driving all ranks with group calls (TensorFlow's NcclManager,
// nccl-tests -g), nested groups, grouped send/recv, and splits.
#include <numeric>
#include <vector>

#include "test_util.h"

namespace ncclrr::host::testing {
namespace {

TEST(HostGroups, OneThreadInitsAndDrivesFourRanks) {
  const int n = 4;
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<ncclComm_t> comms(n);
  std::vector<cudaStream_t> streams(n);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < n; ++r) ASSERT_EQ(ncclCommInitRank(&comms[r], n, id, r), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (auto& s : streams) s = ncclrrHostStreamCreate();
  std::vector<std::vector<double>> buf(n, std::vector<double>(1000));
  for (int step = 0; step < 20; ++step) {
    for (int r = 0; r < n; ++r) std::fill(buf[r].begin(), buf[r].end(), r + step);
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(ncclAllReduce(buf[r].data(), buf[r].data(), 1000, ncclDouble, ncclSum, comms[r],
                              streams[r]),
                ncclSuccess);
    }
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(ncclrrHostStreamSynchronize(streams[r]), ncclSuccess);
      ASSERT_EQ(buf[r][999], 6 + 4 * step);
    }
  }
  for (int r = 0; r < n; ++r) {
    ncclCommDestroy(comms[r]);
    ncclrrHostStreamDestroy(streams[r]);
  }
}

TEST(HostGroups, NestedGroupIssuesAtOutermostEnd) {
  Ranks ranks(2);
  std::vector<int> a(4, 1), b(4, 2);
  ncclGroupStart();
  ncclGroupStart();
  ncclAllReduce(a.data(), a.data(), 4, ncclInt32, ncclSum, ranks.comms[0], ranks.streams[0]);
  ncclAllReduce(b.data(), b.data(), 4, ncclInt32, ncclSum, ranks.comms[1], ranks.streams[1]);
  ncclGroupEnd();
  EXPECT_EQ(ncclrrHostStreamBusy(ranks.streams[0]), 0);  // not issued yet
  EXPECT_EQ(a[0], 1);
  ncclGroupEnd();
  ASSERT_EQ(ranks.Sync(), ncclSuccess);
  EXPECT_EQ(a[0], 3);
  EXPECT_EQ(b[0], 3);
}

// Sends and receives of one group run together, whatever order each rank lists them in, also
// for messages many times the staging chunk.
TEST(HostGroups, GroupedSendRecvInOppositeOrdersOnThreads) {
  const size_t count = 1 << 20;
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<std::vector<int>> out(2, std::vector<int>(count)), in(2, std::vector<int>(count));
  OnThreads(2, [&](int r) {
    ncclComm_t comm;
    ASSERT_EQ(ncclCommInitRank(&comm, 2, id, r), ncclSuccess);
    cudaStream_t s = ncclrrHostStreamCreate();
    std::iota(out[r].begin(), out[r].end(), r * 7);
    ncclGroupStart();
    if (r == 0) {
      ncclSend(out[r].data(), count, ncclInt32, 1, comm, s);
      ncclRecv(in[r].data(), count, ncclInt32, 1, comm, s);
    } else {
      ncclRecv(in[r].data(), count, ncclInt32, 0, comm, s);
      ncclSend(out[r].data(), count, ncclInt32, 0, comm, s);
    }
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
    ASSERT_EQ(ncclrrHostStreamSynchronize(s), ncclSuccess);
    ncclrrHostStreamDestroy(s);
    ncclCommDestroy(comm);
  });
  EXPECT_EQ(in[0], out[1]);
  EXPECT_EQ(in[1], out[0]);
}

TEST(HostGroups, ThreadPerRankManySteps) {
  const int n = 4, steps = 200;
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<int> wrong(n, 0);
  OnThreads(n, [&](int r) {
    ncclComm_t comm;
    ASSERT_EQ(ncclCommInitRank(&comm, n, id, r), ncclSuccess);
    cudaStream_t s = ncclrrHostStreamCreate();
    std::vector<float> x(257);
    for (int step = 0; step < steps; ++step) {
      std::fill(x.begin(), x.end(), float(r * step));
      ncclAllReduce(x.data(), x.data(), x.size(), ncclFloat, ncclSum, comm, s);
      ncclrrHostStreamSynchronize(s);
      if (x[256] != float(6 * step)) ++wrong[r];
    }
    ASSERT_EQ(ncclrrHostStreamSynchronize(s), ncclSuccess);
    ncclrrHostStreamDestroy(s);
    ncclCommDestroy(comm);
  });
  EXPECT_EQ(wrong, std::vector<int>(n, 0));
}

TEST(HostGroups, SplitByColorOrdersByKey) {
  Ranks ranks(4);
  std::vector<ncclComm_t> sub(4);
  ncclGroupStart();
  for (int r = 0; r < 4; ++r) {
    ASSERT_EQ(ncclCommSplit(ranks.comms[r], r % 2, -r, &sub[r], nullptr), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  std::vector<int> v(4);
  ncclGroupStart();
  for (int r = 0; r < 4; ++r) {
    int rank = -1, count = -1;
    ncclCommUserRank(sub[r], &rank);
    ncclCommCount(sub[r], &count);
    EXPECT_EQ(count, 2);
    EXPECT_EQ(rank, r < 2 ? 1 : 0);  // key -r: the higher parent rank comes first
    v[r] = r;
    ncclAllReduce(&v[r], &v[r], 1, ncclInt32, ncclSum, sub[r], ranks.streams[r]);
  }
  ncclGroupEnd();
  ASSERT_EQ(ranks.Sync(), ncclSuccess);
  EXPECT_EQ(v, std::vector<int>({2, 4, 2, 4}));
  for (auto c : sub) ncclCommDestroy(c);
}

TEST(HostGroups, SplitNoColorGivesNull) {
  Ranks ranks(2);
  std::vector<ncclComm_t> sub(2);
  ncclGroupStart();
  ncclCommSplit(ranks.comms[0], 5, 0, &sub[0], nullptr);
  ncclCommSplit(ranks.comms[1], NCCL_SPLIT_NOCOLOR, 0, &sub[1], nullptr);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(sub[1], nullptr);
  int count = 0;
  ncclCommCount(sub[0], &count);
  EXPECT_EQ(count, 1);
  ncclCommDestroy(sub[0]);
}

}  // namespace
}  // namespace ncclrr::host::testing
