// Process-wide state of the interposer and the thread-local state of the per-call path. The
// rules for code in this library are in docs/design.md.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

#include "ncclrr/trace/records.h"
#include "ncclrr/trace/trace_writer.h"
#include "real_nccl.h"

namespace ncclrr::interpose {

struct CommState;

// A thread's watchdog slot. While the thread is inside a recorded NCCL call: the call's api and
// start time, its communicator, and the call's record itself, which the call builds here (not on
// its stack) so that the housekeeping thread can write a call that never returns into the trace
// without costing the call anything. The slot is a seqlock keyed by `enter_ns`: the owner clears
// it before it touches the record again, and a reader keeps a copy only when `enter_ns` is
// unchanged after copying.
struct InFlightSlot {
  std::atomic<int64_t> enter_ns{0};  // 0: not in a call
  std::atomic<uint32_t> api{0};
  std::atomic<uint32_t> tid{0};             // 0: free slot
  std::atomic<uint64_t> reported_enter{0};  // watchdog only: the call it already reported
  std::atomic<int64_t> written_enter{0};    // housekeeping only: the call it already wrote
  std::atomic<CommState*> comm{nullptr};    // the call's communicator (null: none or unknown)
  // 1 from the call's return from NCCL until its record is appended (owner thread only; the
  // fatal-signal handler waits for it, so a call that returned is in the trace).
  std::atomic<uint32_t> finishing{0};
  bool shared = false;  // the overflow slot: threads build records locally
  Record record{};      // the call being built (owner thread only)
};

struct GroupLog;  // calls of the open group of one thread (call_path.cc)

// Per-thread state: plain data in initial-exec TLS (__thread: no constructor, no TLS wrapper
// call, no __tls_get_addr), so the per-call path reaches it with one instruction.
struct ThreadState {
  uint32_t tid;            // cached gettid(); 0 until first use (reset in a forked child)
  uint32_t busy;           // > 0 inside a recording wrapper: nested NCCL calls are NCCL's own
  uint32_t group_depth;    // ncclGroupStart nesting of the application
  uint32_t group_counter;  // groups opened by this thread
  uint64_t group_id;       // id of the outermost open group, 0 outside groups
  InFlightSlot* inflight;  // watchdog slot, claimed at the thread's first recorded call
  GroupLog* group_log;     // what the open group changed (for ncclGroupSimulateEnd)
  bool capture_unique_id;  // inside ncclCommInitAll: keep the id of NCCL's nested GetUniqueId
  bool have_unique_id;
  bool created_in_group;  // a comm was created inside the open group: finalize at its end
  unsigned char unique_id[128];
};
extern __thread ThreadState t_state __attribute__((tls_model("initial-exec")));

uint32_t CurrentTid();  // cached per thread

enum class Stage : int {
  kIdle = 0,        // no NCCL call seen yet
  kResolved = 1,    // the real NCCL is known; no trace file yet (queries only so far)
  kRecording = 2,   // the trace file exists; calls are recorded
  kForwarding = 3,  // recording impossible or disabled: every call is only forwarded
};

struct Runtime {
  std::atomic<int> stage{0};
  const NcclLibrary* lib = nullptr;  // set before stage leaves kIdle
  TraceWriter* writer = nullptr;     // set before stage becomes kRecording; never freed
  bool stacks = false;               // --stacks: native call-site ids
  bool sites = false;                // call-site ids at all: --stacks or Python sites
};
extern Runtime g_runtime;

// Slow paths of the per-call path (preload.cc).
// Makes sure the real NCCL is known; null if it cannot be found.
const NcclLibrary* ResolveSlow();
// Creates the trace file at the first recorded call. False: forward only.
bool StartRecordingSlow();

// Fast checks used by every wrapper.
inline const NcclLibrary* Lib() {
  if (__builtin_expect(g_runtime.stage.load(std::memory_order_acquire) != 0, 1))
    return g_runtime.lib;
  return ResolveSlow();
}
inline bool Recording() {
  const int s = g_runtime.stage.load(std::memory_order_acquire);
  if (__builtin_expect(s == static_cast<int>(Stage::kRecording), 1)) return true;
  if (s == static_cast<int>(Stage::kForwarding)) return false;
  return StartRecordingSlow();
}

// Appends a record; counts it as dropped when the writer cannot take it.
inline void Emit(const Record& r) { g_runtime.writer->Append(r); }
void Note(NoteLevel level, std::string text);
// A one-time note + stderr warning, keyed by `key` (e.g. a missing API).
void WarnOnce(const char* key, const std::string& text);

// Result returned when the real NCCL (or one of its functions) is missing.
ncclResult_t MissingFunction(const char* name);

}  // namespace ncclrr::interpose
