// The per-call path shared by every wrapper. A wrapper reads:
//
//   NCCLRR_FORWARD_UNLESS_RECORDING(ncclAllReduce, sendbuff, recvbuff, count, ...);
//   CallBuilder call(Api::kAllReduce, comm, stream, NCCLRR_CALLER);
//   call.Data(sendbuff, recvbuff, count, datatype);  ... fill the record ...
//   return call.Finish(lib->fn.ncclAllReduce(sendbuff, recvbuff, count, ...));
//
// The guard forwards at once when ncclrr does not record (no trace, a call made by libnccl
// itself, or one nested inside another wrapper). CallBuilder then: marks the thread busy, stamps
// the time, fills the fixed-size record; Finish stamps the exit time, numbers the call the way
// NCCL pairs it, appends the record to the thread's ring and returns the real result.
#pragma once
#include <nccl.h>

#include <functional>

#include "comm_registry.h"
#include "ncclrr/trace/in_place.h"
#include "runtime.h"

namespace ncclrr::interpose {

#define NCCLRR_CALLER __builtin_return_address(0)
#define NCCLRR_API extern "C" __attribute__((visibility("default")))

// Declares `lib` and forwards unless this call is to be recorded.
#define NCCLRR_FORWARD_UNLESS_RECORDING(name, ...)                    \
  const NcclLibrary* lib = Lib();                                     \
  if (__builtin_expect(lib == nullptr || lib->fn.name == nullptr, 0)) \
    return MissingFunction(#name);                                    \
  if (!::ncclrr::interpose::ShouldRecord(lib, NCCLRR_CALLER)) return lib->fn.name(__VA_ARGS__)

inline bool ShouldRecord(const NcclLibrary* lib, const void* caller) {
  return t_state.busy == 0 && !lib->object.range.Contains(caller) && Recording();
}

// Slow paths (call_path.cc, comm_lifecycle.cc).
InFlightSlot* ClaimInFlightSlot();
CommState* LookupCommSlow(ncclComm_t handle);
void FinalizeComm(CommState* cs);         // the comm is ready: learn rank/size/device, write it
uint32_t CallSiteId(const void* caller);  // --stacks
void OnCallError(const CallRecord& rec);  // an NCCL error: ring dump, note
// The application's outermost ncclGroupEnd needs more than the fast path (creations, an error).
void GroupEndSlow(ncclResult_t result);
void ForEachInFlight(const std::function<void(InFlightSlot&)>& f);  // the watchdog's view
// Async-signal-safe: waits at most `timeout_ms` until no other thread is between a call's return
// from NCCL and the append of its record (InFlightSlot::finishing).
void WaitForFinishingCalls(int timeout_ms);
// Writes each call that has been in flight for at least `min_age_ns` (and was not written yet)
// as an in-flight record: its arguments, its enter time, no exit (housekeeping thread only).
int WriteCallsInFlight(int64_t now_ns, int64_t min_age_ns);
void ResetInFlightAfterFork();
// Calls of the open group that took a sequence number, undone by ncclGroupSimulateEnd.
struct GroupLog {
  static constexpr int kMax = 1024;
  struct Entry {
    CommState* comm;
    uint16_t api;
    int32_t peer;
  };
  Entry entries[kMax];
  int n = 0;
  bool overflow = false;
};
void LogGroupedCall(CommState* cs, const CallRecord& rec);
void RollBackGroup();
inline void ClearGroupLog() {
  if (GroupLog* log = t_state.group_log) {
    log->n = 0;
    log->overflow = false;
  }
}

inline CommState* LookupComm(ncclComm_t handle) {
  CommState* cs = Comms().Find(handle);
  return __builtin_expect(cs != nullptr, 1) ? cs : LookupCommSlow(handle);
}

class CallBuilder {
 public:
  CallBuilder(Api api, ncclComm_t comm, const void* stream, const void* caller);
  CallBuilder(const CallBuilder&) = delete;
  CallBuilder(CallBuilder&&) = delete;
  CallBuilder& operator=(const CallBuilder&) = delete;

  void Data(const void* send, const void* recv, size_t count, ncclDataType_t dtype) {
    rec.sendbuff = reinterpret_cast<uint64_t>(send);
    rec.recvbuff = reinterpret_cast<uint64_t>(recv);
    rec.count = count;
    rec.dtype = static_cast<uint8_t>(dtype);
  }
  void RedOp(ncclRedOp_t op);  // built-in or PreMulSum (scalar and flags from its creation)
  // After Data() and the root: flags the call when nccl.h's rule says it works in place.
  void MarkInPlace() {
    const int64_t rank = comm != nullptr ? comm->rank.load(std::memory_order_relaxed) : -1;
    if (IsInPlace(static_cast<Api>(rec.api), rec.sendbuff, rec.recvbuff, rec.count, rec.dtype, rank,
                  rec.root_peer))
      rec.flags |= call_flags::kInPlace;
  }
  ncclResult_t Finish(ncclResult_t result);

 private:
  uint64_t uid_;
  InFlightSlot* slot_;
  Record local_;    // only for threads beyond the watched slots (their slot is shared)
  Record& record_;  // built in place (the slot's): the writer copies it into its ring as it is

 public:
  CallRecord& rec;
  CommState* comm = nullptr;
};

}  // namespace ncclrr::interpose
