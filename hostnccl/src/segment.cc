#include "segment.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "env.h"

namespace ncclrr::host {
namespace {

constexpr uint64_t kMagic = 0x6e63636c72726831ull;  // "ncclrrh1"
constexpr uint32_t kCollSlots = 8;
constexpr uint32_t kP2pSlots = 2;

size_t AlignUp(size_t x, size_t a) { return (x + a - 1) / a * a; }

// Staging chunks shrink with the rank count so a communicator's segment stays small. Pages are
// only allocated when touched, so the unused p2p channels of large communicators cost nothing.
uint64_t CollChunk(int nranks) {
  return std::clamp<uint64_t>((8u << 20) / uint64_t(nranks), 16u << 10, 512u << 10);
}
uint64_t P2pChunk(int nranks) {
  return std::clamp<uint64_t>((4u << 20) / uint64_t(nranks), 16u << 10, 256u << 10);
}

struct Layout {
  size_t join, boot, coll, p2p, coll_stage, p2p_stage, total;
};

Layout ComputeLayout(int n) {
  Layout l{};
  size_t off = AlignUp(sizeof(SegmentHeader), 64);
  l.join = off;
  off = AlignUp(off + sizeof(std::atomic<uint32_t>) * n, 64);
  l.boot = off;
  off += sizeof(BootCell) * n;
  l.coll = off;
  off += sizeof(CollCell) * kCollSlots * n;
  l.p2p = off;
  off += sizeof(P2pCell) * kP2pSlots * size_t(n) * n;
  off = AlignUp(off, 4096);
  l.coll_stage = off;
  off += CollChunk(n) * kCollSlots * n;
  l.p2p_stage = off;
  off += P2pChunk(n) * kP2pSlots * size_t(n) * n;
  l.total = AlignUp(off, 4096);
  return l;
}

long Futex(const std::atomic<uint32_t>* addr, int op, uint32_t val, const timespec* ts) {
  // Not FUTEX_PRIVATE: ranks in other processes wait on the same word.
  return syscall(SYS_futex, reinterpret_cast<const uint32_t*>(addr), op, val, ts, nullptr, 0);
}

}  // namespace

const char* KindName(Kind k) {
  static const char* const kNames[] = {"AllReduce",     "Broadcast", "Reduce", "AllGather",
                                       "ReduceScatter", "AlltoAll",  "Gather", "Scatter",
                                       "Send",          "Recv"};
  return kNames[static_cast<int>(k)];
}

std::string SegmentNameFromNonce(uint64_t nonce) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "/ncclrr-host-%016llx", static_cast<unsigned long long>(nonce));
  return buf;
}

Segment::~Segment() {
  if (base_ != nullptr) munmap(base_, size_);
}

