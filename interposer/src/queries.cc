#include "queries.h"

#include <mutex>

#include "call_path.h"

namespace ncclrr::interpose {
namespace {
// Queries of no communicator, and of communicators ncclrr does not know.
std::atomic<uint64_t> g_process_count[kApiSlots];
uint64_t g_process_emitted[kApiSlots];  // under g_emit_mu
std::mutex g_emit_mu;

void EmitCounts(uint64_t comm_id, int32_t rank, std::atomic<uint64_t>* counts, uint64_t* emitted) {
  for (int api = 0; api < kApiSlots; ++api) {
    const uint64_t n = counts[api].load(std::memory_order_relaxed);
    if (n == emitted[api]) continue;
    emitted[api] = n;
    Record r{};
    r.kind = RecordKind::kQuery;
    r.query.comm_id = comm_id;
    r.query.api = static_cast<uint16_t>(api);
    r.query.rank = rank;
    r.query.count = n;
    Emit(r);
  }
}
}  // namespace

std::mutex& QueryMutex() { return g_emit_mu; }

void CountProcessQuery(CommState* cs, Api api) {
  std::atomic<uint64_t>* counts = cs != nullptr ? cs->query_count : g_process_count;
  counts[static_cast<int>(api)].fetch_add(1, std::memory_order_relaxed);
}

void AsyncErrorChanged(CommState* cs, ncclResult_t value, const void* caller) {
  const int32_t old = cs->async_error.exchange(value);
  if (old == value || !Recording()) return;
  // A ready nonblocking communicator goes "in progress" and back around every call (PyTorch
  // polls it constantly): routine, not recorded. Errors, and the end of its init, are.
  auto routine = [](int32_t v) { return v == ncclSuccess || v == ncclInProgress; };
  if (routine(old) && routine(value) && cs->ready.load(std::memory_order_acquire)) return;
  CallBuilder call(Api::kAsyncErrorChange, cs->handle, nullptr, caller);
  call.rec.aux = static_cast<uint8_t>(old);
  call.Finish(value);  // ncclSuccess finalizes a nonblocking comm; an error triggers a dump
}

void EmitQueryCounts() {
  if (g_runtime.stage.load() != static_cast<int>(Stage::kRecording)) return;
  std::lock_guard<std::mutex> lock(g_emit_mu);
  EmitCounts(0, -1, g_process_count, g_process_emitted);
  for (CommState* cs : Comms().Snapshot())
    EmitCounts(cs->id, cs->rank.load(), cs->query_count, cs->query_emitted);
}

void EmitQueryCountsOf(CommState* cs) {
  if (g_runtime.stage.load() != static_cast<int>(Stage::kRecording)) return;
  std::lock_guard<std::mutex> lock(g_emit_mu);
  EmitCounts(cs->id, cs->rank.load(), cs->query_count, cs->query_emitted);
}

}  // namespace ncclrr::interpose
