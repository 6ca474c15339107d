#include "ncclrr/base/spill.h"

#include <sys/vfs.h>
#include <unistd.h>

#include <filesystem>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ncclrr {
namespace {

// The tests' directory is on the disk the build is on (the system's temporary directory may be
// tmpfs, which spilling refuses).
class DiskDir {
 public:
  DiskDir() : path_(std::filesystem::current_path() / ("spill-test-" + std::to_string(getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~DiskDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

TEST(SpillTest, SaysWhyADirectoryThatIsNotThereCannotHoldIt) {
  auto s = SpillScope::Start("/nonexistent/spill-here");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("/nonexistent/spill-here"), std::string::npos)
      << s.status().message();
  EXPECT_NE(s.status().message().find("--spill DIR"), std::string::npos) << s.status().message();
  EXPECT_FALSE(Spilling());
}

TEST(SpillTest, RefusesADirectoryHeldInMemory) {
  struct statfs fs {};
  if (statfs("/dev/shm", &fs) != 0 || fs.f_type != 0x01021994)
    GTEST_SKIP() << "no tmpfs at /dev/shm";
  auto s = SpillScope::Start("/dev/shm");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("tmpfs"), std::string::npos) << s.status().message();
  EXPECT_FALSE(Spilling());
}

TEST(SpillTest, BigArraysLiveOnDiskWhileSpillingAndGiveTheirSpaceBack) {
  DiskDir dir;
  const uint64_t before = GetSpillStats().bytes;
  {
    auto scope = SpillScope::Start(dir.path());
    ASSERT_TRUE(scope.ok()) << scope.status().message();
    ASSERT_TRUE(Spilling());
    SpillVector<uint64_t> big(1 << 20);
    std::iota(big.begin(), big.end(), 7);
    SpillVector<uint64_t> small(100, 5);
    const SpillStats s = GetSpillStats();
    EXPECT_EQ(s.bytes - before, 8u << 20) << "the small array stays in memory";
    EXPECT_GE(s.peak_bytes, 8u << 20);
    EXPECT_FALSE(s.dir.empty());
    // Growing copies into a new spilled array and frees the old one.
    big.resize(3 << 20, 1);
    EXPECT_EQ(big[0], 7u);
    EXPECT_EQ(big[(1 << 20) - 1], 7u + (1 << 20) - 1);
    EXPECT_EQ(big.back(), 1u);
    EXPECT_EQ(GetSpillStats().bytes - before, 24u << 20);
    EXPECT_EQ(std::accumulate(small.begin(), small.end(), uint64_t{0}), 500u);
  }
  EXPECT_EQ(GetSpillStats().bytes, before) << "freed arrays leave the file";
  EXPECT_FALSE(Spilling()) << "spilling ends with the scope";
  SpillVector<uint64_t> after(1 << 20, 2);
  EXPECT_EQ(GetSpillStats().bytes, before) << "not spilled once stopped";
}

TEST(SpillTest, ArraysSpilledBeforeStoppingStayUsable) {
  DiskDir dir;
  SpillVector<uint32_t> kept;
  uint64_t spilled = 0;
  {
    auto scope = SpillScope::Start(dir.path());
    ASSERT_TRUE(scope.ok()) << scope.status().message();
    kept.assign(1 << 18, 3);
    spilled = GetSpillStats().bytes;
    EXPECT_GE(spilled, 1u << 20);
  }
  kept.push_back(4);  // grows into ordinary memory, and the spilled array is freed
  EXPECT_EQ(kept[1 << 17], 3u);
  EXPECT_EQ(kept.back(), 4u);
  EXPECT_EQ(GetSpillStats().bytes, spilled - (1u << 20));
}

// Freed ranges are handed out again: what a long check allocates over its life may be many
// times what it holds at once, and must not use up the file's address range.
TEST(SpillTest, FreedRangesAreHandedOutAgain) {
  DiskDir dir;
  auto scope = SpillScope::Start(dir.path());
  ASSERT_TRUE(scope.ok()) << scope.status().message();
  const uint64_t fallbacks = GetSpillStats().fallbacks;
  std::set<const void*> seen;
  for (int i = 0; i < 64; ++i) {
    SpillVector<uint8_t> v(4 << 20, static_cast<uint8_t>(i));
    EXPECT_EQ(v[12345], static_cast<uint8_t>(i));
    seen.insert(v.data());
  }
  EXPECT_LE(seen.size(), 2u) << "the same range, freed, taken again";
  // Ranges of different sizes, freed out of order, coalesce and are reused.
  {
    std::vector<SpillVector<uint8_t>> some;
    for (int i = 1; i <= 8; ++i) some.emplace_back(static_cast<size_t>(i) << 16, 1);
    for (size_t i = 0; i < some.size(); i += 2) SpillVector<uint8_t>().swap(some[i]);
    SpillVector<uint8_t> fits(3 << 16, 2);  // in a freed range of 3 or more
    EXPECT_EQ(fits[0], 2);
  }
  EXPECT_EQ(GetSpillStats().fallbacks, fallbacks);
}

TEST(SpillTest, OverlappingScopesSpillUntilTheLastEnds) {
  DiskDir dir;
  auto outer = SpillScope::Start(dir.path());
  ASSERT_TRUE(outer.ok());
  {
    auto inner = SpillScope::Start(dir.path());
    ASSERT_TRUE(inner.ok());
  }
  EXPECT_TRUE(Spilling()) << "the outer scope still holds";
  outer = SpillScope::Start("/nonexistent/elsewhere");
  EXPECT_FALSE(outer.ok());
}

}  // namespace
}  // namespace ncclrr
