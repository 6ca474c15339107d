// Counts of things skipped per reason (sketched or captured call halves), with the detail of the
// first of each kind: what the notes of sketch_record.cc and capture_plan.cc are written from.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

namespace ncclrr::interpose {

template <int N>
class ReasonCounts {
 public:
  // Adds `n` to `reason`; true when it is the first of its kind (its detail is kept).
  bool Add(int reason, uint64_t n, const std::string& detail) {
    if (counts_[reason].fetch_add(n, std::memory_order_relaxed) != 0) return false;
    std::lock_guard<std::mutex> lock(mu_);
    first_[reason] = detail;
    return true;
  }
  uint64_t count(int reason) const { return counts_[reason].load(); }
  std::string first(int reason) const {
    std::lock_guard<std::mutex> lock(mu_);
    return first_[reason];
  }
  // " (first: DETAIL)", or "" when the first had none.
  std::string FirstSuffix(int reason) const {
    const std::string d = first(reason);
    return d.empty() ? "" : " (first: " + d + ")";
  }

 private:
  std::atomic<uint64_t> counts_[N] = {};
  mutable std::mutex mu_;
  std::string first_[N];
};

}  // namespace ncclrr::interpose
