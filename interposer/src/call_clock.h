// Timestamps of the per-call path: CLOCK_MONOTONIC nanoseconds, as every record carries, read
// from the CPU's time-stamp counter where it is invariant (x86-64 with constant_tsc and
// nonstop_tsc): one rdtsc instead of a clock_gettime call, which costs several times more on
// virtual machines. The housekeeping thread anchors the counter to CLOCK_MONOTONIC after 100 ms
// and re-anchors it every second, continuously (no step), so the error stays within a few
// microseconds of clock_gettime. Until the first anchor, and where the counter is not invariant,
// clock_gettime is used.
#pragma once
#include <atomic>
#include <cstdint>

#include "ncclrr/trace/records.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace ncclrr::interpose {

struct TscAnchor {
  std::atomic<uint32_t> seq{0};  // odd while being written
  std::atomic<uint64_t> tsc{0};
  std::atomic<int64_t> ns{0};
  std::atomic<uint64_t> mult{0};  // nanoseconds per tick, 32.32 fixed point
  std::atomic<bool> enabled{false};
};
extern TscAnchor g_tsc;

inline int64_t CallClockNs() {
#if defined(__x86_64__)
  if (__builtin_expect(g_tsc.enabled.load(std::memory_order_relaxed), 1)) {
    for (;;) {
      const uint32_t s = g_tsc.seq.load(std::memory_order_acquire);
      const uint64_t tsc0 = g_tsc.tsc.load(std::memory_order_relaxed);
      const int64_t ns0 = g_tsc.ns.load(std::memory_order_relaxed);
      const uint64_t mult = g_tsc.mult.load(std::memory_order_relaxed);
      const uint64_t now = __rdtsc();
      std::atomic_thread_fence(std::memory_order_acquire);
      if ((s & 1) != 0 || s != g_tsc.seq.load(std::memory_order_relaxed)) continue;
      const int64_t ticks = static_cast<int64_t>(now - tsc0);
      if (ticks <= 0) return ns0;  // read on a core a hair behind the anchoring one
      return ns0 + static_cast<int64_t>((static_cast<unsigned __int128>(ticks) * mult) >> 32);
    }
  }
#endif
  return MonotonicNs();
}

// Housekeeping: first call records a start pair; later calls (>= 100 ms apart) anchor and then
// re-anchor the counter. No-op where the counter is not invariant.
void UpdateTscAnchor();

}  // namespace ncclrr::interpose
