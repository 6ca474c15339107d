#pragma once
// The one way offline code spreads independent work over threads: ParallelFor hands out items
// one at a time to up to `threads` threads (the caller's included), so uneven items balance;
// ParallelRanges splits a long element range into contiguous parts, one per core at most.
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace ncclrr {

// Runs fn(i) for i in [0, n). Items must be independent (each writes only its own results).
template <typename F>
void ParallelFor(size_t n, int threads, F&& fn) {
  const size_t workers = std::min<size_t>(n, static_cast<size_t>(std::max(threads, 1)));
  if (workers <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  auto run = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) fn(i);
  };
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  for (size_t t = 1; t < workers; ++t) pool.emplace_back(run);
  run();
  for (auto& t : pool) t.join();
}

// The cores this process may run on (its affinity mask: `taskset`, a container's cpuset): the
// default thread count of offline work (loading, checking).
inline int CoreCount() {
  static const int cores = [] {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }();
  return cores;
}

// Ranges smaller than this run on the calling thread alone (thread start-up costs ~50 us).
inline constexpr uint64_t kParallelGrain = uint64_t{1} << 18;

// How many parts ParallelRanges splits n into: one per kParallelGrain, at most one per core.
inline int ParallelParts(uint64_t n) {
  const auto cores = static_cast<uint64_t>(CoreCount());
  return static_cast<int>(std::clamp<uint64_t>(n / kParallelGrain, 1, cores));
}

// Calls fn(part, begin, end) for each of ParallelParts(n) contiguous parts of [0, n).
template <typename Fn>
void ParallelRanges(uint64_t n, Fn fn) {
  const int parts = ParallelParts(n);
  const uint64_t step = (n + static_cast<uint64_t>(parts) - 1) / static_cast<uint64_t>(parts);
  ParallelFor(static_cast<size_t>(parts), parts, [&](size_t p) {
    const uint64_t b = std::min(n, step * p);
    fn(static_cast<int>(p), b, std::min(n, b + step));
  });
}

}  // namespace ncclrr
