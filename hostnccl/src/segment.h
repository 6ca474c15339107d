// The shared state of one communicator: a POSIX shared-memory segment that every rank maps,
// whether ranks are threads of one process or separate processes. Nothing in it is a pointer, so
// each rank may map it at its own address.
//
// Progress protocol. Every rank owns one 64-bit state word per slot; it only ever grows:
// Stamp(seq, step) = ((seq + 1) << 24) | step. A rank waits until every peer's word has reached a
// stamp, so "peer q finished position p" and "peer q is already further" read the same. Slots are
// reused round-robin; a position may take a slot once every rank is done with the one before.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace ncclrr::host {

constexpr uint32_t kStepArrived = 1;
constexpr uint32_t kStepDone = 0xFFFFFF;
inline uint64_t Stamp(uint64_t seq, uint32_t step) { return ((seq + 1) << 24) | step; }
inline uint64_t StampSeq(uint64_t stamp) { return (stamp >> 24) - 1; }

enum class Kind : uint8_t {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAlltoAll,
  kGather,
  kScatter,
  kSend,
  kRecv
};
const char* KindName(Kind k);

// What one rank asked for at one position; every peer reads it once all have arrived.
struct OpDesc {
  Kind kind;
  uint8_t dtype;
  uint8_t redop;  // RedKind
  uint8_t pad0;
  int32_t root;  // root, or peer for send/recv
  uint64_t count;
  uint64_t in_bytes;  // bytes this rank contributes to the exchange
  double scalar;      // PreMulSum scalar
};

struct alignas(64) CollCell {
  std::atomic<uint64_t> state;
  OpDesc desc;
};
struct alignas(64) P2pCell {
  std::atomic<uint64_t> send_state;
  std::atomic<uint64_t> recv_state;
  OpDesc send_desc;
  OpDesc recv_desc;
};
// Host-side collectives of the communicator (split, shrink): a tiny allgather of two ints.
struct alignas(64) BootCell {
  std::atomic<uint64_t> posted;  // round + 1 once color/key are written
  std::atomic<uint64_t> read;    // round + 1 once this rank has read everyone's
  int32_t color;
  int32_t key;
};

struct SegmentHeader {
  std::atomic<uint64_t> magic;
  uint32_t nranks;
  uint32_t coll_slots;
  uint32_t p2p_slots;
  uint32_t pad;
  uint64_t coll_chunk;
  uint64_t p2p_chunk;
  std::atomic<uint32_t> attached;
  std::atomic<uint32_t> epoch;      // futex word: bumped after every state change
  std::atomic<uint32_t> sleepers;   // futex waiters, so Bump skips the syscall when none
  std::atomic<int32_t> aborted_by;  // first rank that called ncclCommAbort, or -1 - none
};

class Segment {
 public:
  Segment() = default;
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;
  ~Segment();

  // Creates or opens the segment `name` and registers `rank`. Returns an error message, or "".
  std::string Attach(const std::string& name, int nranks, int rank);
  // Removes the name (ranks that attached keep their mapping). Safe to call more than once.
  void Unlink();
  bool Ready() const { return hdr_->attached.load(std::memory_order_acquire) >= uint32_t(nranks_); }
  bool Joined(int rank) const;

  SegmentHeader& hdr() const { return *hdr_; }
  int nranks() const { return nranks_; }
  CollCell& coll(uint64_t seq, int rank) const;
  char* coll_stage(uint64_t seq, int rank) const;
  P2pCell& p2p(int src, int dst, uint64_t seq) const;
  char* p2p_stage(int src, int dst, uint64_t seq) const;
  BootCell& boot(int rank) const;

  // Wakes every rank waiting on this communicator.
  void Bump() const;
  // Sleeps until the epoch moves past `seen` or `timeout_us` passes.
  void Wait(uint32_t seen, int timeout_us) const;

 private:
  std::string name_;
  char* base_ = nullptr;
  size_t size_ = 0;
  SegmentHeader* hdr_ = nullptr;
  int nranks_ = 0;
  size_t off_join_ = 0, off_boot_ = 0, off_coll_ = 0, off_p2p_ = 0, off_coll_stage_ = 0,
         off_p2p_stage_ = 0;
  bool unlinked_ = false;
};

// Shared-memory name of a root communicator, from its unique id, and of a child.
std::string SegmentNameFromNonce(uint64_t nonce);

}  // namespace ncclrr::host
