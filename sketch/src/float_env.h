#pragma once
// The host sketch must round exactly like the GPU: IEEE round-to-nearest-even with subnormals
// kept. A user's process may have switched on flush-to-zero / denormals-are-zero (e.g. PyTorch's
// set_flush_denormal) or another rounding mode on the calling thread; this guard restores the
// IEEE defaults for the duration of a sketch and puts the caller's state back afterwards.
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace ncclrr::sketch {

class IeeeFloatScope {
 public:
  IeeeFloatScope() {
#if defined(__x86_64__) || defined(__i386__)
    saved_ = _mm_getcsr();
    // Clear FTZ (bit 15), DAZ (bit 6) and the rounding control (bits 13-14); keep the masks.
    _mm_setcsr(saved_ & ~((1u << 15) | (1u << 6) | (3u << 13)));
#elif defined(__aarch64__)
    uint64_t fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    saved_ = fpcr;
    // Clear FZ (bit 24), FZ16 (bit 19) and RMode (bits 22-23).
    fpcr &= ~((1ull << 24) | (1ull << 19) | (3ull << 22));
    __asm__ volatile("msr fpcr, %0" : : "r"(fpcr));
#endif
  }
  ~IeeeFloatScope() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_setcsr(static_cast<unsigned>(saved_));
#elif defined(__aarch64__)
    __asm__ volatile("msr fpcr, %0" : : "r"(saved_));
#endif
  }
  IeeeFloatScope(const IeeeFloatScope&) = delete;
  IeeeFloatScope& operator=(const IeeeFloatScope&) = delete;

 private:
  uint64_t saved_ = 0;
};

}  // namespace ncclrr::sketch
