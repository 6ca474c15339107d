#include "ncclrr/trace/call_table.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <type_traits>

#include "ncclrr/base/parallel_for.h"

namespace ncclrr {
namespace {

constexpr int kEnterWord = offsetof(CallRecord, enter_ns) / 8;
constexpr int kExitWord = offsetof(CallRecord, exit_ns) / 8;
static_assert(sizeof(CallRecord) % 8 == 0 && kExitWord == kEnterWord + 1);
// Widths above this take a whole word: an unaligned 8-byte load holds at most 57 bits past any
// bit offset, and a 64-bit column is byte aligned.
constexpr int kMaxPackedWidth = 57;

using Words = std::array<uint64_t, CallTable::kWords>;

CallRecord FromWords(Words w) {
  w[kExitWord] += w[kEnterWord];
  CallRecord c;
  std::memcpy(&c, w.data(), sizeof c);
  return c;
}

uint64_t Mask(int width) { return width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1; }

// Signed bounds of a block's column (a[r] - b[r] with b, for the exit time). 64-bit compares
// vectorize only with AVX2 or AVX-512, so those builds are chosen at run time where the CPU
// has them; this was the largest part of packing a frame's columns.
template <bool kDiff>
inline void ColumnBounds(const uint64_t* a, const uint64_t* b, int64_t* lo_out, int64_t* hi_out) {
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (size_t r = 0; r < CallTable::kBlockRows; ++r) {
    const auto w = static_cast<int64_t>(kDiff ? a[r] - b[r] : a[r]);
    lo = w < lo ? w : lo;
    hi = w > hi ? w : hi;
  }
  *lo_out = lo;
  *hi_out = hi;
}
using BoundsFn = void (*)(const uint64_t*, const uint64_t*, int64_t*, int64_t*);
__attribute__((target("avx512f,avx512vl"))) void BoundsAvx512(const uint64_t* a, const uint64_t* b,
                                                              int64_t* lo, int64_t* hi) {
  b ? ColumnBounds<true>(a, b, lo, hi) : ColumnBounds<false>(a, b, lo, hi);
}
__attribute__((target("avx2"))) void BoundsAvx2(const uint64_t* a, const uint64_t* b, int64_t* lo,
                                                int64_t* hi) {
  b ? ColumnBounds<true>(a, b, lo, hi) : ColumnBounds<false>(a, b, lo, hi);
}
void BoundsPlain(const uint64_t* a, const uint64_t* b, int64_t* lo, int64_t* hi) {
  b ? ColumnBounds<true>(a, b, lo, hi) : ColumnBounds<false>(a, b, lo, hi);
}
BoundsFn PickBounds() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")) return BoundsAvx512;
  if (__builtin_cpu_supports("avx2")) return BoundsAvx2;
  return BoundsPlain;
}
const BoundsFn kColumnBounds = PickBounds();

}  // namespace

// Where Measure and Pack read a block's words: plain records (row r's word k at byte 8k of
// rows[r]), or a decoded frame's columns (word k of row r at cols[k * stride + r]), which need
// no rows built first.
struct CallTable::RowSource {
  const CallRecord* rows;
  uint64_t Word(size_t r, int k) const {
    uint64_t v;
    std::memcpy(&v, reinterpret_cast<const uint8_t*>(rows + r) + 8 * k, 8);
    return v;
  }
  RowSource At(size_t r) const { return {rows + r}; }
};

struct CallTable::ColumnSource {
  const uint64_t* cols;
  size_t stride;
  uint64_t Word(size_t r, int k) const { return cols[k * stride + r]; }
  ColumnSource At(size_t r) const { return {cols + r, stride}; }
};

