// CallTable packs call records bit by bit; these check that every field reads back exactly,
// whatever the values (constant, slowly moving, random, extreme, negative), across blocks and
// the open block, read row by row or a block at a time (CallTable::Reader), and that packing on
// several threads writes the same bytes as one.
#include "ncclrr/trace/call_table.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace ncclrr {
namespace {

CallRecord TrainingCall(uint64_t i) {
  CallRecord c{};
  c.uid = 1000 + i;
  c.comm_id = 0xabcdef0123456789ull;
  c.seq = i;
  c.type_seq = i;
  c.sendbuff = 0x7f0000000000ull + (i % 4) * (64ull << 20);
  c.recvbuff = c.sendbuff;
  c.count = (i % 4 + 1) * 36864;
  c.stream = 0x55550000;
  c.enter_ns = 1'000'000'000 + static_cast<int64_t>(i) * 7919;
  c.exit_ns = c.enter_ns + 1200 + static_cast<int64_t>(i % 7);
  c.scalar = 0.5;
  c.tid = 4242;
  c.callsite = static_cast<uint32_t>(i % 4);
  c.rank = 3;
  c.api = static_cast<uint16_t>(Api::kAllReduce);
  c.dtype = static_cast<uint8_t>(Dtype::kFloat32);
  return c;
}

CallRecord RandomCall(std::mt19937_64& rng) {
  CallRecord c;
  uint64_t words[sizeof c / 8];
  for (uint64_t& w : words) w = rng();
  std::memcpy(&c, words, sizeof c);
  return c;
}

void ExpectSame(const CallTable& t, const std::vector<CallRecord>& want) {
  ASSERT_EQ(t.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const CallRecord got = t[i];
    ASSERT_EQ(std::memcmp(&got, &want[i], sizeof got), 0) << "row " << i;
    for (int k = 0; k < CallTable::kWords; ++k) {
      uint64_t w;
      std::memcpy(&w, reinterpret_cast<const char*>(&want[i]) + 8 * k, 8);
      ASSERT_EQ(t.Word(i, k), w) << "row " << i << " word " << k;
    }
  }
  // The block reader: in order (the open block's rows included), then backwards by threes.
  CallTable::Reader reader(t);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(std::memcmp(&reader[i], &want[i], sizeof(CallRecord)), 0) << "reader, row " << i;
  for (size_t i = want.size(); i-- > 0;) {
    if (i % 3 != 0) continue;
    ASSERT_EQ(std::memcmp(&reader[i], &want[i], sizeof(CallRecord)), 0) << "reader, row " << i;
  }
}

TEST(CallTable, TrainingLoopCallsReadBackExactlyAndPackSmall) {
  std::vector<CallRecord> rows;
  for (uint64_t i = 0; i < 10'000; ++i) rows.push_back(TrainingCall(i));
  CallTable t;
  t.Append(rows.data(), rows.size());
  ExpectSame(t, rows);
  // The whole point: a training loop's call costs a fraction of its 136 bytes.
  EXPECT_LT(t.MemoryBytes(), rows.size() * 24) << t.MemoryBytes() / rows.size() << " B per call";
}

TEST(CallTable, RandomAndExtremeValuesReadBackExactly) {
  std::mt19937_64 rng(7);
  std::vector<CallRecord> rows;
  for (int i = 0; i < 700; ++i) rows.push_back(RandomCall(rng));
  CallRecord lo{}, hi{};
  std::memset(&hi, 0xff, sizeof hi);
  lo.enter_ns = std::numeric_limits<int64_t>::min();
  lo.exit_ns = std::numeric_limits<int64_t>::max();
  for (int i = 0; i < 300; ++i) rows.push_back(i % 3 == 0 ? lo : i % 3 == 1 ? hi : TrainingCall(i));
  CallTable t;
  for (const CallRecord& c : rows) t.push_back(c);
  ExpectSame(t, rows);
}

TEST(CallTable, EveryBitWidthReadsBackExactly) {
  std::mt19937_64 rng(3);
  for (int width = 1; width <= 64; ++width) {
    std::vector<CallRecord> rows;
    for (int i = 0; i < 300; ++i) {
      uint64_t words[sizeof(CallRecord) / 8];
      for (uint64_t& w : words) w = width == 64 ? rng() : rng() & ((uint64_t{1} << width) - 1);
      CallRecord c;
      std::memcpy(&c, words, sizeof c);
      rows.push_back(c);
    }
    CallTable t;
    t.Append(rows.data(), rows.size(), 2);
    ExpectSame(t, rows);
  }
}

TEST(CallTable, AppendInPiecesOnThreadsEqualsOneByOne) {
  std::mt19937_64 rng(11);
  std::vector<CallRecord> rows;
  for (uint64_t i = 0; i < 5000; ++i)
    rows.push_back(i % 5 == 0 ? RandomCall(rng) : TrainingCall(i));
  CallTable pieces;
  size_t at = 0;
  for (size_t n : {1u, 127u, 128u, 129u, 1000u, 3u, 2000u}) {
    pieces.Append(rows.data() + at, n, 4);
    at += n;
  }
  pieces.Append(rows.data() + at, rows.size() - at, 3);
  ExpectSame(pieces, rows);
  CallTable single;
  for (const CallRecord& c : rows) single.push_back(c);
  ExpectSame(single, rows);
}

// Readers that need a few fields decode only their words: those read back exactly, the others
// as 0 (exit_ns, stored as a delta from enter_ns, brings enter_ns with it).
TEST(CallTable, OnlyTheWordsAskedForAreDecoded) {
  std::mt19937_64 rng(11);
  std::vector<CallRecord> rows;
  for (size_t i = 0; i < 3 * CallTable::kBlockRows + 5; ++i) rows.push_back(RandomCall(rng));
  CallTable t;
  t.Append(rows.data(), rows.size());
  for (const uint32_t words :
       {CallTable::WordsOf(offsetof(CallRecord, exit_ns)),
        CallTable::WordsOf(offsetof(CallRecord, enter_ns)),
        CallTable::WordsOf(offsetof(CallRecord, count), offsetof(CallRecord, api),
                           offsetof(CallRecord, root_peer))}) {
    uint32_t decoded = words;
    if (words & CallTable::WordsOf(offsetof(CallRecord, exit_ns)))
      decoded |= CallTable::WordsOf(offsetof(CallRecord, enter_ns));
    auto expect = [&](size_t i, const CallRecord& got) {
      uint64_t g[CallTable::kWords], w[CallTable::kWords];
      std::memcpy(g, &got, sizeof g);
      std::memcpy(w, &rows[i], sizeof w);
      const bool open_block = i >= rows.size() - rows.size() % CallTable::kBlockRows;
      for (int k = 0; k < CallTable::kWords; ++k)
        if (open_block || (decoded & (1u << k)))
          ASSERT_EQ(g[k], w[k]) << "row " << i << " word " << k;
        else
          ASSERT_EQ(g[k], 0u) << "row " << i << " word " << k;
    };
    size_t seen = 0;
    t.ForEachRow([&](size_t i, const CallRecord& c) { expect(i, c), ++seen; }, words);
    EXPECT_EQ(seen, rows.size());
    CallTable::Reader reader(t, words);
    for (size_t i = 0; i < rows.size(); ++i) expect(i, reader[i]);
  }
}

TEST(CallTable, IteratesFiltersAndClears) {
  std::vector<CallRecord> rows;
  for (uint64_t i = 0; i < 1000; ++i) rows.push_back(TrainingCall(i));
  CallTable t;
  t = rows;
  uint64_t seqs = 0;
  for (const CallRecord& c : t) seqs += c.seq;
  EXPECT_EQ(seqs, 999u * 1000 / 2);
  EXPECT_EQ(t.front().uid, 1000u);
  EXPECT_EQ(t.back().uid, 1999u);
  EXPECT_EQ(t.end() - t.begin(), 1000);
  t.Filter([](const CallRecord& c) { return c.seq % 3 == 0; });
  std::vector<CallRecord> kept;
  for (const CallRecord& c : rows)
    if (c.seq % 3 == 0) kept.push_back(c);
  ExpectSame(t, kept);
  t.clear();
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(t.begin(), t.end());
}

// What one member of a spread check sends another: the table stays packed and reads back the
// same; bytes that are not a table's are refused, never read past.
TEST(CallTable, SavedBytesLoadAsTheSameTable) {
  std::mt19937_64 rng(7);
  std::vector<CallRecord> rows;
  for (uint64_t i = 0; i < 3 * 128 + 37; ++i)
    rows.push_back(i % 5 == 0 ? RandomCall(rng) : TrainingCall(i));
  CallTable t;
  t = rows;
  std::string bytes = "prefix";
  t.Save(&bytes);
  CallTable back;
  size_t used = 0;
  ASSERT_TRUE(back.Load(bytes.data() + 6, bytes.size() - 6, &used));
  EXPECT_EQ(used, bytes.size() - 6);
  ExpectSame(back, rows);
  // Cut short anywhere, or a block's column moved: refused, and the table left empty.
  for (size_t cut : {size_t{0}, size_t{10}, used / 2, used - 1}) {
    CallTable bad;
    EXPECT_FALSE(bad.Load(bytes.data() + 6, cut, &used)) << cut;
    EXPECT_EQ(bad.size(), 0u);
  }
  std::string moved = bytes;
  moved[6 + 32 + 8 + 17 * 8 + 17 + 1 + 2] ^= 0x40;  // the first block's second column start
  CallTable bad;
  EXPECT_FALSE(bad.Load(moved.data() + 6, moved.size() - 6, &used));
  EXPECT_EQ(bad.size(), 0u);
}

// A decoded frame's calls are packed straight from its columns: frames of any length, the open
// block carried from one to the next, read back as the rows they were.
TEST(CallTable, AppendingColumnsEqualsAppendingRows) {
  std::mt19937_64 rng(5);
  std::vector<CallRecord> rows;
  CallTable t;
  for (size_t frame : {size_t{3}, size_t{128}, size_t{300}, size_t{1}, size_t{700}, size_t{125}}) {
    std::vector<CallRecord> part;
    for (size_t i = 0; i < frame; ++i)
      part.push_back(rows.size() % 11 == 0 ? RandomCall(rng) : TrainingCall(rows.size() + i));
    std::vector<uint64_t> columns(frame * CallTable::kWords);
    for (size_t i = 0; i < frame; ++i)
      for (int k = 0; k < CallTable::kWords; ++k)
        std::memcpy(&columns[k * frame + i], reinterpret_cast<const char*>(&part[i]) + 8 * k, 8);
    t.AppendColumns(columns.data(), frame, frame, 2);
    rows.insert(rows.end(), part.begin(), part.end());
    ExpectSame(t, rows);
  }
  CallTable by_rows;
  by_rows.Append(rows.data(), rows.size());
  std::string a, b;
  t.Save(&a);
  by_rows.Save(&b);
  ASSERT_EQ(a.size(), b.size());
  size_t first = 0;
  while (first < a.size() && a[first] == b[first]) ++first;
  EXPECT_EQ(first, a.size()) << "saved bytes differ from byte " << first;  // the same blocks
}

// A complete file's table packs its open block too: the rows read back the same every way, the
// table holds far less than the open block's plain records did, and appending afterwards goes
// on as if it had never been sealed. Its saved bytes load back sealed.
TEST(CallTable, SealPacksTheOpenBlockAndAppendingUnpacksIt) {
  std::mt19937_64 rng(11);
  std::vector<CallRecord> rows;
  for (uint64_t i = 0; i < 2 * 128 + 80; ++i)
    rows.push_back(i % 7 == 0 ? RandomCall(rng) : TrainingCall(i));
  CallTable t;
  t.Append(rows.data(), rows.size());
  t.Seal();
  ExpectSame(t, rows);
  // A training loop's calls: the sealed table is a fraction of the open block's records alone.
  std::vector<CallRecord> loop;
  for (uint64_t i = 0; i < 2 * 128 + 80; ++i) loop.push_back(TrainingCall(i));
  CallTable small;
  small.Append(loop.data(), loop.size());
  const size_t open = small.MemoryBytes();
  small.Seal();
  ExpectSame(small, loop);
  EXPECT_LT(small.MemoryBytes() + 80 * sizeof(CallRecord) / 2, open)
      << small.MemoryBytes() << " bytes sealed, " << open << " open";
  size_t seen = 0;
  t.ForEachRow([&](size_t i, const CallRecord& c) {
    ASSERT_EQ(i, seen++);
    ASSERT_EQ(std::memcmp(&c, &rows[i], sizeof c), 0) << "row " << i;
  });
  EXPECT_EQ(seen, rows.size());

  std::string bytes;
  t.Save(&bytes);
  CallTable back;
  size_t used = 0;
  ASSERT_TRUE(back.Load(bytes.data(), bytes.size(), &used));
  ExpectSame(back, rows);

  for (uint64_t i = 0; i < 100; ++i) rows.push_back(TrainingCall(1000 + i));
  t.Append(rows.data() + rows.size() - 100, 60);
  for (size_t i = rows.size() - 40; i < rows.size(); ++i) t.push_back(rows[i]);
  ExpectSame(t, rows);
  t.Seal();
  t.Seal();  // twice changes nothing
  ExpectSame(t, rows);
  CallTable empty;
  empty.Seal();
  EXPECT_TRUE(empty.empty());
}

}  // namespace
}  // namespace ncclrr
