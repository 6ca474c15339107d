// bench-hostnccl: is the host NCCL ever the bottleneck of a test or demo?
//   small allreduce rate (8 floats), ranks as threads of one process, 2 and 8 ranks, and one
//   thread driving 2 ranks with group calls; large allreduce (64 MB) bandwidth per rank.
// Prints the median of 5 repetitions. Target: >= 200k small allreduces/s for 2 ranks.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "ncclrr/hostnccl.h"

namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Seconds for `iters` allreduces of `count` floats on every rank, one thread per rank.
double TimeThreads(int n, size_t count, int iters) {
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  std::vector<double> secs(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      ncclComm_t comm;
      ncclCommInitRank(&comm, n, id, r);
      cudaStream_t s = ncclrrHostStreamCreate();
      std::vector<float> buf(count, 1.0f);
      ncclAllReduce(buf.data(), buf.data(), count, ncclFloat, ncclSum, comm, s);  // warm up
      ncclrrHostStreamSynchronize(s);
      const auto t0 = Clock::now();
      for (int i = 0; i < iters; ++i) {
        ncclAllReduce(buf.data(), buf.data(), count, ncclFloat, ncclSum, comm, s);
      }
      ncclrrHostStreamSynchronize(s);
      secs[r] = std::chrono::duration<double>(Clock::now() - t0).count();
      ncclrrHostStreamDestroy(s);
      ncclCommDestroy(comm);
    });
  }
  for (auto& t : threads) t.join();
  return *std::max_element(secs.begin(), secs.end());
}

double TimeGroup(int n, size_t count, int iters) {
  std::vector<ncclComm_t> comms(n);
  ncclCommInitAll(comms.data(), n, nullptr);
  std::vector<cudaStream_t> streams(n);
  for (auto& s : streams) s = ncclrrHostStreamCreate();
  std::vector<std::vector<float>> bufs(n, std::vector<float>(count, 1.0f));
  const auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) {
    ncclGroupStart();
    for (int r = 0; r < n; ++r) {
      ncclAllReduce(bufs[r].data(), bufs[r].data(), count, ncclFloat, ncclSum, comms[r],
                    streams[r]);
    }
    ncclGroupEnd();
  }
  for (auto s : streams) ncclrrHostStreamSynchronize(s);
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  for (int r = 0; r < n; ++r) {
    ncclrrHostStreamDestroy(streams[r]);
    ncclCommDestroy(comms[r]);
  }
  return secs;
}

template <class F>
double MedianOf(F f) {
  std::vector<double> v;
  for (int rep = 0; rep < 5; ++rep) v.push_back(f());
  return Median(v);
}

}  // namespace

int main() {
  const int small_iters = 50000;
  for (int n : {2, 8}) {
    const int iters = n == 2 ? small_iters : small_iters / 5;
    const double rate = MedianOf([&] { return iters / TimeThreads(n, 8, iters); });
    std::printf("small allreduce (8 floats), %d ranks as threads: %.0f calls/s per rank\n", n,
                rate);
  }
  const double grate = MedianOf([&] { return small_iters / TimeGroup(2, 8, small_iters); });
  std::printf("small allreduce (8 floats), 1 thread drives 2 ranks (groups): %.0f groups/s\n",
              grate);
  const size_t big = 16u << 20;  // 64 MB of floats
  for (int n : {2, 8}) {
    const double s = MedianOf([&] { return TimeThreads(n, big, 4) / 4; });
    std::printf("large allreduce (64 MB), %d ranks as threads: %.2f GB/s per rank (%.1f ms)\n", n,
                big * sizeof(float) / s / 1e9, s * 1e3);
  }
  return 0;
}