std::string Segment::Attach(const std::string& name, int nranks, int rank) {
  name_ = name;
  nranks_ = nranks;
  const Layout l = ComputeLayout(nranks);
  size_ = l.total;
  bool creator = false;
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd >= 0) {
    creator = true;
    if (ftruncate(fd, off_t(size_)) != 0) {
      int err = errno;
      close(fd);
      shm_unlink(name.c_str());
      return std::string("ftruncate of shared memory failed: ") + std::strerror(err);
    }
  } else if (errno == EEXIST) {
    fd = shm_open(name.c_str(), O_RDWR, 0600);
    if (fd < 0) return std::string("shm_open failed: ") + std::strerror(errno);
    // The creator sizes the segment right after creating it; wait for that.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(TimeoutNs());
    struct stat st {};
    while (fstat(fd, &st) == 0 && size_t(st.st_size) < size_) {
      if (std::chrono::steady_clock::now() > deadline) {
        close(fd);
        return "shared memory segment " + name + " never got its size (wrong nranks?)";
      }
      std::this_thread::yield();
    }
    if (size_t(st.st_size) != size_) {
      close(fd);
      return "shared memory segment " + name + " has another size: ranks disagree on nranks";
    }
  } else {
    return std::string("shm_open failed: ") + std::strerror(errno);
  }
  void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return std::string("mmap of shared memory failed: ") + std::strerror(errno);
  base_ = static_cast<char*>(p);
  hdr_ = reinterpret_cast<SegmentHeader*>(base_);
  off_join_ = l.join;
  off_boot_ = l.boot;
  off_coll_ = l.coll;
  off_p2p_ = l.p2p;
  off_coll_stage_ = l.coll_stage;
  off_p2p_stage_ = l.p2p_stage;
  if (creator) {
    hdr_->nranks = uint32_t(nranks);
    hdr_->coll_slots = kCollSlots;
    hdr_->p2p_slots = kP2pSlots;
    hdr_->coll_chunk = CollChunk(nranks);
    hdr_->p2p_chunk = P2pChunk(nranks);
    hdr_->aborted_by.store(-1);
    hdr_->magic.store(kMagic, std::memory_order_release);
  } else {
    while (hdr_->magic.load(std::memory_order_acquire) != kMagic) std::this_thread::yield();
    if (hdr_->nranks != uint32_t(nranks)) return "ranks disagree on nranks";
  }
  auto* joined = reinterpret_cast<std::atomic<uint32_t>*>(base_ + off_join_);
  if (joined[rank].exchange(1) != 0) {
    return "rank " + std::to_string(rank) + " joined twice (same unique id used for two ranks?)";
  }
  hdr_->attached.fetch_add(1, std::memory_order_acq_rel);
  Bump();
  return "";
}

void Segment::Unlink() {
  if (!unlinked_ && !name_.empty()) {
    shm_unlink(name_.c_str());  // ENOENT: another rank removed it first
    unlinked_ = true;
  }
}

bool Segment::Joined(int rank) const {
  auto* joined = reinterpret_cast<std::atomic<uint32_t>*>(base_ + off_join_);
  return joined[rank].load(std::memory_order_acquire) != 0;
}

CollCell& Segment::coll(uint64_t seq, int rank) const {
  const uint64_t slot = seq % hdr_->coll_slots;
  return reinterpret_cast<CollCell*>(base_ + off_coll_)[slot * nranks_ + rank];
}

char* Segment::coll_stage(uint64_t seq, int rank) const {
  const uint64_t slot = seq % hdr_->coll_slots;
  return base_ + off_coll_stage_ + (slot * nranks_ + rank) * hdr_->coll_chunk;
}

P2pCell& Segment::p2p(int src, int dst, uint64_t seq) const {
  const uint64_t slot = seq % hdr_->p2p_slots;
  const uint64_t idx = (uint64_t(src) * nranks_ + dst) * hdr_->p2p_slots + slot;
  return reinterpret_cast<P2pCell*>(base_ + off_p2p_)[idx];
}

char* Segment::p2p_stage(int src, int dst, uint64_t seq) const {
  const uint64_t slot = seq % hdr_->p2p_slots;
  const uint64_t idx = (uint64_t(src) * nranks_ + dst) * hdr_->p2p_slots + slot;
  return base_ + off_p2p_stage_ + idx * hdr_->p2p_chunk;
}

BootCell& Segment::boot(int rank) const {
  return reinterpret_cast<BootCell*>(base_ + off_boot_)[rank];
}

void Segment::Bump() const {
  hdr_->epoch.fetch_add(1, std::memory_order_seq_cst);
  if (hdr_->sleepers.load(std::memory_order_seq_cst) != 0) {
    Futex(&hdr_->epoch, FUTEX_WAKE, INT32_MAX, nullptr);
  }
}

void Segment::Wait(uint32_t seen, int timeout_us) const {
  hdr_->sleepers.fetch_add(1, std::memory_order_seq_cst);
  if (hdr_->epoch.load(std::memory_order_seq_cst) == seen) {
    timespec ts{timeout_us / 1000000, (timeout_us % 1000000) * 1000L};
    Futex(&hdr_->epoch, FUTEX_WAIT, seen, &ts);
  }
  hdr_->sleepers.fetch_sub(1, std::memory_order_seq_cst);
}

}  // namespace ncclrr::host
