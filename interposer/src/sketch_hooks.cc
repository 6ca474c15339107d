// When each half of a call's sketches and captures runs (sketch_hooks.h): at once outside
// groups, at the outermost GroupEnd inside one, and — for a nonblocking communicator on a GPU —
// once NCCL says the operation is enqueued. The sketch halves are planned here from the call's
// record (plan.h) and handed to a backend (sketch_jobs.h); the capture halves are planned and
// run by capture_plan.cc (capture_jobs.h).
#include "sketch_hooks.h"

#include <map>
#include <mutex>
#include <vector>

#include "call_path.h"
#include "capture_jobs.h"
#include "env_config.h"
#include "ncclrr/sketch/plan.h"
#include "sketch_jobs.h"

namespace ncclrr::interpose {

bool g_sketch_on = false;

namespace {

using sketch::SketchMode;

enum class Backend { kNone, kHost, kDevice };
Backend g_backend = Backend::kNone;

struct Halves {
  SketchJob before, after;
  CaptureHalves capture;
};

// What runs once the call (or its group) is enqueued.
struct AfterHalf {
  SketchJob sketch;
  CaptureJob capture;
  bool empty() const { return sketch.empty() && capture.empty(); }
};

SketchPart Part(const void* data, const sketch::BlockLayout& layout, SketchMode mode,
                SketchWhich blocks_as, SketchWhich race_as) {
  SketchPart p;
  p.data = data;
  p.request.layout = layout;
  p.request.mode = mode;
  p.blocks_as = blocks_as;
  p.race_as = race_as;
  return p;
}

// Below this many bytes the two events of a side stream cost more host time than running the
// send sketch beside the call saves.
constexpr uint64_t kBesideCallMinBytes = 1 << 20;

// True when the call only reads its send buffer (out of place, the ranges apart) and that is
// large enough to be worth sketching beside the call.
bool SendOnlyRead(const CallRecord& rec, const sketch::BlockLayout& send_layout,
                  const std::optional<sketch::BlockLayout>& recv_layout) {
  if (!GetConfig().sketch_beside || rec.capture == 1 || (rec.flags & call_flags::kInPlace) != 0)
    return false;
  const uint64_t size = DtypeSize(rec.dtype);
  const uint64_t send = rec.sendbuff, send_end = send + send_layout.total() * size;
  if (send_end - send < kBesideCallMinBytes) return false;
  if (!recv_layout || recv_layout->total() == 0) return true;
  const uint64_t recv = rec.recvbuff, recv_end = recv + recv_layout->total() * size;
  return send_end <= recv || recv_end <= send;
}

// Plans both sketch halves of a call from its record; false (counted) when it cannot be planned.
bool PlanSketchHalves(const CallRecord& rec, const CommState& cs, Halves* h) {
  const Api api = static_cast<Api>(rec.api);
  const auto plan = sketch::PlanCall(api, rec.dtype, rec.count, cs.nranks.load(), cs.rank.load(),
                                     rec.root_peer, (rec.flags & call_flags::kInPlace) != 0);
  if (!plan.ok()) {
    CountSkip(SkipReason::kNoPlan, plan.status().message());
    return false;
  }
  const auto* send = reinterpret_cast<const void*>(rec.sendbuff);
  const auto* recv = reinterpret_cast<const void*>(rec.recvbuff);
  // NCCL validates arguments only once the call is forwarded, after the before-half is queued.
  if ((plan->send && plan->send->total() > 0 && send == nullptr) ||
      (plan->recv && plan->recv->total() > 0 && recv == nullptr)) {
    CountSkip(SkipReason::kNoPlan, "a null buffer");
    return false;
  }
  for (SketchJob* job : {&h->before, &h->after}) {
    job->call_uid = rec.uid;
    job->stream = reinterpret_cast<void*>(rec.stream);
    job->device = cs.device.load();
    job->captured = rec.capture == 1;
  }
  if (plan->send && plan->send->total() > 0) {
    h->before.Add(Part(send, *plan->send,
                       plan->send_race ? SketchMode::kFullAndRace : SketchMode::kFull,
                       SketchWhich::kSendBefore, SketchWhich::kSendBeforeSample));
    h->before.beside_call = SendOnlyRead(rec, *plan->send, plan->recv);
  }
  if ((rec.flags & call_flags::kScalarOnDevice) != 0) {
    const PreMulOp* op = cs.FindPreMul(rec.op);
    if (op != nullptr && op->device_scalar != nullptr) {
      sketch::BlockLayout one;
      one.dtype = rec.dtype;
      one.block_count = 1;
      SketchPart p = Part(op->device_scalar, one, SketchMode::kFull, SketchWhich::kScalar,
                          SketchWhich::kScalar);
      p.request.samples_per_block = 1;  // samples[0] is the scalar
      h->before.Add(p);
    }
  }
  if (plan->recv && plan->recv->total() > 0)
    h->after.Add(Part(recv, *plan->recv, SketchMode::kFull, SketchWhich::kRecvAfter,
                      SketchWhich::kRecvAfter));
  if (plan->send_race && plan->send && plan->send->total() > 0)
    h->after.Add(Part(send, *plan->send, SketchMode::kRaceOnly, SketchWhich::kSendBefore,
                      SketchWhich::kSendAfterSample));
  return true;
}

// Sketches (record --sketch) and captures (record --capture) of the call, as configured.
bool PlanHalves(const CallRecord& rec, const CommState& cs, Halves* h) {
  const bool sketched = GetConfig().sketch != 0 && PlanSketchHalves(rec, cs, h);
  const bool captured = CapturesOn() && PlanCapture(rec, cs, &h->capture);
  return sketched || captured;
}

void Dispatch(const SketchJob& job) {
  if (job.empty()) return;
  switch (g_backend) {
    case Backend::kHost:
      return HostSketch(job);
    case Backend::kDevice:
      if (DeviceSketchesAvailable()) return DeviceSketch(job);
      return CountSkip(SkipReason::kNoBackend);
    case Backend::kNone:
      return CountSkip(SkipReason::kNoBackend);
  }
}

// After-halves of nonblocking calls on a GPU, until NCCL reports the comm's work enqueued.
constexpr size_t kMaxParked = 4096;
std::mutex g_parked_mu;
std::map<ncclComm_t, std::vector<AfterHalf>> g_parked;  // under g_parked_mu
std::atomic<size_t> g_parked_count{0};

void DispatchAfter(const AfterHalf& a) {
  Dispatch(a.sketch);
  DispatchCapture(a.capture);
}

void CountFailed(const AfterHalf& a) {
  if (!a.sketch.empty()) CountSkip(SkipReason::kCallFailed);
  if (!a.capture.empty()) CountCaptureSkip(CaptureSkip::kCallFailed, 1);
}

void Park(ncclComm_t comm, const AfterHalf& a) {
  std::lock_guard<std::mutex> lock(g_parked_mu);
  if (g_parked_count.load() >= kMaxParked) {
    if (!a.sketch.empty()) CountSkip(SkipReason::kQueueFull);
    if (!a.capture.empty()) CountCaptureSkip(CaptureSkip::kCallFailed, 1, "too many parked");
    return;
  }
  g_parked[comm].push_back(a);
  g_parked_count.fetch_add(1);
}

// The after-half once the call (or its group) returned `result`.
void RunAfter(const AfterHalf& a, ncclComm_t comm, ncclResult_t result) {
  if (a.empty()) return;
  if (result == ncclSuccess) return DispatchAfter(a);
  if (result != ncclInProgress) return CountFailed(a);
  // The host NCCL has queued the work on the stream when the call returns; a GPU NCCL may
  // still be launching it.
  if (g_backend == Backend::kHost ||
      (g_backend == Backend::kNone && g_runtime.lib != nullptr && g_runtime.lib->host_nccl))
    return DispatchAfter(a);
  Park(comm, a);
}

struct Queued {
  Halves halves;
  ncclComm_t comm;
};

struct ThreadSketches {
  uint64_t armed_uid = 0;  // the call being built outside a group (its after-half below)
  AfterHalf after;
  ncclComm_t comm = nullptr;
  uint64_t group_id = 0;  // the group `queued` belongs to
  std::vector<Queued> queued;
  bool group_running = false;  // between SketchGroupEndBefore and SketchGroupEndAfter
};
thread_local ThreadSketches t_sketches;

constexpr size_t kMaxQueued = 4096;

}  // namespace

void SketchBeforeCall(CallBuilder& call) {
  const CommState* cs = call.comm;
  if (cs == nullptr) {
    if (GetConfig().sketch != 0)
      CountSkip(SkipReason::kNoPlan, "a call on an unknown communicator");
    return;
  }
  Halves h;
  if (!PlanHalves(call.rec, *cs, &h)) return;
  ThreadSketches& t = t_sketches;
  if (t_state.group_depth > 0) {
    if (t.group_id != t_state.group_id) {  // an earlier group ended by ncclGroupSimulateEnd
      t.queued.clear();
      t.group_id = t_state.group_id;
    }
    if (t.queued.size() >= kMaxQueued) return CountSkip(SkipReason::kQueueFull);
    t.queued.push_back({std::move(h), cs->handle});
    return;
  }
  Dispatch(h.before);
  DispatchCapture(h.capture.before);
  t.armed_uid = call.rec.uid;
  t.after = {h.after, h.capture.after};
  t.comm = cs->handle;
}

void SketchAfterCall(const CallRecord& rec, ncclResult_t result) {
  if (g_backend == Backend::kDevice) JoinDeviceSketchesBesideCall();
  ThreadSketches& t = t_sketches;
  if (t.armed_uid == 0 || t.armed_uid != rec.uid) return;
  t.armed_uid = 0;
  RunAfter(t.after, t.comm, result);
}

void SketchGroupEndBefore() {
  ThreadSketches& t = t_sketches;
  if (t.queued.empty() || t_state.group_depth != 1 || t_state.busy != 0) return;
  if (t.group_id != t_state.group_id) {
    t.queued.clear();
    return;
  }
  const DeviceSketchBatch fused;  // the group's before-halves: one launch per stream (and dtype)
  for (const Queued& q : t.queued) {
    Dispatch(q.halves.before);
    DispatchCapture(q.halves.capture.before);
  }
  t.group_running = true;
}

void SketchGroupEndAfter(ncclResult_t result) {
  ThreadSketches& t = t_sketches;
  if (!t.group_running) return;
  t.group_running = false;
  const DeviceSketchBatch fused;
  for (const Queued& q : t.queued)
    RunAfter({q.halves.after, q.halves.capture.after}, q.comm, result);
  t.queued.clear();
}

void SketchAsyncError(ncclComm_t comm, ncclResult_t value) {
  if (value == ncclInProgress || g_parked_count.load(std::memory_order_relaxed) == 0) return;
  std::vector<AfterHalf> halves;
  {
    std::lock_guard<std::mutex> lock(g_parked_mu);
    auto it = g_parked.find(comm);
    if (it == g_parked.end()) return;
    halves.swap(it->second);
    g_parked.erase(it);
    g_parked_count.fetch_sub(halves.size());
  }
  for (const AfterHalf& a : halves) {
    if (value == ncclSuccess)
      DispatchAfter(a);
    else
      CountFailed(a);
  }
}

void PrepareDataPathsBeforeCommInit() {
  if (GetConfig().sketch != 0 && g_backend == Backend::kDevice) PrepareDeviceSketches();
  if (CapturesOn()) PrepareCapturesBeforeCommInit();
}

void ChooseSketchBackend(const NcclLibrary& lib) {
  if (!lib.host_nccl || GetConfig().sketch == 2) {
    g_backend = Backend::kDevice;  // SketchDevice is created at the first sketch
  } else if (HostSketchesAvailable()) {
    g_backend = Backend::kHost;
  }
}

}  // namespace ncclrr::interpose
