#pragma once
// CallTable: the call records of a trace file, held column by column and bit-packed, so that a
// call costs ~15-25 bytes in memory instead of its 136 while every field reads back exactly.
//
// Rows go in blocks of kBlockRows. In a sealed block each of the record's 17 64-bit words is
// stored as (value - the block's smallest value) in the fewest bits that hold the block's
// range: a uid, a seq or a count that moves a little from call to call takes a few bits, a
// constant (stream, comm, rank, api) none. The exit time is stored as its distance from the
// enter time. The last, incomplete block is kept as plain records until it fills, or until
// Seal packs it (padded with copies of its last row) once the table is complete.
//
// Reading a row decodes its 17 words (~20 ns); `Word` decodes one. A CallTable is not a vector:
// rows come back by value, so there is no pointer to a row and no writing into one.
#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "ncclrr/base/spill.h"
#include "ncclrr/trace/records.h"

namespace ncclrr {

class CallTable {
 public:
  static constexpr size_t kBlockRows = 128;
  static constexpr int kWords = sizeof(CallRecord) / 8;  // 17

  size_t size() const { return sealed_rows() - padding_ + tail_.size(); }
  bool empty() const { return size() == 0; }
  CallRecord operator[](size_t i) const;
  CallRecord front() const { return (*this)[0]; }
  CallRecord back() const { return (*this)[size() - 1]; }
  // One 64-bit word of row i (word k holds bytes 8k..8k+7 of the record).
  uint64_t Word(size_t i, int k) const;
  int64_t EnterNs(size_t i) const {
    return static_cast<int64_t>(Word(i, offsetof(CallRecord, enter_ns) / 8));
  }

  CallTable() = default;
  CallTable& operator=(const std::vector<CallRecord>& rows) {
    clear();
    Append(rows.data(), rows.size());
    return *this;
  }

  // Which of a record's 64-bit words a reader needs (bit k: bytes 8k..8k+7 of the record), so
  // that only those columns are decoded; the others read as 0 (exit_ns, kept as a delta, brings
  // enter_ns with it). WordsOf(offsetof(CallRecord, a),
  // offsetof(CallRecord, b), ...) names the words holding those fields.
  static constexpr uint32_t kAllWords = (uint32_t{1} << kWords) - 1;
  template <typename... Offsets>
  static constexpr uint32_t WordsOf(Offsets... field_offsets) {
    return ((uint32_t{1} << (field_offsets / 8)) | ...);
  }

  // Calls fn(i, row) for every row in order, decoding a block at a time: several times faster
  // than reading the rows one by one. Rows hold the `words` asked for, the rest 0.
  template <typename Fn>
  void ForEachRow(Fn&& fn, uint32_t words = kAllWords) const {
    CallRecord rows[kBlockRows]{};  // zeroed once: DecodeBlock writes only the words asked for
    for (size_t b = 0; b < blocks_.size(); ++b) {
      DecodeBlock(b, rows, words);
      const size_t n = b + 1 == blocks_.size() ? kBlockRows - padding_ : kBlockRows;
      for (size_t r = 0; r < n; ++r)
        fn(b * kBlockRows + r, static_cast<const CallRecord&>(rows[r]));
    }
    for (size_t r = 0; r < tail_.size(); ++r) fn(sealed_rows() + r, tail_[r]);
  }

  void push_back(const CallRecord& c);
  // Appends n rows; the full blocks among them are packed on up to `threads` threads.
  void Append(const CallRecord* rows, size_t n, int threads = 1);
  // The same from a decoded frame's columns: word k of row i at columns[k * stride + i]
  // (kWords columns of `stride` values, rows [0, n)). Full blocks are packed from the columns
  // with no rows built.
  void AppendColumns(const uint64_t* columns, size_t stride, size_t n, int threads = 1);
  void clear();
  // Packs the open block too and gives back spare capacity: a complete file's table keeps ~20
  // bytes a row rather than 136 for each row of its open block (the open block was most of a
  // short file's table: 2,000 calls of a 16,384-rank ring dump left 80 rows, 11 KB, open).
  // Appending afterwards unpacks that block again.
  void Seal();
  // Room for n rows in total (an estimate is fine: packed sizes are not known in advance).
  void reserve(size_t n);
  // Keeps the rows for which keep(row) is true, in order.
  template <typename Keep>
  void Filter(Keep&& keep) {
    std::vector<CallRecord> kept;
    for (size_t i = 0; i < size(); ++i)
      if (CallRecord c = (*this)[i]; keep(c)) kept.push_back(c);
    clear();
    Append(kept.data(), kept.size());
  }
  // Bytes held (blocks, packed words, the open block), for memory accounting.
  size_t MemoryBytes() const;
  // The table as bytes for another process of the same build (the members of a spread check),
  // appended to `out`: it stays packed on the way. Load replaces this table with what Save wrote
  // at `data` (at most n bytes, `*used` set to what it took); false when the bytes are not a
  // table's.
  void Save(std::string* out) const;
  bool Load(const char* data, size_t n, size_t* used);

