// The per-call path: CallBuilder (see call_path.h), the watchdog slots, and the per-thread log
// of grouped calls that ncclGroupSimulateEnd rolls back.
#include "call_path.h"

#include <cstring>
#include <ctime>
#include <mutex>

#include "call_clock.h"
#include "comm_lifecycle.h"
#include "cuda_graphs.h"
#include "gpu_timing_hooks.h"
#include "sketch_hooks.h"
#include "triggers.h"

namespace ncclrr::interpose {
namespace {
inline uint64_t Bump(std::atomic<uint64_t>& counter) {
  const uint64_t v = counter.load(std::memory_order_relaxed);
  counter.store(v + 1, std::memory_order_relaxed);
  return v;
}

// Runs first in every recorded call: a forked child's first call restarts the recording, and the
// uid sets up the writer's thread-local ring before the slot's releaser (see SlotReleaser), so the
// releaser is destroyed first when the thread exits.
InFlightSlot* BeginCall(uint64_t* uid) {
  if (__builtin_expect(g_restart_after_fork.load(std::memory_order_relaxed), 0)) RestartAfterFork();
  *uid = g_runtime.writer->NextCallUid();
  return t_state.inflight != nullptr ? t_state.inflight : ClaimInFlightSlot();
}
}  // namespace

CallBuilder::CallBuilder(Api api, ncclComm_t handle, const void* stream, const void* caller)
    : slot_(BeginCall(&uid_)),
      record_(slot_->shared || t_state.busy != 0 ? local_ : slot_->record),
      rec(record_.call) {
  // Zeroed with plain stores: for 144 bytes a `rep stos` (what `record_ = {}` compiles to) costs
  // more than the rest of the constructor.
  static_assert(sizeof record_ % sizeof(uint64_t) == 0);
  auto* words = reinterpret_cast<uint64_t*>(&record_);
#pragma GCC unroll 18
  for (size_t i = 0; i < sizeof record_ / sizeof(uint64_t); ++i) words[i] = 0;
  record_.kind = RecordKind::kCall;
  ThreadState& t = t_state;
  ++t.busy;
  rec.enter_ns = CallClockNs();
  rec.uid = uid_;
  slot_->api.store(static_cast<uint32_t>(api), std::memory_order_relaxed);
  slot_->enter_ns.store(rec.enter_ns, std::memory_order_release);
  rec.api = static_cast<uint16_t>(api);
  rec.tid = CurrentTid();
  rec.seq = kNoSeq;
  rec.root_peer = -1;
  rec.rank = -1;
  rec.device = -1;
  rec.stream = reinterpret_cast<uint64_t>(stream);
  rec.group_depth = static_cast<uint8_t>(t.group_depth < 255 ? t.group_depth : 255);
  rec.group_id = t.group_id;
  if (handle != nullptr) {
    comm = LookupComm(handle);
    if (comm != nullptr) {
      rec.comm_id = comm->id;
      if (!comm->blocking) rec.flags |= call_flags::kNonblocking;
    }
  }
  slot_->comm.store(comm, std::memory_order_relaxed);
  if ((IsCollective(api) || IsP2p(api)) && GraphsActive()) {
    const CaptureInfo cap = QueryCapture(stream);
    rec.capture = cap.capture;
    rec.graph_id = cap.graph;
  }
  if (__builtin_expect(GpuTimingOn(), 0) && (IsCollective(api) || IsP2p(api)))
    GpuTimingBeforeCall(rec, comm != nullptr ? comm->device.load(std::memory_order_relaxed) : -1);
  // Before the call: a call that never returns keeps its site in the in-flight record.
  if (g_runtime.sites) rec.callsite = CallSiteId(caller);
}

void CallBuilder::RedOp(ncclRedOp_t op) {
  rec.op = static_cast<int32_t>(op);
  if (static_cast<int32_t>(op) < static_cast<int32_t>(ncclNumOps)) return;
  rec.flags |= call_flags::kPreMulSum;
  if (comm == nullptr) return;
  if (const PreMulOp* p = comm->FindPreMul(rec.op)) {
    if (p->on_device)
      rec.flags |= call_flags::kScalarOnDevice;
    else
      rec.scalar = p->scalar;
  }
}

ncclResult_t CallBuilder::Finish(ncclResult_t result) {
  // Out of flight before the record changes again: a reader copying it now discards its copy.
  // Finishing from here until the record is appended: a fatal signal waits for it.
  const bool own_slot = !slot_->shared;
  if (own_slot) slot_->finishing.store(1, std::memory_order_relaxed);
  slot_->enter_ns.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  rec.exit_ns = CallClockNs();
  if (__builtin_expect(GpuTimingOn(), 0)) GpuTimingAfterCall(rec);
  rec.result = static_cast<int8_t>(result);
  const Api api = static_cast<Api>(rec.api);
  const bool accepted = result == ncclSuccess || result == ncclInProgress;
  if (CommState* cs = comm) {
    // Asking a destroyed communicator for its rank would touch freed memory.
    if (!cs->ready.load(std::memory_order_acquire) && result == ncclSuccess &&
        t_state.group_depth == 0 && api != Api::kCommDestroy && api != Api::kCommAbort)
      FinalizeComm(cs);
    rec.rank = cs->rank.load(std::memory_order_relaxed);
    rec.device = cs->device.load(std::memory_order_relaxed);
    // NCCL requires a communicator to be used by one thread at a time, so the counters need no
    // read-modify-write instruction; were a program to break that rule, duplicated numbers in
    // the trace would show it.
    rec.type_seq = Bump(cs->type_seq[rec.api]);
    if (accepted && rec.capture == 1) {
      rec.seq = AddGraphTemplate(rec, cs);
    } else if (accepted && IsCollective(api)) {
      rec.seq = Bump(cs->coll_seq);
    } else if (accepted && IsP2p(api)) {
      std::atomic<uint64_t>* peers = cs->p2p_seq.load(std::memory_order_acquire);
      if (peers != nullptr && rec.root_peer >= 0 &&
          rec.root_peer < cs->nranks.load(std::memory_order_relaxed))
        rec.seq = Bump(peers[rec.root_peer * 2 + (api == Api::kRecv)]);
    }
    if (rec.seq != kNoSeq && rec.capture != 1 && t_state.group_depth > 0) LogGroupedCall(cs, rec);
  }
  Emit(record_);
  if (own_slot) slot_->finishing.store(0, std::memory_order_release);
  if (__builtin_expect(g_sketch_on, 0)) SketchAfterCall(rec, result);
  --t_state.busy;
  if (!accepted) OnCallError(rec);
  return result;
}

void GroupEndSlow(ncclResult_t result) {
  if (t_state.created_in_group) {
    if (result == ncclSuccess)
      FinalizeGroupCreations();
    else
      t_state.created_in_group = false;  // nonblocking: ready when NCCL says so
  }
  if (result != ncclSuccess && result != ncclInProgress && Recording()) {
    CallBuilder call(Api::kGroupEnd, nullptr, nullptr, nullptr);  // carries the group's id
    call.Finish(result);
  }
}

// --- watchdog slots --------------------------------------------------------------------------

namespace {
constexpr int kSlots = 4096;
InFlightSlot g_slots[kSlots];
InFlightSlot g_overflow_slot{.shared = true};  // threads beyond kSlots: they are not watched

// When the thread exits (for the main thread: inside exit(), before atexit handlers and static
// destructors, which may still call NCCL): frees the thread's slot and stops recording on this
// thread, whose thread-local ring of the writer is being destroyed too (it was set up before
// this object, so it is destroyed after it).
struct SlotReleaser {
  InFlightSlot* slot = nullptr;
  ~SlotReleaser() {
    t_state.busy = 1u << 30;  // every later call of this thread is only forwarded
    if (slot == nullptr) return;
    slot->enter_ns.store(0);
    slot->tid.store(0, std::memory_order_release);
  }
};
thread_local SlotReleaser t_releaser;
}  // namespace

InFlightSlot* ClaimInFlightSlot() {
  const uint32_t tid = CurrentTid();
  for (InFlightSlot& s : g_slots) {
    uint32_t free_tid = 0;
    if (s.tid.load(std::memory_order_relaxed) == 0 &&
        s.tid.compare_exchange_strong(free_tid, tid)) {
      s.reported_enter.store(0);
      t_state.inflight = &s;
      t_releaser.slot = &s;
      return &s;
    }
  }
  t_state.inflight = &g_overflow_slot;
  return &g_overflow_slot;
}

void WaitForFinishingCalls(int timeout_ms) {
  for (int waited_us = 0; waited_us < timeout_ms * 1000; waited_us += 100) {
    bool any = false;
    for (const InFlightSlot& s : g_slots)
      any |= &s != t_state.inflight && s.tid.load(std::memory_order_relaxed) != 0 &&
             s.finishing.load(std::memory_order_acquire) != 0;
    if (!any) return;
    timespec ts{0, 100'000};
    nanosleep(&ts, nullptr);
  }
}

void ForEachInFlight(const std::function<void(InFlightSlot&)>& f) {
  for (InFlightSlot& s : g_slots)
    if (s.tid.load(std::memory_order_acquire) != 0) f(s);
}

namespace {
// What the record of a call still in flight says that Finish would otherwise have filled in: the
// communicator rank, and the sequence number the call is taking (the comm's counter has not
// moved yet: a communicator is used by one thread at a time).
void CompleteInFlight(CallRecord* rec, CommState* cs) {
  rec->flags |= call_flags::kInFlight;
  rec->exit_ns = 0;
  rec->result = 0;
  if (cs == nullptr) return;
  rec->rank = cs->rank.load(std::memory_order_relaxed);
  rec->device = cs->device.load(std::memory_order_relaxed);
  const Api api = static_cast<Api>(rec->api);
  if (rec->capture == 1) return;  // a template: its seq comes from the graph's launches
  if (IsCollective(api)) {
    rec->seq = cs->coll_seq.load(std::memory_order_relaxed);
  } else if (IsP2p(api)) {
    std::atomic<uint64_t>* peers = cs->p2p_seq.load(std::memory_order_acquire);
    if (peers != nullptr && rec->root_peer >= 0 &&
        rec->root_peer < cs->nranks.load(std::memory_order_relaxed))
      rec->seq = peers[rec->root_peer * 2 + (api == Api::kRecv)].load(std::memory_order_relaxed);
  }
}
}  // namespace

int WriteCallsInFlight(int64_t now_ns, int64_t min_age_ns) {
  int written = 0;
  ForEachInFlight([&](InFlightSlot& s) {
    const int64_t enter = s.enter_ns.load(std::memory_order_acquire);
    if (enter == 0 || now_ns - enter < min_age_ns ||
        s.written_enter.load(std::memory_order_relaxed) == enter)
      return;
    Record copy;
    std::memcpy(static_cast<void*>(&copy), &s.record, sizeof copy);  // may race with the owner:
    std::atomic_thread_fence(std::memory_order_acquire);             // kept only if unchanged
    if (s.enter_ns.load(std::memory_order_relaxed) != enter || copy.kind != RecordKind::kCall ||
        copy.call.enter_ns != enter)
      return;  // returned meanwhile (its own record is on the way), or built elsewhere
    CompleteInFlight(&copy.call, s.comm.load(std::memory_order_relaxed));
    Emit(copy);
    s.written_enter.store(enter, std::memory_order_relaxed);
    ++written;
  });
  return written;
}

void ResetInFlightAfterFork() {
  // Only the forking thread exists in the child; its slot stays claimed.
  const InFlightSlot* mine = t_state.inflight;
  for (InFlightSlot& s : g_slots)
    if (&s != mine) {
      s.enter_ns.store(0);
      s.tid.store(0);
    }
  t_state.tid = 0;
  if (mine != nullptr) const_cast<InFlightSlot*>(mine)->tid.store(CurrentTid());
}

// --- grouped calls (for ncclGroupSimulateEnd) ------------------------------------------------

void LogGroupedCall(CommState* cs, const CallRecord& rec) {
  GroupLog* log = t_state.group_log;
  if (log == nullptr) log = t_state.group_log = new GroupLog();  // once per thread
  if (log->n == GroupLog::kMax) {
    log->overflow = true;
    return;
  }
  log->entries[log->n++] = {cs, rec.api, rec.root_peer};
}

void RollBackGroup() {
  GroupLog* log = t_state.group_log;
  if (log == nullptr) return;
  for (int i = log->n - 1; i >= 0; --i) {
    const GroupLog::Entry& e = log->entries[i];
    if (IsCollective(static_cast<Api>(e.api))) {
      e.comm->coll_seq.fetch_sub(1);
    } else if (std::atomic<uint64_t>* peers = e.comm->p2p_seq.load()) {
      peers[e.peer * 2 + (static_cast<Api>(e.api) == Api::kRecv)].fetch_sub(1);
    }
  }
  if (log->overflow)
    WarnOnce("simulate-overflow",
             "a group ended by ncclGroupSimulateEnd held more than 1024 calls; sequence numbers "
             "after it may be off by the calls beyond that");
  ClearGroupLog();
}

}  // namespace ncclrr::interpose
