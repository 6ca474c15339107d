// The profiler plugin's state: one PluginRecorder per process (the trace file, the preload
// handshake), one CommContext per communicator (what NCCL hands back as `context`), and the
// handles NCCL holds for events.
//
// The plugin runs inside NCCL, on the application's threads, NCCL's threads and CUDA's
// host-callback threads, under the rules of docs/design.md ("Rules for code that runs inside the
// user's job"). For the plugin they mean: never fail NCCL (every entry point returns success,
// whatever happens here); no I/O on an event path (records go to the TraceWriter's thread-local
// rings); locks only on slow paths (first event of a comm, the trace file's creation, slot pool
// growth); every knob read once (plugin_config.h).
#pragma once
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ncclrr/trace/records.h"
#include "ncclrr/trace/trace_writer.h"

namespace ncclrr::profiler {

inline constexpr uint32_t kHandleMagic = 0x6e72724b;  // "nrrK"

enum class HandleKind : uint8_t { kApiCall, kGroupApi, kTask, kOther };

// Every pointer the plugin gives NCCL as an event handle points to one of these.
struct Handle {
  uint32_t magic = kHandleMagic;
  HandleKind kind = HandleKind::kOther;
  void* chained = nullptr;  // the chained plugin's handle for the same event
};

// Reads a handle NCCL passed back (an event handle or a parentObj); null if it is not ours.
inline Handle* AsHandle(void* p) {
  auto* h = static_cast<Handle*>(p);
  return h != nullptr && h->magic == kHandleMagic ? h : nullptr;
}

struct CommContext;

// A v5 API event (the application's call): filled at start and stop on the calling thread;
// completed by its task event (buffers, peer) at launch, or emitted alone when captured.
struct ApiSlot {
  enum State : int { kFree = 0, kOpen, kPending, kDone };
  Handle h;
  std::atomic<int> state{kFree};
  CommContext* comm = nullptr;
  CallRecord rec{};
  bool silent = false;        // the preload records this call
  uint64_t launch_scope = 0;  // the outermost group (or lone call) whose GroupEnd launches it
};

struct CommContext {
  uint32_t magic = kHandleMagic;
  int version = 0;  // the interface NCCL uses with us
  uint64_t comm_hash = 0;
  bool hash_known = false;  // v1-v3 learn it at the first task event
  int rank = -1, nranks = 0, nnodes = 0;
  int32_t device = -1;
  std::string name;
  int64_t create_ns = 0;
  void* chained = nullptr;  // the chained plugin's context

  std::atomic<uint64_t> coll_seq{0};
  std::atomic<uint64_t> type_seq[128] = {};  // by Api value (all < 128)
  std::mutex p2p_mu;
  std::unordered_map<uint64_t, uint64_t> p2p_seq;  // (peer << 1 | is_recv) -> next seq

  // 0 undecided, 1 the plugin records this comm, 2 the preload does (v1-v4 decide per comm).
  std::atomic<int> owner{0};
  std::atomic<bool> comm_written{false};
  bool noted_byte_counts = false;

  // Slot pool for API events: stable addresses, reused first-in first-out so that a stale
  // reference finds its slot unchanged for as long as possible; captured calls' slots are never
  // reused (NCCL names them again at every graph launch).
  std::mutex slots_mu;
  std::vector<std::unique_ptr<ApiSlot[]>> slot_chunks;
  std::deque<ApiSlot*> free_slots;
  std::vector<ApiSlot*> live_slots;  // every slot handed out, to flush at finalize
  // Calls waiting for their task event, in the order they were issued. NCCL launches a comm's
  // groups in order, so once a later group's task arrives, a call of an earlier group that is
  // still waiting will get none (a kernel NCCL runs without task events, such as its symmetric-
  // memory kernels): it is written then, without buffers, rather than at finalize.
  std::mutex pending_mu;
  std::deque<ApiSlot*> pending;

  uint64_t NextP2pSeq(int peer, bool recv);
  ApiSlot* AcquireSlot();
  void ReleaseSlot(ApiSlot* slot);
};

struct ProcessInfo;

class PluginRecorder {
 public:
  static PluginRecorder& Get();

  // The writer, created at the first record; null when recording is off or impossible.
  TraceWriter* Writer();
  bool Disabled() const;
  // Appends a call of `comm` (and, the first time, the comm itself). From any thread.
  void EmitCall(CommContext* comm, CallRecord& rec);
  void Note(NoteLevel level, const std::string& text);
  void NoteOnce(const char* key, NoteLevel level, const std::string& text);

  // The preload handshake (trace/include/ncclrr/trace/preload_handshake.h).
  bool PreloadInRecordedCall() const;
  bool PreloadRecordsComm(uint64_t hash) const;
  bool PreloadLoaded() const { return preload_loaded_; }

  // NCCL's version from the library that loaded the plugin (0 if it exports none), and the
  // interface version it chose; set at the first init.
  void SetNcclInfo(const void* nccl_code_address, int plugin_version);
  int plugin_version() const { return plugin_version_.load(); }

  // Writes the comm record if not yet done (at its first recorded call).
  void WriteComm(CommContext* comm);
  // At exit (atexit) and when the last communicator is finalized.
  void Flush();
  void Close(const char* reason);

 private:
  PluginRecorder();
  void Start();

  std::mutex mu_;
  bool started_ = false;
  std::unique_ptr<TraceWriter> writer_;
  std::atomic<TraceWriter*> writer_ptr_{nullptr};
  int (*in_recorded_call_)() = nullptr;
  int (*records_comm_)(uint64_t) = nullptr;
  bool preload_loaded_ = false;
  std::atomic<int> plugin_version_{0};
  int nccl_version_ = 0;
  std::vector<std::string> noted_;
  std::vector<std::pair<NoteLevel, std::string>> early_notes_;  // before the writer exists
};

}  // namespace ncclrr::profiler