  class const_iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = CallRecord;
    using difference_type = std::ptrdiff_t;
    using reference = CallRecord;
    using pointer = void;
    const_iterator() = default;
    const_iterator(const CallTable* t, size_t i) : t_(t), i_(i) {}
    CallRecord operator*() const { return (*t_)[i_]; }
    CallRecord operator[](difference_type d) const { return (*t_)[i_ + d]; }
    const_iterator& operator++() { return ++i_, *this; }
    const_iterator operator++(int) { return {t_, i_++}; }
    const_iterator& operator--() { return --i_, *this; }
    const_iterator& operator+=(difference_type d) { return i_ += d, *this; }
    const_iterator& operator-=(difference_type d) { return i_ -= d, *this; }
    const_iterator operator+(difference_type d) const { return {t_, i_ + d}; }
    const_iterator operator-(difference_type d) const { return {t_, i_ - d}; }
    difference_type operator-(const const_iterator& o) const {
      return static_cast<difference_type>(i_) - static_cast<difference_type>(o.i_);
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) {
      return a.i_ == b.i_;
    }
    friend auto operator<=>(const const_iterator& a, const const_iterator& b) {
      return a.i_ <=> b.i_;
    }

   private:
    const CallTable* t_ = nullptr;
    size_t i_ = 0;
  };
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size()}; }

  // Rows read in about increasing order (one rank's collectives among a file's calls), a block
  // decoded at a time: several times faster than operator[] row by row. The reference stays
  // valid until the next read. Rows of sealed blocks hold the `words` asked for, the rest 0.
  class Reader {
   public:
    explicit Reader(const CallTable& t, uint32_t words = kAllWords)
        : t_(t), words_(words), rows_(new CallRecord[kBlockRows]()) {}  // zeroed: see DecodeBlock
    const CallRecord& operator[](size_t i) {
      if (i >= t_.sealed_rows()) return t_.tail_[i - t_.sealed_rows()];
      if (i / kBlockRows != block_) {
        block_ = i / kBlockRows;
        t_.DecodeBlock(block_, rows_.get(), words_);
      }
      return rows_[i % kBlockRows];
    }

   private:
    const CallTable& t_;
    uint32_t words_;
    size_t block_ = SIZE_MAX;
    std::unique_ptr<CallRecord[]> rows_;
  };

 private:
  struct Block {
    uint64_t offset = 0;                 // of its words in packed_
    std::array<uint64_t, kWords> base;   // per word: the block's smallest value
    std::array<uint8_t, kWords> width;   // per word: bits per row
    std::array<uint16_t, kWords> start;  // per word: byte offset of its column in the block
  };
  size_t sealed_rows() const { return blocks_.size() * kBlockRows; }
  // Block b's rows into out[0, kBlockRows): only the `words` asked for are written, so a caller
  // that asks for a few zeroes its rows once and the others stay 0 block after block.
  void DecodeBlock(size_t b, CallRecord* out, uint32_t words = kAllWords) const;
  struct RowSource;
  struct ColumnSource;
  template <typename Source>
  static Block Measure(const Source& src);
  static size_t PackedBytes(const Block& b);
  template <typename Source>
  static void Pack(const Source& src, const Block& b, uint8_t* out);
  template <typename Source>
  void AppendBlocks(const Source& src, size_t nblocks, int threads);
  void PackTail();  // the open block, full, packed
  void Unseal();    // the last block back into tail_ when Seal padded it

  // Spilled to disk where a check holds more calls than fit (ncclrr/base/spill.h).
  SpillVector<Block> blocks_;
  SpillVector<uint8_t> packed_;   // every block's columns; 8 bytes of slack at the end
  std::vector<CallRecord> tail_;  // the open block, fewer than kBlockRows rows
  size_t padding_ = 0;            // rows of the last block that Seal added (then tail_ is empty)
};

}  // namespace ncclrr
