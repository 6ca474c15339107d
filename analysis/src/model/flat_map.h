#pragma once
// A small open-addressing hash map from 64-bit keys to 32-bit values. The checkers look up one
// key per call; std::unordered_map's node allocation would dominate the profile.
#include <cstdint>
#include "ncclrr/base/spill.h"

namespace ncclrr::analysis {

class FlatMap64 {
 public:
  explicit FlatMap64(size_t expected = 16) { Rehash(Capacity(expected)); }

  // Returns the value slot for `key`, inserting `fresh` when absent; *added tells which.
  uint32_t& FindOrInsert(uint64_t key, uint32_t fresh, bool* added = nullptr) {
    if ((size_ + 1) * 4 > keys_.size() * 3) Rehash(keys_.size() * 2);
    size_t i = Slot(key);
    while (used_[i] && keys_[i] != key) i = (i + 1) & mask_;
    if (!used_[i]) {
      used_[i] = 1;
      keys_[i] = key;
      values_[i] = fresh;
      ++size_;
      if (added) *added = true;
    } else if (added) {
      *added = false;
    }
    return values_[i];
  }
  const uint32_t* Find(uint64_t key) const {
    size_t i = Slot(key);
    while (used_[i]) {
      if (keys_[i] == key) return &values_[i];
      i = (i + 1) & mask_;
    }
    return nullptr;
  }
  size_t size() const { return size_; }
  template <typename F>
  void ForEach(F&& f) const {
    for (size_t i = 0; i < keys_.size(); ++i)
      if (used_[i]) f(keys_[i], values_[i]);
  }

 private:
  static size_t Capacity(size_t n) {
    size_t c = 16;
    while (c * 3 < n * 4) c *= 2;
    return c;
  }
  size_t Slot(uint64_t key) const {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return static_cast<size_t>(key) & mask_;
  }
  void Rehash(size_t cap) {
    SpillVector<uint64_t> k = std::move(keys_);
    SpillVector<uint32_t> v = std::move(values_);
    SpillVector<uint8_t> u = std::move(used_);
    keys_.assign(cap, 0);
    values_.assign(cap, 0);
    used_.assign(cap, 0);
    mask_ = cap - 1;
    size_ = 0;
    for (size_t i = 0; i < k.size(); ++i)
      if (u[i]) FindOrInsert(k[i], v[i]);
  }
  // Spilled to disk where a check holds more calls than fit (ncclrr/base/spill.h): a map of a
  // rank's buffer keys grows with its calls when every call has a fresh buffer.
  SpillVector<uint64_t> keys_;
  SpillVector<uint32_t> values_;
  SpillVector<uint8_t> used_;
  size_t mask_ = 0, size_ = 0;
};

inline uint64_t Mix64(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 31);
}

}  // namespace ncclrr::analysis
