#pragma once
// A single-producer single-consumer ring of Records owned by one producer thread. The producer
// touches only `head` and its own cached copy of `tail`; the writer thread touches only `tail`.
#include <atomic>
#include <cstdint>
#include <memory>

#include "ncclrr/trace/records.h"

namespace ncclrr::internal {

struct ThreadRing {
  explicit ThreadRing(uint32_t capacity_pow2, uint32_t thread_index, uint32_t os_tid)
      : slots(new Record[capacity_pow2]),
        mask(capacity_pow2 - 1),
        index(thread_index),
        tid(os_tid) {}

  std::unique_ptr<Record[]> slots;
  const uint32_t mask;
  const uint32_t index;
  const uint32_t tid;

  alignas(64) std::atomic<uint64_t> head{0};  // written by the producer
  uint64_t cached_tail = 0;                   // producer's last look at `tail`
  uint64_t uid_counter = 0;                   // producer only
  std::atomic<uint64_t> dropped{0};           // producer increments, writer reads

  alignas(64) std::atomic<uint64_t> tail{0};  // written by the writer thread
  uint64_t reported_dropped = 0;              // writer only
  std::atomic<bool> dead{false};              // the producer thread has exited

  uint64_t capacity() const { return uint64_t{mask} + 1; }
};

}  // namespace ncclrr::internal
