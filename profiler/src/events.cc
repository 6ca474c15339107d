#include "events.h"

#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <deque>
#include <mutex>

#include "chain.h"
#include "event_handles.h"
#include "name_maps.h"
#include "ncclrr/base/cuda_driver.h"
#include "ncclrr/trace/in_place.h"
#include "plugin_config.h"
#include "plugin_state.h"
#include "task_info.h"

namespace ncclrr::profiler {
namespace {

constexpr int kMaskV5 = abi::kGroupApi | abi::kCollApi | abi::kP2pApi | abi::kColl | abi::kP2p;
// Task events need a group event (NCCL starts them only under a non-null group handle).
constexpr int kMaskV1toV4 = abi::kGroup | abi::kColl | abi::kP2p;

// ---- Small facts ----
uint32_t Tid() {
  thread_local uint32_t tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return tid;
}

// The CUDA device current on the thread that creates the communicator (NCCL sets it), through
// the driver the process already loaded; -1 without one.
int32_t CurrentCudaDevice() {
  static const StatusOr<cuda::Driver> driver = cuda::OpenDriver("", /*may_load=*/false);
  if (!driver.ok() || driver->CtxGetCurrent == nullptr || driver->CtxGetDevice == nullptr)
    return -1;
  cuda::Context ctx = nullptr;
  int device = -1;
  if (driver->CtxGetCurrent(&ctx) != 0 || ctx == nullptr || driver->CtxGetDevice(&device) != 0)
    return -1;
  return device;
}

CommContext* Ctx(void* context) {
  auto* c = static_cast<CommContext*>(context);
  return c != nullptr && c->magic == kHandleMagic ? c : nullptr;
}

bool Chaining() { return ChainedPlugin::Get(PluginRecorder::Get().plugin_version()) != nullptr; }

CommContext* NewContext(int version, const void* caller) {
  PluginRecorder& rec = PluginRecorder::Get();
  rec.SetNcclInfo(caller, version);
  auto* c = new CommContext();
  c->version = version;
  c->device = CurrentCudaDevice();
  c->create_ns = MonotonicNs();
  return c;
}

// Comm records are written at the first recorded call when the preload shares the process (it
// may own the comm); otherwise at init, so that a rank that never calls still shows up.
void MaybeWriteCommAtInit(CommContext* c) {
  PluginRecorder& rec = PluginRecorder::Get();
  if (!rec.Disabled() && !rec.PreloadLoaded() && c->hash_known) rec.WriteComm(c);
}

// The events ncclrr asks of NCCL at a communicator's init. NCCL keeps one mask per library (the
// last init's); when the preload records this init, it sees every call into this NCCL, so no
// events spare each call the plugin's work. An init on NCCL's own thread (nonblocking comms)
// keeps them on, and the per-call checks below drop what the preload also records.
int OwnMask(int full) {
  PluginRecorder& rec = PluginRecorder::Get();
  if (rec.Disabled()) return 0;
  if (!GetPluginConfig().record_all && rec.PreloadInRecordedCall()) return 0;
  return full;
}

// ---- v5 API events ----
struct ThreadGroup {
  uint64_t group_id = 0;      // the application's group, 0 outside one
  uint64_t launch_scope = 0;  // every outermost group, explicit or NCCL's implicit one
  uint8_t depth = 0;
};
thread_local ThreadGroup t_group;
std::atomic<uint64_t> g_next_group{1};
std::atomic<uint64_t> g_next_launch_scope{1};

ApiSlot* StartApiCall(CommContext* c, Api api, size_t count, const char* datatype, int root,
                      void* stream, bool captured) {
  ApiSlot* s = c->AcquireSlot();
  CallRecord& r = s->rec;
  r = CallRecord{};
  r.comm_id = c->comm_hash;
  r.api = static_cast<uint16_t>(api);
  r.count = count;
  r.dtype = DtypeFromName(datatype);
  r.root_peer = IsRooted(api) ? root : -1;
  r.stream = reinterpret_cast<uint64_t>(stream);
  r.group_id = t_group.group_id;
  r.group_depth = t_group.depth;
  r.capture = captured ? 1 : 0;
  r.tid = Tid();
  r.rank = c->rank;
  r.device = c->device;
  r.op = -1;  // NCCL's API events do not say
  r.enter_ns = MonotonicNs();
  // Numbered here, in program order, as NCCL pairs calls; a captured call runs at graph launches
  // and takes no live number.
  r.seq = IsCollective(api) && !captured ? c->coll_seq.fetch_add(1) : kNoSeq;
  r.type_seq = c->type_seq[static_cast<uint16_t>(api) & 127].fetch_add(1);
  PluginRecorder& rec = PluginRecorder::Get();
  s->silent = rec.Disabled() || (!GetPluginConfig().record_all && rec.PreloadInRecordedCall());
  s->launch_scope = t_group.launch_scope;
  s->state.store(ApiSlot::kOpen, std::memory_order_release);
  return s;
}

void StopApiCall(ApiSlot* s) {
  s->rec.exit_ns = MonotonicNs();
  if (s->rec.capture != 0) {
    // No task event comes at capture: the template is complete now. Its slot is never reused
    // (graph launches name it again).
    s->state.store(ApiSlot::kDone, std::memory_order_release);
    if (!s->silent) PluginRecorder::Get().EmitCall(s->comm, s->rec);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(s->comm->pending_mu);
    s->comm->pending.push_back(s);
  }
  s->state.store(ApiSlot::kPending, std::memory_order_release);
}

// A task event of v5 completes its API call: true when it claimed one.
bool ClaimApiCall(void* parent, ApiSlot** out) {
  Handle* h = AsHandle(parent);
  if (h == nullptr || h->kind != HandleKind::kApiCall) return false;
  auto* s = reinterpret_cast<ApiSlot*>(h);  // Handle is ApiSlot's first member
  int pending = ApiSlot::kPending;
  if (!s->state.compare_exchange_strong(pending, ApiSlot::kDone)) return false;
  *out = s;
  return true;
}

void FinishClaimed(ApiSlot* s) {
  if (!s->silent) PluginRecorder::Get().EmitCall(s->comm, s->rec);
  s->comm->ReleaseSlot(s);
}

// `claimed` got its task: calls of earlier launch scopes still waiting will get none.
void FlushAbandoned(CommContext* c, const ApiSlot* claimed) {
  std::vector<ApiSlot*> abandoned;
  {
    std::lock_guard<std::mutex> lock(c->pending_mu);
    std::deque<ApiSlot*> keep;
    bool before = true;
    for (ApiSlot* s : c->pending) {
      if (s == claimed) {
        before = false;
        continue;
      }
      int pending = ApiSlot::kPending;
      if (before && s->launch_scope != claimed->launch_scope &&
          s->state.compare_exchange_strong(pending, ApiSlot::kDone)) {
        abandoned.push_back(s);
      } else if (s->state.load() == ApiSlot::kPending) {
        keep.push_back(s);
      }
    }
    c->pending.swap(keep);
  }
  for (ApiSlot* s : abandoned) {
    PluginRecorder::Get().NoteOnce(
        "no-task", NoteLevel::kInfo,
        "NCCL launched some calls without telling the profiler plugin (kernels it runs without "
        "task events, such as symmetric-memory kernels): their records have no buffers");
    FinishClaimed(s);
  }
}

// ---- Task events (all versions) ----
// v1-v4: the task is all there is; it becomes the call.
void RecordTask(CommContext* c, int rank, const TaskInfo& t) {
  PluginRecorder& rec = PluginRecorder::Get();
  if (rec.Disabled()) return;
  if (!c->hash_known && t.has_hash) {
    c->comm_hash = t.hash;
    c->rank = rank;
    if (t.name != nullptr) c->name = t.name;
    c->hash_known = true;
  }
  // Whose comm is it? The preload's when it records this very call (blocking launches happen
  // inside the application's call) or knows the comm (launches on NCCL's threads).
  int owner = c->owner.load(std::memory_order_relaxed);
  if (owner == 0) {
    const bool preloads = rec.PreloadInRecordedCall() || rec.PreloadRecordsComm(c->comm_hash);
    owner = preloads && !GetPluginConfig().record_all ? 2 : 1;
    c->owner.store(owner, std::memory_order_relaxed);
  }
  if (owner == 2) return;
  CallRecord r{};
  r.comm_id = c->comm_hash;
  r.api = static_cast<uint16_t>(t.api);
  r.dtype = t.dtype;
  r.count = t.count;
  r.sendbuff = reinterpret_cast<uint64_t>(t.send);
  r.recvbuff = reinterpret_cast<uint64_t>(t.recv);
  r.root_peer = t.is_coll ? (IsRooted(t.api) ? t.root_peer : -1) : t.root_peer;
  r.op = t.op;
  r.rank = c->rank >= 0 ? c->rank : rank;
  r.device = c->device;
  r.tid = Tid();
  r.enter_ns = r.exit_ns = MonotonicNs();
  r.seq = t.is_coll ? c->coll_seq.fetch_add(1) : c->NextP2pSeq(t.root_peer, t.api == Api::kRecv);
  r.type_seq = c->type_seq[static_cast<uint16_t>(t.api) & 127].fetch_add(1);
  if (t.is_coll &&
      IsInPlace(t.api, reinterpret_cast<uint64_t>(t.send), reinterpret_cast<uint64_t>(t.recv),
                t.count, t.dtype, r.rank, t.root_peer))
    r.flags |= call_flags::kInPlace;
  if ((t.api == Api::kAllGather || t.api == Api::kBroadcast) && !c->noted_byte_counts) {
    c->noted_byte_counts = true;
    rec.NoteOnce("byte-counts", NoteLevel::kInfo,
                 "NCCL before 2.28 reports AllGather and Broadcast to profiler plugins with the "
                 "count in bytes and datatype int8; this file records them that way");
  }
  rec.EmitCall(c, r);
}

// v5: a task completes the API call that is its parent.
void CompleteApiCall(CommContext* c, void* parent, const TaskInfo& t) {
  ApiSlot* s = nullptr;
  if (!ClaimApiCall(parent, &s)) return;  // a graph launch of a template, or not ours
  CallRecord& r = s->rec;
  if (t.is_coll) {
    r.sendbuff = reinterpret_cast<uint64_t>(t.send);
    r.recvbuff = reinterpret_cast<uint64_t>(t.recv);
    if (IsInPlace(static_cast<Api>(r.api), r.sendbuff, r.recvbuff, r.count, r.dtype, c->rank,
                  t.root_peer))
      r.flags |= call_flags::kInPlace;
  } else {
    r.root_peer = t.root_peer;
    r.sendbuff = reinterpret_cast<uint64_t>(t.send);
    r.recvbuff = reinterpret_cast<uint64_t>(t.recv);
    r.seq = c->NextP2pSeq(t.root_peer, static_cast<Api>(r.api) == Api::kRecv);
  }
  FlushAbandoned(c, s);
  FinishClaimed(s);
}

template <typename D, int kVersion>
abi::Result StartTaskLevel(void* context, void** handle, D* d) {
  CommContext* c = Ctx(context);
  const bool chaining = Chaining();
  Handle* h = nullptr;
  const int type = static_cast<int>(d->type);
  if (c != nullptr && (type == abi::kColl || type == abi::kP2p)) {
    const TaskInfo t = type == abi::kColl ? CollTask(*d) : P2pTask(*d);
    if constexpr (kVersion == 5) {
      CompleteApiCall(c, d->parentObj, t);
    } else {
      RecordTask(c, d->rank, t);
    }
    h = NewHandle(HandleKind::kTask, chaining);
  } else {
    h = NewHandle(HandleKind::kOther, chaining);
  }
  if (chaining && c != nullptr) h->chained = ChainedPlugin::Get(kVersion)->Start(c->chained, *d);
  *handle = h;
  return 0;
}

template <int kVersion>
abi::Result InitTaskLevel(void** context, int* mask) {
  CommContext* c = NewContext(kVersion, __builtin_return_address(0));
  int m = OwnMask(kMaskV1toV4);
  if (ChainedPlugin* chain = ChainedPlugin::Get(kVersion)) m |= chain->InitV1to3(&c->chained);
  *mask = m;
  *context = c;
  return 0;
}

}  // namespace

abi::Result InitV5(void** context, uint64_t comm_id, int* mask, const char* name, int nnodes,
                   int nranks, int rank, abi::Logger log) {
  CommContext* c = NewContext(5, __builtin_return_address(0));
  c->comm_hash = comm_id;
  c->hash_known = true;
  c->rank = rank;
  c->nranks = nranks;
  c->nnodes = nnodes;
  if (name != nullptr) c->name = name;
  int m = OwnMask(kMaskV5);
  if (ChainedPlugin* chain = ChainedPlugin::Get(5))
    m |= chain->InitV5(&c->chained, comm_id, name, nnodes, nranks, rank, log);
  MaybeWriteCommAtInit(c);
  *mask = m;
  *context = c;
  return 0;
}

abi::Result InitV4(void** context, int* mask, const char* name, uint64_t comm_hash, int nnodes,
                   int nranks, int rank, abi::Logger log) {
  CommContext* c = NewContext(4, __builtin_return_address(0));
  c->comm_hash = comm_hash;
  c->hash_known = true;
  c->rank = rank;
  c->nranks = nranks;
  c->nnodes = nnodes;
  if (name != nullptr) c->name = name;
  int m = OwnMask(kMaskV1toV4);
  if (ChainedPlugin* chain = ChainedPlugin::Get(4))
    m |= chain->InitV4(&c->chained, name, comm_hash, nnodes, nranks, rank, log);
  MaybeWriteCommAtInit(c);
  *mask = m;
  *context = c;
  return 0;
}

abi::Result InitV3(void** context, int* mask) { return InitTaskLevel<3>(context, mask); }
abi::Result InitV2(void** context, int* mask) { return InitTaskLevel<2>(context, mask); }
abi::Result InitV1(void** context, int* mask) { return InitTaskLevel<1>(context, mask); }

abi::Result StartV5(void* context, void** handle, abi::DescrV5* d) {
  CommContext* c = Ctx(context);
  const int type = static_cast<int>(d->type);
  if (c == nullptr || (type != abi::kGroupApi && type != abi::kCollApi && type != abi::kP2pApi))
    return StartTaskLevel<abi::DescrV5, 5>(context, handle, d);
  const bool chaining = Chaining();
  Handle* h = nullptr;
  if (type == abi::kGroupApi) {
    // NCCL counts its own implicit group around every call: depth 1 is "not in a group".
    const int depth = d->groupApi.groupDepth > 0 ? d->groupApi.groupDepth - 1 : 0;
    t_group.depth = static_cast<uint8_t>(depth > 255 ? 255 : depth);
    t_group.group_id = depth > 0 ? g_next_group.fetch_add(1) : 0;
    t_group.launch_scope = g_next_launch_scope.fetch_add(1);
    h = NewHandle(HandleKind::kGroupApi, chaining);
  } else if (type == abi::kCollApi) {
    h = &StartApiCall(c, ApiFromFuncName(d->collApi.func), d->collApi.count, d->collApi.datatype,
                      d->collApi.root, d->collApi.stream, d->collApi.graphCaptured)
             ->h;
  } else {
    h = &StartApiCall(c, ApiFromFuncName(d->p2pApi.func), d->p2pApi.count, d->p2pApi.datatype, -1,
                      d->p2pApi.stream, d->p2pApi.graphCaptured)
             ->h;
  }
  h->chained = chaining ? ChainedPlugin::Get(5)->Start(c->chained, *d) : nullptr;
  *handle = h;
  return 0;
}

abi::Result StartV4(void* c, void** h, abi::DescrV4* d) {
  return StartTaskLevel<abi::DescrV4, 4>(c, h, d);
}
abi::Result StartV3(void* c, void** h, abi::DescrV3* d) {
  return StartTaskLevel<abi::DescrV3, 3>(c, h, d);
}
abi::Result StartV2(void* c, void** h, abi::DescrV2* d) {
  return StartTaskLevel<abi::DescrV2, 2>(c, h, d);
}
abi::Result StartV1(void* c, void** h, abi::DescrV1* d) {
  return StartTaskLevel<abi::DescrV1, 1>(c, h, d);
}

abi::Result StopEvent(void* handle) {
  Handle* h = AsHandle(handle);
  if (h == nullptr) return 0;
  if (h->chained != nullptr) {
    if (ChainedPlugin* chain = ChainedPlugin::Get(PluginRecorder::Get().plugin_version()))
      chain->Stop(h->chained);
  }
  if (h->kind == HandleKind::kApiCall) {
    StopApiCall(reinterpret_cast<ApiSlot*>(h));
  } else if (h->kind == HandleKind::kGroupApi) {
    t_group = ThreadGroup{};
  }
  RetireHandle(h);
  return 0;
}

abi::Result RecordStateV4(void* handle, int state, abi::StateArgsV4* args) {
  Handle* h = AsHandle(handle);
  if (h != nullptr && h->chained != nullptr) {
    if (ChainedPlugin* chain = ChainedPlugin::Get(PluginRecorder::Get().plugin_version()))
      chain->RecordState(h->chained, state, args);
  }
  return 0;
}

abi::Result RecordStateV1(void* handle, int state, abi::StateArgsV1* args) {
  Handle* h = AsHandle(handle);
  if (h != nullptr && h->chained != nullptr) {
    if (ChainedPlugin* chain = ChainedPlugin::Get(PluginRecorder::Get().plugin_version()))
      chain->RecordState(h->chained, state, args);
  }
  return 0;
}

abi::Result Finalize(void* context) {
  CommContext* c = Ctx(context);
  if (c == nullptr) return 0;
  // Calls whose task never came (an error, or a launch NCCL abandoned) are written as they are.
  {
    std::lock_guard<std::mutex> lock(c->slots_mu);
    for (ApiSlot* s : c->live_slots) {
      int pending = ApiSlot::kPending;
      if (s->state.compare_exchange_strong(pending, ApiSlot::kDone) && !s->silent)
        PluginRecorder::Get().EmitCall(c, s->rec);
    }
  }
  if (c->chained != nullptr) {
    if (ChainedPlugin* chain = ChainedPlugin::Get(c->version)) chain->Finalize(c->chained);
  }
  PluginRecorder::Get().Flush();
  c->magic = 0;
  delete c;
  return 0;
}

}  // namespace ncclrr::profiler
