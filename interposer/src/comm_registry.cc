#include "comm_registry.h"

namespace ncclrr::interpose {

void CommState::SetSize(int32_t n) {
  if (n <= 0) return;
  nranks.store(n, std::memory_order_relaxed);
  if (p2p_seq.load(std::memory_order_acquire) != nullptr) return;
  auto* counters = new std::atomic<uint64_t>[static_cast<size_t>(n) * 2]();
  std::atomic<uint64_t>* expected = nullptr;
  if (!p2p_seq.compare_exchange_strong(expected, counters)) delete[] counters;
}

const PreMulOp* CommState::FindPreMul(int32_t op) const {
  for (const PreMulOp& p : premul)
    if (p.op.load(std::memory_order_acquire) == op) return &p;
  return nullptr;
}

CommState* CommRegistry::Find(ncclComm_t handle) const {
  const auto key = reinterpret_cast<uintptr_t>(handle);
  if (key <= kTombstone) return nullptr;
  for (size_t i = Hash(key), n = 0; n < kSlots; i = (i + 1) & (kSlots - 1), ++n) {
    const uintptr_t k = slots_[i].key.load(std::memory_order_acquire);
    if (k == key) return slots_[i].state.load(std::memory_order_acquire);
    if (k == 0) return nullptr;
  }
  return nullptr;
}

void CommRegistry::Insert(CommState* state) {
  const auto key = reinterpret_cast<uintptr_t>(state->handle);
  if (key <= kTombstone) return;
  std::lock_guard<std::mutex> lock(write_mu_);
  Slot* free_slot = nullptr;
  for (size_t i = Hash(key), n = 0; n < kSlots; i = (i + 1) & (kSlots - 1), ++n) {
    const uintptr_t k = slots_[i].key.load(std::memory_order_relaxed);
    if (k == key) {  // an address reused without a destroy we saw: the new comm wins
      slots_[i].state.store(state, std::memory_order_release);
      return;
    }
    if (k == kTombstone && free_slot == nullptr) free_slot = &slots_[i];
    if (k == 0) {
      if (free_slot == nullptr) free_slot = &slots_[i];
      break;
    }
  }
  if (free_slot == nullptr) return;  // table full: calls on this comm are recorded without it
  free_slot->state.store(state, std::memory_order_release);
  free_slot->key.store(key, std::memory_order_release);
}

void CommRegistry::Remove(ncclComm_t handle) {
  const auto key = reinterpret_cast<uintptr_t>(handle);
  if (key <= kTombstone) return;
  std::lock_guard<std::mutex> lock(write_mu_);
  for (size_t i = Hash(key), n = 0; n < kSlots; i = (i + 1) & (kSlots - 1), ++n) {
    const uintptr_t k = slots_[i].key.load(std::memory_order_relaxed);
    if (k == key) {
      slots_[i].key.store(kTombstone, std::memory_order_release);
      return;
    }
    if (k == 0) return;
  }
}

std::vector<CommState*> CommRegistry::Snapshot() const {
  std::vector<CommState*> out;
  std::lock_guard<std::mutex> lock(write_mu_);
  for (const Slot& s : slots_) {
    const uintptr_t k = s.key.load(std::memory_order_relaxed);
    if (k > kTombstone) out.push_back(s.state.load(std::memory_order_relaxed));
  }
  return out;
}

CommRegistry& Comms() {
  static CommRegistry* registry = new CommRegistry();  // never destroyed: used until exit
  return *registry;
}

}  // namespace ncclrr::interpose
