#include "ncclrr/base/spill.h"

#include <sys/vfs.h>
#include <unistd.h>

#include <filesystem>
#include <numeric>
#include <string>

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

// These tests share one process when the binary runs them all: the ones that enable spilling
// come last, and each stops it again.

TEST(SpillTest, SaysWhyADirectoryThatIsNotThereCannotHoldIt) {
  const Status s = EnableSpill("/nonexistent/spill-here");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/nonexistent/spill-here"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("--spill DIR"), std::string::npos) << s.message();
  EXPECT_FALSE(Spilling());
}

TEST(SpillTest, RefusesADirectoryHeldInMemory) {
  struct statfs fs {};
  if (statfs("/dev/shm", &fs) != 0 || fs.f_type != 0x01021994)
    GTEST_SKIP() << "no tmpfs at /dev/shm";
  const Status s = EnableSpill("/dev/shm");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tmpfs"), std::string::npos) << s.message();
  EXPECT_FALSE(Spilling());
}

TEST(SpillTest, BigArraysLiveOnDiskWhileSpillingAndGiveTheirSpaceBack) {
  DiskDir dir;
  const uint64_t before = GetSpillStats().bytes;
  ASSERT_TRUE(EnableSpill(dir.path()).ok());
  ASSERT_TRUE(Spilling());
  {
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
  StopSpilling();
  EXPECT_FALSE(Spilling());
  SpillVector<uint64_t> after(1 << 20, 2);
  EXPECT_EQ(GetSpillStats().bytes, before) << "not spilled once stopped";
}

TEST(SpillTest, ArraysSpilledBeforeStoppingStayUsable) {
  DiskDir dir;
  ASSERT_TRUE(EnableSpill(dir.path()).ok());
  SpillVector<uint32_t> kept(1 << 18, 3);
  const uint64_t spilled = GetSpillStats().bytes;
  EXPECT_GE(spilled, 1u << 20);
  StopSpilling();
  kept.push_back(4);  // grows into ordinary memory, and the spilled array is freed
  EXPECT_EQ(kept[1 << 17], 3u);
  EXPECT_EQ(kept.back(), 4u);
  EXPECT_EQ(GetSpillStats().bytes, spilled - (1u << 20));
}

}  // namespace
}  // namespace ncclrr
