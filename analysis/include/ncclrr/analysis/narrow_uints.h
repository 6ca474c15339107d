#pragma once
// NarrowUints: a vector of 32-bit unsigned values kept 1, 2 or 4 bytes wide, the narrowest that
// holds every value set so far. The logical identity keeps several of these per call (logical
// id, shape number, weight index), and their values are small numbers: a few hundred tensors,
// a few dozen shapes. At 1 byte instead of 4 they are most of what took the check's peak above
// 40 bytes per call (issue 26).
//
// Values are stored plus one, wrapping, so the all-ones "none" value (kNoLogicalId) is stored as
// 0 and does not force the widest width.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ncclrr/base/spill.h"

namespace ncclrr::analysis {

class NarrowUints {
 public:
  NarrowUints() = default;
  NarrowUints(size_t n, uint32_t value) { assign(n, value); }

  void assign(size_t n, uint32_t value) {
    size_ = n;
    width_ = WidthFor(Stored(value));
    bytes_.assign(n * width_, 0);
    if (Stored(value) != 0)
      for (size_t i = 0; i < n; ++i) Put(i, Stored(value));
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int width() const { return width_; }  // bytes per value

  uint32_t operator[](size_t i) const { return Get(i) - 1; }
  // Widens every value first when `value` does not fit the current width (at most twice over a
  // vector's life).
  void set(size_t i, uint32_t value) {
    const uint32_t s = Stored(value);
    if (WidthFor(s) > width_) Widen(WidthFor(s));
    Put(i, s);
  }
  std::vector<uint32_t> ToVector() const {
    std::vector<uint32_t> out(size_);
    for (size_t i = 0; i < size_; ++i) out[i] = (*this)[i];
    return out;
  }

  // Equal values, whatever the widths.
  friend bool operator==(const NarrowUints& a, const NarrowUints& b) {
    if (a.size_ != b.size_) return false;
    if (a.width_ == b.width_) return a.bytes_ == b.bytes_;
    for (size_t i = 0; i < a.size_; ++i)
      if (a.Get(i) != b.Get(i)) return false;
    return true;
  }

 private:
  static uint32_t Stored(uint32_t v) { return v + 1; }
  static uint8_t WidthFor(uint32_t stored) { return stored <= 0xff ? 1 : stored <= 0xffff ? 2 : 4; }
  uint32_t Get(size_t i) const {
    const uint8_t* p = bytes_.data() + i * width_;
    switch (width_) {
      case 1:
        return *p;
      case 2: {
        uint16_t v;
        std::memcpy(&v, p, 2);
        return v;
      }
      default: {
        uint32_t v;
        std::memcpy(&v, p, 4);
        return v;
      }
    }
  }
  void Put(size_t i, uint32_t stored) {
    uint8_t* p = bytes_.data() + i * width_;
    switch (width_) {
      case 1:
        *p = static_cast<uint8_t>(stored);
        break;
      case 2: {
        const uint16_t v = static_cast<uint16_t>(stored);
        std::memcpy(p, &v, 2);
        break;
      }
      default:
        std::memcpy(p, &stored, 4);
        break;
    }
  }
  void Widen(uint8_t width) {
    NarrowUints wide;
    wide.size_ = size_;
    wide.width_ = width;
    wide.bytes_.resize(size_ * width);
    for (size_t i = 0; i < size_; ++i) wide.Put(i, Get(i));
    *this = std::move(wide);
  }

  SpillVector<uint8_t> bytes_;  // spilled to disk where a check holds more calls than fit
  size_t size_ = 0;
  uint8_t width_ = 1;
};

}  // namespace ncclrr::analysis