template <typename Source>
CallTable::Block CallTable::Measure(const Source& src) {
  Block b;
  // Padding too: a table's saved bytes are the same every time.
  std::memset(static_cast<void*>(&b), 0, sizeof b);
  uint16_t start = 0;
  for (int k = 0; k < kWords; ++k) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;  // signed: small negative deltas stay small
    // Two loops rather than a test per row: the exit time is stored as a delta.
    if constexpr (std::is_same_v<Source, ColumnSource>) {
      const uint64_t* col = src.cols + k * src.stride;
      kColumnBounds(col, k == kExitWord ? src.cols + kEnterWord * src.stride : nullptr, &lo, &hi);
    } else if (k == kExitWord) {
      for (size_t r = 0; r < kBlockRows; ++r) {
        const auto w = static_cast<int64_t>(src.Word(r, k) - src.Word(r, kEnterWord));
        lo = std::min(lo, w);
        hi = std::max(hi, w);
      }
    } else {
      for (size_t r = 0; r < kBlockRows; ++r) {
        const auto w = static_cast<int64_t>(src.Word(r, k));
        lo = std::min(lo, w);
        hi = std::max(hi, w);
      }
    }
    b.base[k] = static_cast<uint64_t>(lo);
    int width = std::bit_width(static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo));
    if (width > kMaxPackedWidth) width = 64;
    b.width[k] = static_cast<uint8_t>(width);
    b.start[k] = start;
    start = static_cast<uint16_t>(start + kBlockRows * width / 8);
  }
  return b;
}

size_t CallTable::PackedBytes(const Block& b) {
  return b.start[kWords - 1] + kBlockRows * b.width[kWords - 1] / 8;
}

template <typename Source>
void CallTable::Pack(const Source& src, const Block& b, uint8_t* out) {
  for (int k = 0; k < kWords; ++k) {
    const int width = b.width[k];
    if (width == 0) continue;
    // A little-endian bit stream: row r's bits at [r * width, (r + 1) * width). 128 rows of any
    // width fill whole 64-bit words, so the column ends on a word and writes nothing past it.
    uint8_t* p = out + b.start[k];
    const uint64_t base = b.base[k];
    auto value = [&](size_t r) {
      return k == kExitWord ? src.Word(r, k) - src.Word(r, kEnterWord) - base
                            : src.Word(r, k) - base;
    };
    if (width == 64) {
      for (size_t r = 0; r < kBlockRows; ++r) {
        const uint64_t v = value(r);
        std::memcpy(p + 8 * r, &v, 8);
      }
      continue;
    }
    uint64_t acc = 0;
    int bits = 0;
    for (size_t r = 0; r < kBlockRows; ++r) {
      const uint64_t v = value(r);
      acc |= v << bits;
      bits += width;
      if (bits >= 64) {
        std::memcpy(p, &acc, 8), p += 8;
        bits -= 64;
        acc = bits > 0 ? v >> (width - bits) : 0;
      }
    }
  }
}

uint64_t CallTable::Word(size_t i, int k) const {
  if (i >= sealed_rows()) {
    uint64_t w[kWords];
    std::memcpy(w, &tail_[i - sealed_rows()], sizeof w);
    return w[k];
  }
  const Block& b = blocks_[i / kBlockRows];
  const size_t r = i % kBlockRows;
  auto raw = [&](int word) {
    const int width = b.width[word];
    if (width == 0) return b.base[word];
    const size_t bit = r * width;
    uint64_t cur;
    std::memcpy(&cur, packed_.data() + b.offset + b.start[word] + bit / 8, 8);
    return b.base[word] + ((cur >> (bit % 8)) & Mask(width));
  };
  return k == kExitWord ? raw(kExitWord) + raw(kEnterWord) : raw(k);
}

CallRecord CallTable::operator[](size_t i) const {
  if (i >= sealed_rows()) return tail_[i - sealed_rows()];
  const Block& b = blocks_[i / kBlockRows];
  const size_t r = i % kBlockRows;
  const uint8_t* data = packed_.data() + b.offset;
  Words w;
  for (int k = 0; k < kWords; ++k) {
    const int width = b.width[k];
    if (width == 0) {
      w[k] = b.base[k];
      continue;
    }
    const size_t bit = r * width;
    uint64_t cur;
    std::memcpy(&cur, data + b.start[k] + bit / 8, 8);
    w[k] = b.base[k] + ((cur >> (bit % 8)) & Mask(width));
  }
  return FromWords(w);
}

