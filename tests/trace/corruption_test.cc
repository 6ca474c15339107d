// Damaged input: every truncation point, random bit flips, foreign and empty files, newer
// versions, directories without traces. The reader must never crash, must keep the intact
// prefix, and must say what happened.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <random>

#include "ncclrr/testing/trace_fixtures.h"
#include "ncclrr/trace/trace_reader.h"
#include "ncclrr/trace/trace_writer.h"

namespace ncclrr {
namespace {

using testing::MakeCall;
using testing::ScratchDir;

std::vector<char> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
void WriteAll(const std::string& path, const std::vector<char>& bytes, size_t n) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(n));
}

// A small file with several frames: each Flush() ends a frame.
std::string MakeSmallTrace(const std::string& dir, bool compress) {
  WriterOptions o;
  o.dir = dir;
  o.compress = compress;
  o.file_name = "small.ncclrr";
  auto w = TraceWriter::Create(o);
  EXPECT_TRUE(w.ok());
  for (int f = 0; f < 4; ++f) {
    for (uint64_t i = 0; i < 8; ++i) (*w)->AppendCall(MakeCall(f * 8 + i));
    (*w)->Flush();
  }
  EXPECT_TRUE((*w)->Close().ok());
  return (*w)->path();
}

TEST(Corruption, TruncatedAtEveryOffsetKeepsIntactPrefix) {
  for (bool compress : {false, true}) {
    ScratchDir dir("trunc");
    const std::string path = MakeSmallTrace(dir.path(), compress);
    const auto bytes = ReadAll(path);
    auto full = ReadTraceFile(path);
    ASSERT_TRUE(full.ok());
    ASSERT_EQ(full->calls.size(), 32u);
    const std::string cut = dir.path() + "/cut.ncclrr";
    size_t header_end = 0;
    uint64_t last_calls = 0;
    for (size_t n = 0; n < bytes.size(); ++n) {
      WriteAll(cut, bytes, n);
      auto t = ReadTraceFile(cut);
      if (!t.ok()) {
        // Only a cut inside the file header may fail, and it must say so.
        EXPECT_EQ(header_end, 0u) << "offset " << n << ": " << t.status().message();
        EXPECT_FALSE(t.status().message().empty());
        continue;
      }
      if (header_end == 0) header_end = n;
      EXPECT_FALSE(t->warnings.empty()) << "offset " << n << " read without a warning";
      EXPECT_LE(t->calls.size(), 32u);
      EXPECT_GE(t->calls.size(), last_calls) << "a longer prefix kept fewer calls at " << n;
      last_calls = t->calls.size();
      for (size_t i = 0; i < t->calls.size(); ++i) EXPECT_EQ(t->calls[i].seq, i);
    }
    EXPECT_GT(header_end, 0u);
    EXPECT_EQ(last_calls, 32u);  // the cut just before the footer frame keeps every call
  }
}

// Reading a file's frames on several threads finds exactly what reading them one by one does.
void ExpectSameOnThreads(const std::string& path, const std::string& what) {
  auto one = ReadTraceFile(path, 1);
  auto three = ReadTraceFile(path, 3);
  ASSERT_EQ(one.ok(), three.ok()) << what;
  if (!one.ok()) {
    EXPECT_EQ(one.status().message(), three.status().message()) << what;
    return;
  }
  EXPECT_EQ(one->warnings, three->warnings) << what;
  EXPECT_EQ(one->frames, three->frames) << what;
  EXPECT_EQ(one->bad_frames, three->bad_frames) << what;
  EXPECT_EQ(one->torn, three->torn) << what;
  EXPECT_EQ(one->footer.has_value(), three->footer.has_value()) << what;
  EXPECT_EQ(one->comms.size(), three->comms.size()) << what;
  ASSERT_EQ(one->calls.size(), three->calls.size()) << what;
  for (size_t i = 0; i < one->calls.size(); ++i) {
    const CallRecord a = one->calls[i], b = three->calls[i];
    EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0) << what << ", call " << i;
  }
}

TEST(Corruption, FramesOnThreadsReadAsOneByOneAtEveryCutAndFlip) {
  for (bool compress : {false, true}) {
    ScratchDir dir("threads");
    const std::string path = MakeSmallTrace(dir.path(), compress);
    const auto bytes = ReadAll(path);
    const std::string bad = dir.path() + "/bad.ncclrr";
    for (size_t n = 0; n < bytes.size(); n += 7) {
      WriteAll(bad, bytes, n);
      ExpectSameOnThreads(bad, "cut at " + std::to_string(n));
    }
    std::mt19937_64 rng(99);
    for (int trial = 0; trial < 200; ++trial) {
      auto flipped = bytes;
      const size_t pos = rng() % flipped.size();
      flipped[pos] = static_cast<char>(flipped[pos] ^ (1 << (rng() % 8)));
      WriteAll(bad, flipped, flipped.size());
      ExpectSameOnThreads(bad, "bit flip at " + std::to_string(pos));
    }
  }
}

