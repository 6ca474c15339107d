// What ncclrr knows about each live communicator of the process: its identity (NCCL's commHash,
// see comm_hash.h), rank, size and device, and the per-communicator counters that number calls
// the way NCCL pairs them. Looked up by ncclComm_t on every call, without a lock.
//
// A handle is only a key while its communicator lives: NCCL reuses addresses after destroy, so
// entries are dropped at ncclCommDestroy/ncclCommAbort and ids never derive from addresses.
#pragma once
#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "ncclrr/trace/records.h"

namespace ncclrr::interpose {

inline constexpr int kApiSlots = 96;  // > every Api value: type_seq is indexed by Api
inline constexpr int kMaxPreMulOps = 32;

struct PreMulOp {
  std::atomic<int32_t> op{-1};  // ncclRedOp_t, -1: free
  double scalar = 0;            // host-resident scalar, widened
  bool on_device = false;
  const void* device_scalar = nullptr;  // ncclScalarDevice: its pointer (record --sketch)
};

struct CommState {
  // Identity: written before the state is published, then read-only (except where noted).
  ncclComm_t handle = nullptr;
  uint64_t id = 0;  // comm_id written into records
  uint64_t parent_id = 0;
  uint64_t nccl_hash = 0;  // NCCL's own commHash (== id unless NCCL's hash collides)
  int64_t create_ns = 0;
  int32_t color = 0, key = 0;
  uint32_t lineage = 0;
  uint32_t name_id = 0;
  uint8_t origin = 0;
  uint8_t blocking = 1;
  uint8_t hash_known = 0;
  uint32_t creator_tid = 0;

  // Known at creation for root comms, else once the communicator is ready.
  std::atomic<int32_t> rank{-1};
  std::atomic<int32_t> nranks{0};
  std::atomic<int32_t> device{-1};
  std::atomic<bool> ready{false};  // the CommRecord has been written
  std::atomic<bool> finalizing{false};

  // Call numbering.
  std::atomic<uint64_t> coll_seq{0};
  std::atomic<uint64_t> type_seq[kApiSlots] = {};
  std::atomic<std::atomic<uint64_t>*> p2p_seq{nullptr};  // [peer * 2 + (recv ? 1 : 0)]

  // Queries are counted, and changes of the asynchronous error recorded.
  std::atomic<uint64_t> query_count[kApiSlots] = {};
  uint64_t query_emitted[kApiSlots] = {};  // housekeeping thread only
  std::atomic<int32_t> async_error{0};

  PreMulOp premul[kMaxPreMulOps];

  // Children made by split/shrink (slow path, under `children_mu`).
  std::mutex children_mu;
  int split_count = 0;                          // NCCL's splitCount for this parent
  std::map<uint64_t, uint32_t> shrink_repeats;  // exclude-set fingerprint -> shrinks so far

  // Allocates the per-peer counters once the size is known (slow path).
  void SetSize(int32_t n);
  const PreMulOp* FindPreMul(int32_t op) const;
};

class CommRegistry {
 public:
  // Lock-free. Null when the handle is not (or no longer) known.
  CommState* Find(ncclComm_t handle) const;
  // Publishes `state` under its handle (replacing a stale entry of a reused address).
  void Insert(CommState* state);
  // Forgets the handle (the state object is kept: a racing reader may still hold it).
  void Remove(ncclComm_t handle);
  // Every live state (slow path: housekeeping, exit).
  std::vector<CommState*> Snapshot() const;
  // Taken around fork() (triggers.cc) so a child never inherits it locked.
  std::mutex& WriteMutex() { return write_mu_; }

 private:
  static constexpr size_t kSlots = 1 << 14;
  static constexpr uintptr_t kTombstone = 1;
  struct Slot {
    std::atomic<uintptr_t> key{0};
    std::atomic<CommState*> state{nullptr};
  };
  static size_t Hash(uintptr_t key) { return (key >> 4) * 0x9e3779b97f4a7c15ull >> 50; }
  Slot slots_[kSlots];
  mutable std::mutex write_mu_;
};

CommRegistry& Comms();

}  // namespace ncclrr::interpose
