#include "ncclrr/base/spill.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>

namespace ncclrr {
namespace {

constexpr uint64_t kPage = 4096;
// The address space a file maps: a sparse file's size costs nothing (ext4 allows 16 TiB), and
// freed ranges are handed out again, so this bounds what is alive at once, not what was ever.
constexpr uint64_t kMaxMapped = uint64_t{8} << 40;
constexpr uint64_t kMinMapped = uint64_t{1} << 30;
constexpr uint64_t kMinRoom = uint64_t{1} << 30;
constexpr uint64_t kXfsMagic = 0x58465342;

// One mapping of one sparse file. Ranges are handed out best fit from those freed (coalesced),
// else from the front; a freed range is punched out of the file, so that disk and page cache
// hold only what is alive.
struct Arena {
  int fd = -1;
  uint8_t* base = nullptr;
  uint64_t size = 0;
  dev_t dev = 0;
  ino_t ino = 0;
  std::string dir;
  uint64_t budget = 0;  // what may be reserved on disk at once: room less a share for others
  std::mutex mu;
  uint64_t next = 0;                         // [next, size) never handed out
  std::map<uint64_t, uint64_t> free_at;      // offset -> length
  std::multimap<uint64_t, uint64_t> by_len;  // length -> offset, the same ranges
  uint64_t live = 0;
  std::atomic<uint64_t> peak{0}, fallbacks{0}, allocations{0};

