// The preload's side of the handshake with ncclrr's NCCL profiler plugin
// (trace/include/ncclrr/trace/preload_handshake.h): when both are loaded, a call the
// preload records is left out by the plugin, so every call is recorded once. Both answers are
// lock-free and async-signal-safe, and 0 before the preload records.
#include <atomic>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "call_path.h"
#include "comm_registry.h"
#include "ncclrr/trace/preload_handshake.h"

namespace ncclrr::interpose {
namespace {

// NCCL commHashes of the communicators the preload records: an insert-only open-addressing set
// (0 marks a free slot; hash 0 is never stored).
constexpr size_t kHashSlots = 1 << 13;
std::atomic<uint64_t> g_hashes[kHashSlots];

size_t SlotOf(uint64_t h) { return (h * 0x9e3779b97f4a7c15ull) >> 51; }

}  // namespace

void RememberNcclHash(uint64_t hash) {
  if (hash == 0) return;
  for (size_t i = SlotOf(hash), n = 0; n < kHashSlots; i = (i + 1) & (kHashSlots - 1), ++n) {
    uint64_t cur = g_hashes[i].load(std::memory_order_acquire);
    if (cur == hash) return;
    if (cur == 0 && g_hashes[i].compare_exchange_strong(cur, hash)) return;
    if (cur == hash) return;  // another thread stored it meanwhile
  }
}

bool KnowsNcclHash(uint64_t hash) {
  if (hash == 0) return false;
  for (size_t i = SlotOf(hash), n = 0; n < kHashSlots; i = (i + 1) & (kHashSlots - 1), ++n) {
    const uint64_t cur = g_hashes[i].load(std::memory_order_acquire);
    if (cur == hash) return true;
    if (cur == 0) return false;
  }
  return false;
}

}  // namespace ncclrr::interpose

using namespace ncclrr::interpose;

// The plugin finds these by the names in the header: a renamed function would fail here.
static_assert(std::string_view(NCCLRR_PRELOAD_IN_RECORDED_CALL) == "ncclrrPreloadInRecordedCall");
static_assert(std::string_view(NCCLRR_PRELOAD_RECORDS_COMM) == "ncclrrPreloadRecordsComm");
static_assert(
    std::is_same_v<decltype(&ncclrrPreloadInRecordedCall), ncclrrPreloadInRecordedCall_t>);
static_assert(std::is_same_v<decltype(&ncclrrPreloadRecordsComm), ncclrrPreloadRecordsComm_t>);

NCCLRR_API int ncclrrPreloadInRecordedCall(void) {
  const uint32_t busy = t_state.busy;  // 1 << 30 marks an exiting thread: not recording
  return busy > 0 && busy < (1u << 30) &&
         g_runtime.stage.load(std::memory_order_acquire) == static_cast<int>(Stage::kRecording);
}

NCCLRR_API int ncclrrPreloadRecordsComm(uint64_t comm_hash) {
  return g_runtime.stage.load(std::memory_order_acquire) == static_cast<int>(Stage::kRecording) &&
         KnowsNcclHash(comm_hash);
}
