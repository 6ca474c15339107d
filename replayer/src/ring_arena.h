#pragma once
// A ring allocator over one device allocation: blocks are allocated at the head and freed oldest
// first, which is the order in which a replaying actor retires its units. Device memory is
// allocated once, so no cudaMalloc/cudaFree (which synchronize) happens while calls are in flight.
#include <cstddef>
#include <deque>
#include <optional>
#include <utility>

namespace ncclrr::replay {

class RingArena {
 public:
  RingArena() = default;
  explicit RingArena(size_t size) : size_(size) {}

  // Offset of a free block of `bytes`, or nullopt when the live blocks leave no room.
  std::optional<size_t> Allocate(size_t bytes) {
    if (bytes > size_) return std::nullopt;
    size_t at = 0;
    if (live_.empty()) {
      at = 0;
    } else {
      const size_t tail = live_.front().first;  // oldest live block
      const size_t head = live_.back().first + live_.back().second;
      if (head > tail) {
        if (size_ - head >= bytes)
          at = head;
        else if (tail >= bytes)
          at = 0;
        else
          return std::nullopt;
      } else {  // wrapped: free space is [head, tail)
        if (tail - head < bytes) return std::nullopt;
        at = head;
      }
    }
    live_.push_back({at, bytes});
    return at;
  }

  void FreeOldest() {
    if (!live_.empty()) live_.pop_front();
  }
  bool empty() const { return live_.empty(); }

 private:
  size_t size_ = 0;
  std::deque<std::pair<size_t, size_t>> live_;  // (offset, bytes), oldest first
};

}  // namespace ncclrr::replay