void CallTable::DecodeBlock(size_t bi, CallRecord* out, uint32_t words) const {
  const Block& b = blocks_[bi];
  const uint8_t* data = packed_.data() + b.offset;
  // Straight into the rows: word k of row r is at byte 8k of out[r].
  auto* rows = reinterpret_cast<uint8_t*>(out);
  auto put = [&](size_t r, int k, uint64_t v) {
    std::memcpy(rows + r * sizeof(CallRecord) + 8 * k, &v, 8);
  };
  if (words & (uint32_t{1} << kExitWord)) words |= uint32_t{1} << kEnterWord;  // exit is a delta
  for (int k = 0; k < kWords; ++k) {
    const int width = b.width[k];
    const uint64_t base = b.base[k], mask = Mask(width);
    if (!(words & (uint32_t{1} << k))) continue;  // the caller's rows hold 0 there
    if (width == 0) {
      for (size_t r = 0; r < kBlockRows; ++r) put(r, k, base);
      continue;
    }
    const uint8_t* col = data + b.start[k];
    for (size_t r = 0, bit = 0; r < kBlockRows; ++r, bit += width) {
      uint64_t cur;
      std::memcpy(&cur, col + bit / 8, 8);
      put(r, k, base + ((cur >> (bit % 8)) & mask));
    }
  }
  if (words & (uint32_t{1} << kExitWord))
    for (CallRecord* c = out; c != out + kBlockRows; ++c) c->exit_ns += c->enter_ns;
}

template <typename Source>
void CallTable::AppendBlocks(const Source& src, size_t nblocks, int threads) {
  if (nblocks == 0) return;
  const size_t first = blocks_.size();
  blocks_.resize(first + nblocks);
  ParallelFor(nblocks, threads,
              [&](size_t i) { blocks_[first + i] = Measure(src.At(i * kBlockRows)); });
  size_t end = packed_.empty() ? 0 : packed_.size() - 8;  // the slack is not data
  for (size_t i = first; i < blocks_.size(); ++i) {
    blocks_[i].offset = end;
    end += PackedBytes(blocks_[i]);
  }
  packed_.resize(end + 8);
  ParallelFor(nblocks, threads, [&](size_t i) {
    const Block& b = blocks_[first + i];
    Pack(src.At(i * kBlockRows), b, packed_.data() + b.offset);
  });
}

void CallTable::PackTail() {
  AppendBlocks(RowSource{tail_.data()}, 1, 1);
  tail_.clear();
}

void CallTable::Append(const CallRecord* rows, size_t n, int threads) {
  Unseal();
  if (!tail_.empty()) {
    const size_t take = std::min(n, kBlockRows - tail_.size());
    tail_.insert(tail_.end(), rows, rows + take);
    rows += take, n -= take;
    if (tail_.size() < kBlockRows) return;
    PackTail();
  }
  const size_t full = n / kBlockRows;
  AppendBlocks(RowSource{rows}, full, threads);
  tail_.assign(rows + full * kBlockRows, rows + n);
}

void CallTable::AppendColumns(const uint64_t* columns, size_t stride, size_t n, int threads) {
  Unseal();
  const ColumnSource src{columns, stride};
  auto row = [&](size_t r) {
    uint64_t w[kWords];
    for (int k = 0; k < kWords; ++k) w[k] = src.Word(r, k);
    CallRecord c;
    std::memcpy(&c, w, sizeof c);
    return c;
  };
  size_t i = 0;
  if (!tail_.empty()) {
    while (i < n && tail_.size() < kBlockRows) tail_.push_back(row(i++));
    if (tail_.size() < kBlockRows) return;
    PackTail();
  }
  const size_t full = (n - i) / kBlockRows;
  AppendBlocks(src.At(i), full, threads);
  for (i += full * kBlockRows; i < n; ++i) tail_.push_back(row(i));
}

