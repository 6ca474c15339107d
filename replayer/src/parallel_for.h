#pragma once
// Splits [0, n) into contiguous ranges over a few threads when n is large: making and checking
// synthetic data for a 64 MiB call element by element took ~1 s on one thread, so a verified replay
// of a large-message job spent nearly all its time there.
#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace ncclrr::replay {

// Ranges smaller than this run on the calling thread alone (thread start-up costs ~50 us).
inline constexpr uint64_t kParallelGrain = uint64_t{1} << 18;

// How many parts ParallelFor splits n into: one per kParallelGrain, at most one per core.
inline int ParallelParts(uint64_t n) {
  static const uint64_t cores = std::max(1u, std::thread::hardware_concurrency());  // reads /sys
  return static_cast<int>(std::clamp<uint64_t>(n / kParallelGrain, 1, cores));
}

// Calls fn(part, begin, end) for each of ParallelParts(n) parts.
template <typename Fn>
void ParallelFor(uint64_t n, Fn fn) {
  const int parts = ParallelParts(n);
  if (parts == 1) {
    fn(0, uint64_t{0}, n);
    return;
  }
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(parts - 1));
  const uint64_t step = (n + static_cast<uint64_t>(parts) - 1) / static_cast<uint64_t>(parts);
  for (int p = 1; p < parts; ++p) {
    const uint64_t b = std::min(n, step * static_cast<uint64_t>(p));
    const uint64_t e = std::min(n, b + step);
    threads.emplace_back([&fn, p, b, e] { fn(p, b, e); });
  }
  fn(0, uint64_t{0}, std::min(n, step));
  for (std::thread& t : threads) t.join();
}

}  // namespace ncclrr::replay
