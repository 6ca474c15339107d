// Every collective x every datatype x every reduction op against a plain reference that reduces in
// rank order and rounds to the datatype after each step (as the host NCCL promises to).
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ncclrr/hostnccl/reduce.h"
#include "test_util.h"

namespace ncclrr::host::testing {
namespace {

using Buf = std::vector<char>;

bool IsSigned(int dt) {
  return dt == ncclInt8 || dt == ncclInt32 || dt == ncclInt64 || DtypeIsFloat(dt);
}

double Round(int dt, double v) {
  char tmp[8];
  StoreFromDouble(dt, v, tmp);
  return LoadAsDouble(dt, tmp);
}

// Small values, so integer sums and products never wrap.
double Value(int dt, int r, size_t i) {
  const int v = int((i * 7 + size_t(r) * 3 + 1) % 5);
  return IsSigned(dt) ? v - 1 : v;
}

Buf Input(int dt, int r, size_t n) {
  const size_t e = DtypeSize(dt);
  Buf b(n * e);
  for (size_t i = 0; i < n; ++i) StoreFromDouble(dt, Value(dt, r, i), b.data() + i * e);
  return b;
}

double PreMul(int dt, int r) { return DtypeIsFloat(dt) ? 0.5 * (r + 1) : r + 1; }

// Reference for element i of a reduction over n ranks of `op` (ncclNumOps = PreMulSum).
double Expected(int dt, int op, int n, size_t i) {
  const bool premul = op == ncclNumOps || (op == ncclAvg && DtypeIsFloat(dt));
  double acc = 0;
  for (int r = 0; r < n; ++r) {
    double x = Value(dt, r, i);
    if (premul) {
      const double s = op == ncclAvg ? Round(dt, 1.0 / n) : Round(dt, PreMul(dt, r));
      x = Round(dt, x * s);
    }
    if (r == 0) {
      acc = x;
      continue;
    }
    switch (op) {
      case ncclProd:
        acc = Round(dt, acc * x);
        break;
      case ncclMax:
        acc = std::max(acc, x);
        break;
      case ncclMin:
        acc = std::min(acc, x);
        break;
      default:
        acc = Round(dt, acc + x);
        break;
    }
  }
  if (op == ncclAvg && !DtypeIsFloat(dt)) acc = std::trunc(acc / n);
  return acc;
}

void ExpectElems(int dt, const Buf& got, size_t first, size_t count,
                 const std::function<double(size_t)>& want, const std::string& what) {
  const size_t e = DtypeSize(dt);
  for (size_t i = 0; i < count; ++i) {
    const double g = LoadAsDouble(dt, got.data() + (first + i) * e);
    const double w = want(i);
    if (g != w) {
      ADD_FAILURE() << what << " dtype " << dt << " element " << i << ": got " << g << ", want "
                    << w;
      return;
    }
  }
}

class HostCollectives : public ::testing::TestWithParam<int> {};

TEST_P(HostCollectives, ReductionsMatchReference) {
  const int dt = GetParam();
  const int n = 3;
  Ranks ranks(n);
  const size_t e = DtypeSize(dt);
  for (int op = ncclSum; op <= ncclNumOps; ++op) {
    for (size_t count : {size_t(1), size_t(1000)}) {
      std::vector<ncclRedOp_t> ops(n, ncclRedOp_t(op));
      std::vector<Buf> scalars(n, Buf(8));
      if (op == ncclNumOps) {
        for (int r = 0; r < n; ++r) {
          StoreFromDouble(dt, PreMul(dt, r), scalars[r].data());
          ASSERT_EQ(ncclRedOpCreatePreMulSum(&ops[r], scalars[r].data(), ncclDataType_t(dt),
                                             ncclScalarHostImmediate, ranks.comms[r]),
                    ncclSuccess);
        }
      }
      std::vector<Buf> in(n), ar(n, Buf(count * e)), red(n, Buf(count * e, 0x55)), rs_in(n),
          rs(n, Buf(count * e));
      for (int r = 0; r < n; ++r) {
        in[r] = Input(dt, r, count);
        rs_in[r] = Input(dt, r, count * n);
      }
      ASSERT_EQ(ncclGroupStart(), ncclSuccess);
      for (int r = 0; r < n; ++r) {
        auto d = ncclDataType_t(dt);
        ncclAllReduce(in[r].data(), ar[r].data(), count, d, ops[r], ranks.comms[r],
                      ranks.streams[r]);
        ncclReduce(in[r].data(), red[r].data(), count, d, ops[r], 1, ranks.comms[r],
                   ranks.streams[r]);
        ncclReduceScatter(rs_in[r].data(), rs[r].data(), count, d, ops[r], ranks.comms[r],
                          ranks.streams[r]);
      }
      ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
      ASSERT_EQ(ranks.Sync(), ncclSuccess);
      const std::string what = "op " + std::to_string(op) + " count " + std::to_string(count);
      for (int r = 0; r < n; ++r) {
        ExpectElems(
            dt, ar[r], 0, count, [&](size_t i) { return Expected(dt, op, n, i); },
            "AllReduce " + what);
        ExpectElems(
            dt, rs[r], 0, count, [&](size_t i) { return Expected(dt, op, n, r * count + i); },
            "ReduceScatter " + what);
      }
      ExpectElems(
          dt, red[1], 0, count, [&](size_t i) { return Expected(dt, op, n, i); }, "Reduce " + what);
      EXPECT_EQ(red[0], Buf(count * e, 0x55)) << "Reduce wrote a non-root buffer";
      if (op == ncclNumOps) {
        for (int r = 0; r < n; ++r)
          EXPECT_EQ(ncclRedOpDestroy(ops[r], ranks.comms[r]), ncclSuccess);
      }
    }
  }
}

TEST_P(HostCollectives, DataMovementMatchesReference) {
  const int dt = GetParam();
  const int n = 3;
  Ranks ranks(n);
  const size_t e = DtypeSize(dt), c = 777;
  const auto d = ncclDataType_t(dt);
  std::vector<Buf> in(n), big(n), ag(n, Buf(n * c * e)), bc(n, Buf(c * e)), a2a(n, Buf(n * c * e)),
      ga(n, Buf(n * c * e)), sc(n, Buf(c * e)), p2p(n, Buf(c * e));
  for (int r = 0; r < n; ++r) {
    in[r] = Input(dt, r, c);
    big[r] = Input(dt, r, n * c);
  }
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < n; ++r) {
    ncclComm_t cm = ranks.comms[r];
    cudaStream_t s = ranks.streams[r];
    ncclAllGather(in[r].data(), ag[r].data(), c, d, cm, s);
    ncclBroadcast(in[r].data(), bc[r].data(), c, d, 2, cm, s);
    ncclAlltoAll(big[r].data(), a2a[r].data(), c, d, cm, s);
    ncclGather(in[r].data(), ga[r].data(), c, d, 0, cm, s);
    ncclScatter(big[r].data(), sc[r].data(), c, d, 1, cm, s);
    ncclSend(in[r].data(), c, d, (r + 1) % n, cm, s);
    ncclRecv(p2p[r].data(), c, d, (r + n - 1) % n, cm, s);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  ASSERT_EQ(ranks.Sync(), ncclSuccess);
  for (int j = 0; j < n; ++j) {
    for (int r = 0; r < n; ++r) {
      ExpectElems(
          dt, ag[j], r * c, c, [&](size_t i) { return Value(dt, r, i); }, "AllGather");
      ExpectElems(
          dt, a2a[j], r * c, c, [&](size_t i) { return Value(dt, r, j * c + i); }, "AlltoAll");
    }
    ExpectElems(
        dt, bc[j], 0, c, [&](size_t i) { return Value(dt, 2, i); }, "Broadcast");
    ExpectElems(
        dt, sc[j], 0, c, [&](size_t i) { return Value(dt, 1, j * c + i); }, "Scatter");
    ExpectElems(
        dt, p2p[j], 0, c, [&](size_t i) { return Value(dt, (j + n - 1) % n, i); }, "Send/Recv");
  }
  for (int r = 0; r < n; ++r) {
    ExpectElems(
        dt, ga[0], r * c, c, [&](size_t i) { return Value(dt, r, i); }, "Gather");
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, HostCollectives, ::testing::Range(0, int(ncclNumTypes)));

// Sizes that take many rounds through the staging chunks, in place, one thread per rank.
TEST(HostCollectivesLarge, InPlaceMultiRoundOnThreads) {
  const int n = 2;
  const size_t count = 3u << 20;  // 12 MB of floats: several rounds of the staging chunk
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<std::vector<float>> ar(n, std::vector<float>(count)), ag(n);
  OnThreads(n, [&](int r) {
    ncclComm_t comm;
    ASSERT_EQ(ncclCommInitRank(&comm, n, id, r), ncclSuccess);
    cudaStream_t s = ncclrrHostStreamCreate();
    for (size_t i = 0; i < count; ++i) ar[r][i] = float(i % 1000) + r;
    ag[r].assign(count * n, -1.0f);
    for (size_t i = 0; i < count; ++i) ag[r][r * count + i] = float(r * 10 + i % 7);
    ASSERT_EQ(ncclAllReduce(ar[r].data(), ar[r].data(), count, ncclFloat, ncclSum, comm, s),
              ncclSuccess);
    ASSERT_EQ(ncclAllGather(ag[r].data() + r * count, ag[r].data(), count, ncclFloat, comm, s),
              ncclSuccess);
    ASSERT_EQ(ncclrrHostStreamSynchronize(s), ncclSuccess);
    ncclrrHostStreamDestroy(s);
    ASSERT_EQ(ncclCommDestroy(comm), ncclSuccess);
  });
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < count; i += 4099) {
      ASSERT_EQ(ar[r][i], 2.0f * float(i % 1000) + 1.0f) << i;
      ASSERT_EQ(ag[r][i], float(i % 7));
      ASSERT_EQ(ag[r][count + i], float(10 + i % 7));
    }
  }
}

}  // namespace
}  // namespace ncclrr::host::testing
