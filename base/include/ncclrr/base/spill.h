#pragma once
// Spilled memory: the per-call arrays of a check (packed calls, the model's slots, the logical
// identity's results) placed in a file on disk instead of in RAM, for a trace whose one
// communicator alone holds more calls than fit (docs/check.md, "Traces larger than memory").
//
// The check runs the same code on the same arrays, so its report is the one an in-memory check
// gives, byte for byte; only where the arrays' pages live changes. They are pages of a file
// mapped shared: the kernel writes them out and drops them when memory runs short, and reads
// them back when touched, so what stays resident is what the check touches at a time (a
// communicator's calls are read rank by rank and position by position, in order).
//
// The file is unnamed (O_TMPFILE, or unlinked at once): nothing is left behind, even when the
// check is killed. Space for each allocation is reserved on disk when it is made (fallocate),
// so that a full disk makes that allocation fall back to ordinary memory rather than a write to
// the mapping fail with SIGBUS: hence only ext4 and xfs, where that reservation holds. A
// twentieth of the disk (at least 1 GiB) is left free for others. Freeing an allocation gives
// its disk space back, and its range is handed out again.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ncclrr/base/status.h"

namespace ncclrr {

// Allocations smaller than this stay in ordinary memory (a spilled one is rounded up to pages).
inline constexpr uint64_t kSpillMinBytes = 16 << 10;

// Of the directory spilled to last, except `bytes`.
struct SpillStats {
  std::string dir;           // where the file is ("" before any SpillScope)
  uint64_t bytes = 0;        // spilled now, in every directory
  uint64_t peak_bytes = 0;   // the most spilled at once since spilling last started
  uint64_t fallbacks = 0;    // allocations left in memory: the disk was full
  uint64_t allocations = 0;  // allocations spilled so far
};

// While a SpillScope lives, allocations of SpillAllocator of at least `min_bytes` go to a file in
// `dir` (scopes may overlap, on any threads: spilling stops when the last one goes; the latest
// scope's directory takes the allocations; at most 64 directories a process). Spilled
// allocations stay valid after it, until freed.
class SpillScope {
 public:
  // An error says why `dir` cannot hold the file: not writable, held in memory (tmpfs), not ext4
  // or xfs, no room, no fallocate, too low a file size limit.
  static StatusOr<SpillScope> Start(const std::string& dir, uint64_t min_bytes = kSpillMinBytes);
  SpillScope(SpillScope&&) noexcept;
  SpillScope& operator=(SpillScope&&) noexcept;
  ~SpillScope();

 private:
  SpillScope() = default;
  bool active_ = false;
};

bool Spilling();
SpillStats GetSpillStats();

namespace spill_internal {
void* Allocate(size_t bytes);         // nullptr: not spilling, too small, or no room
bool Release(void* p, size_t bytes);  // false: `p` is not spilled memory
}  // namespace spill_internal

// std::allocator, except that big allocations are spilled while a SpillScope lives.
template <typename T>
struct SpillAllocator {
  using value_type = T;
  SpillAllocator() = default;
  template <typename U>
  SpillAllocator(const SpillAllocator<U>&) noexcept {}
  T* allocate(size_t n) {
    if (void* p = spill_internal::Allocate(n * sizeof(T))) return static_cast<T*>(p);
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, size_t n) noexcept {
    if (!spill_internal::Release(p, n * sizeof(T))) std::allocator<T>().deallocate(p, n);
  }
  friend bool operator==(const SpillAllocator&, const SpillAllocator&) { return true; }
};

template <typename T>
using SpillVector = std::vector<T, SpillAllocator<T>>;

}  // namespace ncclrr