void CallTable::push_back(const CallRecord& c) {
  Unseal();
  tail_.push_back(c);
  if (tail_.size() == kBlockRows) PackTail();
}

void CallTable::Save(std::string* out) const {
  const uint64_t counts[4] = {blocks_.size(), packed_.size(), tail_.size(), padding_};
  auto put = [&](const void* p, size_t n) { out->append(static_cast<const char*>(p), n); };
  put(counts, sizeof counts);
  put(blocks_.data(), blocks_.size() * sizeof(Block));
  put(packed_.data(), packed_.size());
  put(tail_.data(), tail_.size() * sizeof(CallRecord));
}

bool CallTable::Load(const char* data, size_t n, size_t* used) {
  uint64_t counts[4];
  if (n < sizeof counts) return false;
  std::memcpy(counts, data, sizeof counts);
  const auto [nblocks, npacked, ntail, padding] = counts;
  if (nblocks > n / sizeof(Block) || npacked > n || ntail > n / sizeof(CallRecord) ||
      ntail >= kBlockRows || padding >= kBlockRows || (padding > 0 && (ntail > 0 || nblocks == 0)))
    return false;
  const size_t bytes =
      sizeof counts + nblocks * sizeof(Block) + npacked + ntail * sizeof(CallRecord);
  if (bytes > n) return false;
  clear();
  const char* p = data + sizeof counts;
  blocks_.resize(nblocks);
  std::memcpy(blocks_.data(), p, nblocks * sizeof(Block));
  p += nblocks * sizeof(Block);
  packed_.assign(p, p + npacked);
  p += npacked;
  tail_.resize(ntail);
  std::memcpy(tail_.data(), p, ntail * sizeof(CallRecord));
  padding_ = padding;
  // Every block's columns must lie inside the packed bytes, as Measure lays them out, so that
  // decoding never reads past them (8 bytes of slack at the end).
  for (const Block& b : blocks_) {
    uint16_t start = 0;
    for (int k = 0; k < kWords; ++k) {
      if (b.width[k] > 64 || b.start[k] != start) return clear(), false;
      start = static_cast<uint16_t>(start + kBlockRows * b.width[k] / 8);
    }
    if (npacked < 8 || b.offset > npacked - 8 || PackedBytes(b) > npacked - 8 - b.offset)
      return clear(), false;
  }
  *used = bytes;
  return true;
}

void CallTable::clear() {
  blocks_.clear();
  packed_.clear();
  tail_.clear();
  padding_ = 0;
}

void CallTable::Seal() {
  if (!tail_.empty()) {
    // Copies of the last row widen no column.
    padding_ = kBlockRows - tail_.size();
    tail_.resize(kBlockRows, tail_.back());
    AppendBlocks(RowSource{tail_.data()}, 1, 1);
  }
  std::vector<CallRecord>().swap(tail_);
  blocks_.shrink_to_fit();
  packed_.shrink_to_fit();
}

void CallTable::Unseal() {
  if (padding_ == 0) return;
  CallRecord rows[kBlockRows];
  DecodeBlock(blocks_.size() - 1, rows);
  packed_.resize(blocks_.back().offset + 8);  // the block's columns go; the slack stays
  blocks_.pop_back();
  tail_.assign(rows, rows + kBlockRows - padding_);
  padding_ = 0;
}

void CallTable::reserve(size_t n) {
  // ~24 bytes a row is what a busy training loop's calls pack to (bench-analysis).
  blocks_.reserve(n / kBlockRows + 1);
  packed_.reserve(n * 24 + 8);
}

size_t CallTable::MemoryBytes() const {
  return blocks_.capacity() * sizeof(Block) + packed_.capacity() +
         tail_.capacity() * sizeof(CallRecord);
}

}  // namespace ncclrr
