#include "ncclrr/base/spill.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

namespace ncclrr {
namespace {

// One mapping of one sparse file, handed out from the front and never reused: a check's
// allocations total a few times its peak, far less than the address space reserved. Freed ranges
// are punched out of the file, so that disk and page cache hold only what is alive.
struct Arena {
  int fd = -1;
  uint8_t* base = nullptr;
  uint64_t size = 0;
  std::string dir;
  std::atomic<uint64_t> next{0};
  std::atomic<uint64_t> live{0}, peak{0}, fallbacks{0}, allocations{0};
};

constexpr uint64_t kPage = 4096;
// The address space a file maps: as much as its disk has free, at most this (a sparse file's
// size costs nothing; ext4 allows 16 TiB).
constexpr uint64_t kMaxMapped = uint64_t{8} << 40;
constexpr uint64_t kMinFree = uint64_t{1} << 30;

// Every arena made (one per directory asked for), and the one new allocations go to.
constexpr int kMaxArenas = 8;
std::atomic<Arena*> g_arenas[kMaxArenas];
std::atomic<int> g_arena_count{0};
std::atomic<Arena*> g_arena{nullptr};
std::atomic<bool> g_spilling{false};
std::atomic<uint64_t> g_min_bytes{kSpillMinBytes};
std::mutex g_enable;

uint64_t RoundUp(uint64_t n) { return (n + kPage - 1) / kPage * kPage; }

std::string Why(const std::string& dir, const std::string& what) {
  return "cannot keep the check's calls on disk in " + dir + ": " + what +
         "; give a writable directory on a disk with room with --spill DIR";
}

StatusOr<int> OpenUnnamed(const std::string& dir) {
  int fd = open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  // Filesystems without O_TMPFILE: a named file, unlinked at once.
  std::string path = dir + "/.ncclrr-spill-XXXXXX";
  fd = mkostemp(path.data(), O_CLOEXEC);
  if (fd < 0) return Status(StatusCode::kIoError, Why(dir, std::strerror(errno)));
  unlink(path.c_str());
  return fd;
}

StatusOr<Arena*> NewArena(const std::string& dir) {
  struct statfs fs {};
  if (statfs(dir.c_str(), &fs) != 0)
    return Status(StatusCode::kIoError, Why(dir, std::strerror(errno)));
  if (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC)
    return Status(StatusCode::kInvalidArgument, Why(dir, "it is held in memory itself (tmpfs)"));
  struct statvfs vfs {};
  if (statvfs(dir.c_str(), &vfs) != 0)
    return Status(StatusCode::kIoError, Why(dir, std::strerror(errno)));
  const uint64_t free_bytes = uint64_t{vfs.f_bavail} * vfs.f_frsize;
  if (free_bytes < kMinFree)
    return Status(StatusCode::kIoError,
                  Why(dir, "only " + std::to_string(free_bytes >> 20) + " MiB free"));
  auto fd = OpenUnnamed(dir);
  if (!fd.ok()) return fd.status();
  const uint64_t size = std::min(free_bytes, kMaxMapped) / kPage * kPage;
  // A sparse file as large as the room: reserving space for each allocation (below) is what
  // keeps writes from failing, so reserving must work here.
  if (ftruncate(*fd, static_cast<off_t>(size)) != 0 || fallocate(*fd, 0, 0, kPage) != 0) {
    const std::string err = std::strerror(errno);
    close(*fd);
    return Status(StatusCode::kIoError, Why(dir, err + " (its filesystem must support fallocate)"));
  }
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, *fd, 0);
  if (base == MAP_FAILED) {
    const std::string err = std::strerror(errno);
    close(*fd);
    return Status(StatusCode::kIoError, Why(dir, "mapping it failed: " + err));
  }
  auto* a = new Arena;  // lives as long as the process: spilled memory may be freed at any time
  a->fd = *fd;
  a->base = static_cast<uint8_t*>(base);
  a->size = size;
  a->dir = dir;
  a->next = kPage;  // the page reserved above stays unused
  return a;
}

}  // namespace

Status EnableSpill(const std::string& dir, uint64_t min_bytes) {
  std::lock_guard<std::mutex> lock(g_enable);
  const std::string where = dir.empty() ? std::string(".") : dir;
  Arena* chosen = nullptr;
  for (int i = 0; i < g_arena_count.load() && chosen == nullptr; ++i)
    if (g_arenas[i].load()->dir == where) chosen = g_arenas[i].load();
  if (chosen == nullptr) {
    const int n = g_arena_count.load();
    if (n == kMaxArenas)
      return Status(
          StatusCode::kInvalidArgument,
          Why(where, "this process already spills to " + std::to_string(n) + " other directories"));
    auto a = NewArena(where);
    if (!a.ok()) return a.status();
    chosen = *a;
    g_arenas[n].store(chosen);
    g_arena_count.store(n + 1);  // after the slot: Release may scan it at once
  }
  g_arena.store(chosen);
  g_min_bytes.store(std::max<uint64_t>(min_bytes, 1));
  g_spilling.store(true);
  return Status::Ok();
}

void StopSpilling() { g_spilling.store(false); }

bool Spilling() { return g_spilling.load(std::memory_order_relaxed); }

SpillStats GetSpillStats() {
  SpillStats s;
  const Arena* a = g_arena.load();
  if (a == nullptr) return s;
  s.dir = a->dir;
  for (int i = 0; i < g_arena_count.load(); ++i) s.bytes += g_arenas[i].load()->live.load();
  s.peak_bytes = a->peak.load();
  s.fallbacks = a->fallbacks.load();
  s.allocations = a->allocations.load();
  return s;
}

namespace spill_internal {

void* Allocate(size_t bytes) {
  if (!g_spilling.load(std::memory_order_relaxed) ||
      bytes < g_min_bytes.load(std::memory_order_relaxed))
    return nullptr;
  Arena* a = g_arena.load(std::memory_order_acquire);
  const uint64_t len = RoundUp(bytes);
  const uint64_t at = a->next.fetch_add(len);
  if (at + len > a->size || fallocate(a->fd, 0, static_cast<off_t>(at), static_cast<off_t>(len))) {
    a->fallbacks.fetch_add(1);
    return nullptr;
  }
  const uint64_t live = a->live.fetch_add(len) + len;
  uint64_t peak = a->peak.load();
  while (live > peak && !a->peak.compare_exchange_weak(peak, live)) {
  }
  a->allocations.fetch_add(1);
  return a->base + at;
}

bool Release(void* p, size_t bytes) {
  const int n = g_arena_count.load(std::memory_order_acquire);
  if (n == 0 || p == nullptr) return false;
  auto* q = static_cast<uint8_t*>(p);
  Arena* a = nullptr;
  for (int i = 0; i < n && a == nullptr; ++i) {
    Arena* c = g_arenas[i].load(std::memory_order_acquire);
    if (q >= c->base && q < c->base + c->size) a = c;
  }
  if (a == nullptr) return false;
  const uint64_t len = RoundUp(bytes);
  // The range's disk blocks and cached pages go; its addresses are never handed out again.
  fallocate(a->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(q - a->base),
            static_cast<off_t>(len));
  a->live.fetch_sub(len);
  return true;
}

}  // namespace spill_internal
}  // namespace ncclrr