  void RemoveFree(std::map<uint64_t, uint64_t>::iterator it) {
    auto [lo, hi] = by_len.equal_range(it->second);
    for (auto j = lo; j != hi; ++j)
      if (j->second == it->first) {
        by_len.erase(j);
        break;
      }
    free_at.erase(it);
  }
  void AddFree(uint64_t off, uint64_t len) {
    auto after = free_at.lower_bound(off);
    if (after != free_at.end() && off + len == after->first) {
      len += after->second;
      RemoveFree(after);
    }
    auto before = free_at.lower_bound(off);
    if (before != free_at.begin() && std::prev(before)->first + std::prev(before)->second == off) {
      --before;
      off = before->first;
      len += before->second;
      RemoveFree(before);
    }
    if (off + len == next) {  // the front moves back rather than keep a free tail
      next = off;
      return;
    }
    free_at.emplace(off, len);
    by_len.emplace(len, off);
  }
  // An offset for `len` bytes, or UINT64_MAX.
  uint64_t Take(uint64_t len) {
    auto fit = by_len.lower_bound(len);
    if (fit != by_len.end()) {
      const uint64_t off = fit->second, have = fit->first;
      RemoveFree(free_at.find(off));
      if (have > len) AddFree(off + len, have - len);
      return off;
    }
    if (next + len > size) return UINT64_MAX;
    next += len;
    return next - len;
  }
};

// Every arena made (one per directory asked for; never freed, so that Release may scan them at
// any time), and the one new allocations go to.
constexpr int kMaxArenas = 64;
std::atomic<Arena*> g_arenas[kMaxArenas];
std::atomic<int> g_arena_count{0};
std::atomic<Arena*> g_arena{nullptr};
std::atomic<int> g_scopes{0};
std::atomic<uint64_t> g_min_bytes{kSpillMinBytes};
std::mutex g_start;

uint64_t RoundUp(uint64_t n) { return (n + kPage - 1) / kPage * kPage; }

std::string Why(const std::string& dir, const std::string& what) {
  return "cannot keep the check's calls on disk in " + dir + ": " + what +
         "; give a writable directory on an ext4 or xfs disk with room with --spill DIR";
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

// As large as the process may make a file (RLIMIT_FSIZE: going past it kills with SIGXFSZ) and
// the filesystem allows (EFBIG: halved until it fits).
StatusOr<uint64_t> SizeFile(int fd, const std::string& dir) {
  uint64_t size = kMaxMapped;
  struct rlimit fsize {};
  if (getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY)
    size = std::min<uint64_t>(size, fsize.rlim_cur / kPage * kPage);
  while (size >= kMinMapped) {
    if (ftruncate(fd, static_cast<off_t>(size)) == 0) return size;
    if (errno != EFBIG && errno != EINVAL) break;
    size /= 2;
  }
  return Status(
      StatusCode::kIoError,
      Why(dir, errno ? std::strerror(errno) : "the file size limit (ulimit -f) is too low"));
}

StatusOr<Arena*> NewArena(const std::string& dir, const struct stat& st) {
  struct statfs fs {};
  if (statfs(dir.c_str(), &fs) != 0)
    return Status(StatusCode::kIoError, Why(dir, std::strerror(errno)));
  // Only where space reserved with fallocate stays reserved when a mapped page is written back:
  // elsewhere (tmpfs holds it in memory; ZFS and btrfs reserve nothing or reserve again on
  // write) a full disk would kill the check with SIGBUS.
  if (fs.f_type != EXT4_SUPER_MAGIC && static_cast<uint64_t>(fs.f_type) != kXfsMagic)
    return Status(StatusCode::kInvalidArgument,
                  Why(
                      dir, fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC
                               ? std::string("it is held in memory itself (tmpfs)")
                               : "its filesystem (type 0x" +
                                     [&] {
                                       char hex[32];
                                       std::snprintf(hex, sizeof hex, "%lx",
                                                     static_cast<unsigned long>(fs.f_type));
                                       return std::string(hex);
                                     }() +
                                     ") may not keep space reserved for a mapped file"));
  struct statvfs vfs {};
  if (statvfs(dir.c_str(), &vfs) != 0)
    return Status(StatusCode::kIoError, Why(dir, std::strerror(errno)));
  const uint64_t free_bytes = uint64_t{vfs.f_bavail} * vfs.f_frsize;
  const uint64_t total = uint64_t{vfs.f_blocks} * vfs.f_frsize;
  // A twentieth of the disk (at least 1 GiB) is left to everyone else writing there.
  const uint64_t headroom = std::max<uint64_t>(total / 20, uint64_t{1} << 30);
  if (free_bytes < headroom + kMinRoom)
    return Status(StatusCode::kIoError,
                  Why(dir, "only " + std::to_string(free_bytes >> 20) + " MiB free"));
  auto fd = OpenUnnamed(dir);
  if (!fd.ok()) return fd.status();
  errno = 0;
  auto size = SizeFile(*fd, dir);
  if (!size.ok() || fallocate(*fd, 0, 0, kPage) != 0) {
    const std::string err = size.ok() ? std::strerror(errno) : size.status().message();
    close(*fd);
    if (!size.ok()) return size.status();
    return Status(StatusCode::kIoError, Why(dir, err + " (its filesystem must support fallocate)"));
  }
  void* base = mmap(nullptr, *size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, *fd, 0);
  if (base == MAP_FAILED) {
    const std::string err = std::strerror(errno);
    close(*fd);
    return Status(StatusCode::kIoError, Why(dir, "mapping it failed: " + err));
  }
  auto* a = new Arena;
  a->fd = *fd;
  a->base = static_cast<uint8_t*>(base);
  a->size = *size;
  a->dev = st.st_dev;
  a->ino = st.st_ino;
  a->dir = dir;
  a->budget = free_bytes - headroom;
  a->next = kPage;  // the page reserved above stays unused
  return a;
}

Arena* ArenaOf(const void* p) {
  const int n = g_arena_count.load(std::memory_order_acquire);
  const auto* q = static_cast<const uint8_t*>(p);
  for (int i = 0; i < n; ++i) {
    Arena* a = g_arenas[i].load(std::memory_order_acquire);
    if (q >= a->base && q < a->base + a->size) return a;
  }
  return nullptr;
}

}  // namespace

StatusOr<SpillScope> SpillScope::Start(const std::string& dir, uint64_t min_bytes) {
  std::lock_guard<std::mutex> lock(g_start);
  const std::string where = dir.empty() ? std::string(".") : dir;
  struct stat st {};
  if (stat(where.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Status(
        StatusCode::kIoError,
        Why(where, S_ISDIR(st.st_mode) || errno ? std::strerror(errno) : "not a directory"));
  Arena* chosen = nullptr;
  const int n = g_arena_count.load();
  for (int i = 0; i < n && chosen == nullptr; ++i) {
    Arena* a = g_arenas[i].load();
    if (a->dev == st.st_dev && a->ino == st.st_ino) chosen = a;
  }
  if (chosen == nullptr) {
    if (n == kMaxArenas)
      return Status(
          StatusCode::kInvalidArgument,
          Why(where, "this process already spills to " + std::to_string(n) + " other directories"));
    auto a = NewArena(where, st);
    if (!a.ok()) return a.status();
    chosen = *a;
    g_arenas[n].store(chosen, std::memory_order_release);
    g_arena_count.store(n + 1, std::memory_order_release);  // after the slot: Release scans it
  }
  {
    std::lock_guard<std::mutex> arena_lock(chosen->mu);
    if (g_scopes.load() == 0) chosen->peak = chosen->live;  // the peak of this scope's work
  }
  g_min_bytes.store(std::max<uint64_t>(min_bytes, 1));
  g_arena.store(chosen, std::memory_order_release);
  g_scopes.fetch_add(1);
  SpillScope s;
  s.active_ = true;
  return s;
}

SpillScope::SpillScope(SpillScope&& o) noexcept : active_(o.active_) { o.active_ = false; }

SpillScope& SpillScope::operator=(SpillScope&& o) noexcept {
  if (this != &o) {
    if (active_) g_scopes.fetch_sub(1);
    active_ = o.active_;
    o.active_ = false;
  }
  return *this;
}

SpillScope::~SpillScope() {
  if (active_) g_scopes.fetch_sub(1);
}

bool Spilling() { return g_scopes.load(std::memory_order_relaxed) > 0; }

SpillStats GetSpillStats() {
  SpillStats s;
  for (int i = 0; i < g_arena_count.load(); ++i) {
    Arena* a = g_arenas[i].load();
    std::lock_guard<std::mutex> lock(a->mu);
    s.bytes += a->live;
  }
  Arena* a = g_arena.load();
  if (a == nullptr) return s;
  s.dir = a->dir;
  s.peak_bytes = a->peak.load();
  s.fallbacks = a->fallbacks.load();
  s.allocations = a->allocations.load();
  return s;
}

namespace spill_internal {

void* Allocate(size_t bytes) {
  if (g_scopes.load(std::memory_order_acquire) == 0 ||
      bytes < g_min_bytes.load(std::memory_order_relaxed))
    return nullptr;
  Arena* a = g_arena.load(std::memory_order_acquire);
  if (a == nullptr) return nullptr;
  const uint64_t len = RoundUp(bytes);
  uint64_t at = UINT64_MAX;
  {
    std::lock_guard<std::mutex> lock(a->mu);
    if (a->live + len <= a->budget) at = a->Take(len);
    if (at != UINT64_MAX) {
      a->live += len;
      if (a->live > a->peak.load()) a->peak = a->live;
    }
  }
  // Space reserved now, so that writing the pages later cannot fail for want of it.
  if (at != UINT64_MAX &&
      fallocate(a->fd, 0, static_cast<off_t>(at), static_cast<off_t>(len)) != 0) {
    fallocate(a->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(at),
              static_cast<off_t>(len));  // what a partial reservation took
    std::lock_guard<std::mutex> lock(a->mu);
    a->live -= len;
    a->AddFree(at, len);
    at = UINT64_MAX;
  }
  if (at == UINT64_MAX) {
    a->fallbacks.fetch_add(1);
    return nullptr;
  }
  a->allocations.fetch_add(1);
  return a->base + at;
}

bool Release(void* p, size_t bytes) {
  if (p == nullptr || g_arena_count.load(std::memory_order_acquire) == 0) return false;
  Arena* a = ArenaOf(p);
  if (a == nullptr) return false;
  const uint64_t off = static_cast<uint64_t>(static_cast<uint8_t*>(p) - a->base);
  const uint64_t len = RoundUp(bytes);
  // The range's disk blocks and cached pages go; its addresses may be handed out again.
  fallocate(a->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(off),
            static_cast<off_t>(len));
  std::lock_guard<std::mutex> lock(a->mu);
  a->live -= len;
  a->AddFree(off, len);
  return true;
}

}  // namespace spill_internal
}  // namespace ncclrr