TEST(Corruption, TornTailWarningNamesOffsetAndKeptFrames) {
  ScratchDir dir("torn");
  const std::string path = MakeSmallTrace(dir.path(), true);
  auto bytes = ReadAll(path);
  WriteAll(path, bytes, bytes.size() - 3);
  auto t = ReadTraceFile(path);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->torn);
  ASSERT_FALSE(t->warnings.empty());
  EXPECT_NE(t->warnings[0].find("torn tail at byte offset"), std::string::npos) << t->warnings[0];
  EXPECT_NE(t->warnings[0].find("complete frames"), std::string::npos);
}

TEST(Corruption, RandomBitFlipsAreDetected) {
  ScratchDir dir("flip");
  const std::string path = MakeSmallTrace(dir.path(), true);
  const auto clean = ReadAll(path);
  std::mt19937_64 rng(1234);
  const std::string bad = dir.path() + "/bad.ncclrr";
  int detected = 0;
  const int kTrials = 300;
  for (int trial = 0; trial < kTrials; ++trial) {
    auto bytes = clean;
    const size_t pos = rng() % bytes.size();
    bytes[pos] = static_cast<char>(bytes[pos] ^ (1 << (rng() % 8)));
    WriteAll(bad, bytes, bytes.size());
    auto t = ReadTraceFile(bad);
    if (!t.ok() || !t->warnings.empty()) ++detected;
  }
  EXPECT_EQ(detected, kTrials);  // CRC-32C catches every single-bit error
}

TEST(Corruption, CorruptMiddleFrameIsSkippedAndLaterFramesKept) {
  ScratchDir dir("mid");
  const std::string path = MakeSmallTrace(dir.path(), false);
  auto bytes = ReadAll(path);
  auto full = ReadTraceFile(path);
  ASSERT_TRUE(full.ok());
  // Damage a byte in the middle of the file (inside some frame).
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x40);
  WriteAll(path, bytes, bytes.size());
  auto t = ReadTraceFile(path);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->bad_frames, 1u);
  EXPECT_LT(t->calls.size(), 32u);
  EXPECT_TRUE(t->footer.has_value());  // the frames after the damage were read
  ASSERT_FALSE(t->warnings.empty());
  EXPECT_NE(t->warnings[0].find("corrupt frame"), std::string::npos);
}

TEST(Corruption, ForeignEmptyAndNewerFilesAreRejectedClearly) {
  ScratchDir dir("foreign");
  const std::string foreign = dir.path() + "/x.ncclrr";
  WriteAll(foreign, std::vector<char>{'{', '"', 'a', '"', '}'}, 5);
  auto t = ReadTraceFile(foreign);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("not an ncclrr trace"), std::string::npos);

  const std::string empty = dir.path() + "/e.ncclrr";
  WriteAll(empty, {}, 0);
  t = ReadTraceFile(empty);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("is empty"), std::string::npos);

  const std::string good = MakeSmallTrace(dir.path(), true);
  auto bytes = ReadAll(good);
  bytes[8] = 9;  // format major 9
  const std::string newer = dir.path() + "/newer.ncclrr";
  WriteAll(newer, bytes, bytes.size());
  t = ReadTraceFile(newer);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("newer than this ncclrr"), std::string::npos);
}

TEST(Corruption, DirectoryWithoutTracesIsNotFound) {
  ScratchDir dir("none");
  auto d = LoadTraceDir(dir.path());
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("no trace files"), std::string::npos);
  auto missing = LoadTraceDir(dir.path() + "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("does not exist"), std::string::npos);
}

TEST(Corruption, DirectoryKeepsReadableFilesAndWarnsAboutOthers) {
  ScratchDir dir("mixed");
  MakeSmallTrace(dir.path(), true);
  WriteAll(dir.path() + "/junk.ncclrr", std::vector<char>(100, 'x'), 100);
  auto d = LoadTraceDir(dir.path());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->files.size(), 1u);
  ASSERT_EQ(d->warnings.size(), 1u);
  EXPECT_NE(d->warnings[0].find("junk.ncclrr"), std::string::npos);
}

}  // namespace
}  // namespace ncclrr
