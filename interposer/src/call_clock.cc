#include "call_clock.h"

#include <cstring>
#include <fstream>
#include <string>

namespace ncclrr::interpose {

TscAnchor g_tsc;

namespace {

bool InvariantTsc() {
#if defined(__x86_64__)
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    return line.find(" constant_tsc") != std::string::npos &&
           line.find(" nonstop_tsc") != std::string::npos;
  }
#endif
  return false;
}

// A (tsc, monotonic ns) pair read as close together as the machine allows.
struct Pair {
  uint64_t tsc;
  int64_t ns;
};
Pair ReadPair() {
  Pair best{0, 0};
  uint64_t best_width = ~uint64_t{0};
#if defined(__x86_64__)
  for (int i = 0; i < 5; ++i) {
    const uint64_t a = __rdtsc();
    const int64_t ns = MonotonicNs();
    const uint64_t b = __rdtsc();
    if (b - a < best_width) {
      best_width = b - a;
      best = {a + (b - a) / 2, ns};
    }
  }
#endif
  return best;
}

int g_state = 0;  // housekeeping thread only: 0 unchecked, 1 started, 2 anchored, -1 unusable
Pair g_last{0, 0};

}  // namespace

void UpdateTscAnchor() {
  if (g_state < 0) return;
  if (g_state == 0) {
    if (!InvariantTsc()) {
      g_state = -1;
      return;
    }
    g_last = ReadPair();
    g_state = 1;
    return;
  }
  const Pair now = ReadPair();
  // The first anchor after 100 ms, then one a second.
  const int64_t wait_ns = g_state == 2 ? 1'000'000'000 : 100'000'000;
  if (now.ns - g_last.ns < wait_ns || now.tsc <= g_last.tsc) return;
  const unsigned __int128 measured =
      (static_cast<unsigned __int128>(now.ns - g_last.ns) << 32) / (now.tsc - g_last.tsc);
  int64_t at = now.ns;
  uint64_t mult = static_cast<uint64_t>(measured);
  if (g_state == 2) {
    // Continue from where the running clock is, and steer its error to zero over the next
    // interval rather than stepping (a step back would reorder records).
    const int64_t ticks = static_cast<int64_t>(now.tsc - g_tsc.tsc.load());
    at = g_tsc.ns.load() +
         static_cast<int64_t>((static_cast<unsigned __int128>(ticks) * g_tsc.mult.load()) >> 32);
    const int64_t error = now.ns - at;  // > 0: the clock runs behind
    const int64_t interval = now.ns - g_last.ns;
    const int64_t steer = static_cast<int64_t>((static_cast<__int128>(error) << 32) / interval);
    mult = static_cast<uint64_t>(static_cast<int64_t>(mult) + steer);
  }
  g_tsc.seq.fetch_add(1, std::memory_order_acq_rel);
  g_tsc.tsc.store(now.tsc, std::memory_order_relaxed);
  g_tsc.ns.store(at, std::memory_order_relaxed);
  g_tsc.mult.store(mult, std::memory_order_relaxed);
  g_tsc.seq.fetch_add(1, std::memory_order_release);
  g_tsc.enabled.store(true, std::memory_order_release);
  g_last = now;
  g_state = 2;
}

}  // namespace ncclrr::interpose
