// What `record --capture` copies of a call (capture_jobs.h): the filter and step count, the
// byte budget (reserved whole per call on the per-call path, so a call is captured entirely or
// not at all), the backend, and the notes that say what was captured and what was skipped.
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <mutex>

#include "capture_jobs.h"
#include "comm_registry.h"
#include "env_config.h"
#include "host_stream.h"
#include "ncclrr/sketch/plan.h"
#include "ncclrr/trace/capture_filter.h"
#include "reason_counts.h"
#include "runtime.h"
#include "sketch_hooks.h"

namespace ncclrr::interpose {
namespace {

enum class Backend { kNone, kHost, kDevice };
Backend g_backend = Backend::kNone;
bool g_on = false;
pid_t g_pid = 0;
CaptureFilter g_filter;
uint64_t g_budget = 0;
std::atomic<uint64_t> g_reserved{0};
std::atomic<uint64_t> g_calls{0};
std::atomic<int> g_stop{0};  // 0 capturing; 1 the budget was reached; 2 a write failed

constexpr int kReasons = static_cast<int>(CaptureSkip::kCount);
ReasonCounts<kReasons> g_skips;

// What the skipped units of each CaptureSkip were and did, in the enum's order.
constexpr const char* kReasonText[kReasons] = {
    "calls were not captured: the byte budget was reached",
    "calls captured into a CUDA graph were not captured (they run at each graph launch)",
    "buffers had no way to be copied (no host-stream callbacks, no usable CUDA driver)",
    "buffers found the staging memory full (NCCLRR_CAPTURE_STAGING_MB) and were not captured",
    "buffers could not be copied by the CUDA driver",
    "buffers or calls could not be written to the side file (capturing stopped)",
    "calls failed in NCCL: their output was not captured",
    "calls of a forked child were not captured",
};

// Steps per communicator rank (ranks of one comm may share a process): a new one begins when the
// rank issues its first collective again.
struct StepState {
  bool have_first = false;
  uint16_t api = 0;
  uint8_t dtype = 0;
  uint64_t count = 0, send = 0, recv = 0;
  uint64_t step = 0;
};
std::mutex g_steps_mu;
std::map<std::pair<uint64_t, int>, StepState> g_steps;  // (comm id, rank), under g_steps_mu

uint64_t StepOf(const CallRecord& rec, int rank) {
  std::lock_guard<std::mutex> lock(g_steps_mu);
  StepState& s = g_steps[{rec.comm_id, rank}];
  if (!s.have_first) {
    s = {true, rec.api, rec.dtype, rec.count, rec.sendbuff, rec.recvbuff, 0};
  } else if (s.api == rec.api && s.dtype == rec.dtype && s.count == rec.count &&
             s.send == rec.sendbuff && s.recv == rec.recvbuff) {
    ++s.step;
  }
  return s.step;
}

// The seq the call will take in CallBuilder::Finish if NCCL accepts it.
uint64_t PredictSeq(const CallRecord& rec, const CommState& cs) {
  const Api api = static_cast<Api>(rec.api);
  if (IsCollective(api)) return cs.coll_seq.load(std::memory_order_relaxed);
  std::atomic<uint64_t>* peers = cs.p2p_seq.load(std::memory_order_acquire);
  if (peers == nullptr || rec.root_peer < 0 ||
      rec.root_peer >= cs.nranks.load(std::memory_order_relaxed))
    return kNoSeq;
  return peers[rec.root_peer * 2 + (api == Api::kRecv)].load(std::memory_order_relaxed);
}

void NoteStop(const char* why) {
  Note(NoteLevel::kWarning,
       std::string("capture: stopped ") + why + ": " + std::to_string(g_calls.load()) +
           " calls captured (" + std::to_string(g_reserved.load()) + " of " +
           std::to_string(g_budget) +
           " bytes of the --capture budget); later calls are not captured (counted at exit)");
}

// Reserves `bytes` of the budget; the first call that does not fit stops capturing.
bool Reserve(uint64_t bytes) {
  uint64_t used = g_reserved.load(std::memory_order_relaxed);
  for (;;) {
    if (g_stop.load(std::memory_order_relaxed) != 0) return false;
    if (used + bytes > g_budget) {
      int expected = 0;
      if (g_stop.compare_exchange_strong(expected, 1)) NoteStop("at the byte budget");
      return false;
    }
    if (g_reserved.compare_exchange_weak(used, used + bytes)) return true;
  }
}

void NoteTotalsAtExit() {
  if (g_runtime.stage.load() != static_cast<int>(Stage::kRecording)) return;
  DeviceCaptureAtExit();
  DrainCapturedBytes();
  Note(NoteLevel::kInfo, "capture: " + std::to_string(g_calls.load()) + " calls captured; " +
                             std::to_string(g_reserved.load()) + " of " + std::to_string(g_budget) +
                             " budget bytes used");
  for (int i = 0; i < kReasons; ++i)
    if (const uint64_t n = g_skips.count(i))
      Note(NoteLevel::kWarning,
           "capture: " + std::to_string(n) + " " + kReasonText[i] + g_skips.FirstSuffix(i));
}

}  // namespace

void CountCaptureSkip(CaptureSkip reason, uint64_t units, const std::string& detail) {
  g_skips.Add(static_cast<int>(reason), units, detail);
}

bool CapturesOn() { return g_on; }
bool CaptureStopped() { return g_stop.load(std::memory_order_relaxed) != 0; }

void StopCapturing() {
  int expected = 0;
  if (g_stop.compare_exchange_strong(expected, 2)) NoteStop("after a side-file write failed");
}

void InitCaptures(const NcclLibrary& lib) {
  const Config& cfg = GetConfig();
  if (cfg.capture_bytes == 0) return;
  auto filter = ParseCaptureFilter(cfg.capture_filter);
  if (!filter.ok()) {
    WarnOnce("capture-filter", "capture: NCCLRR_CAPTURE_FILTER: " + filter.status().message() +
                                   "; nothing is captured");
    return;
  }
  g_filter = std::move(*filter);
  g_budget = cfg.capture_bytes;
  g_pid = getpid();
  if (lib.host_nccl) {
    if (HostCapturesAvailable()) g_backend = Backend::kHost;
  } else {
    g_backend = Backend::kDevice;  // the staging memory is allocated at the first capture
  }
  std::atexit(NoteTotalsAtExit);  // registered after triggers.cc's: runs before the trace closes
  Note(NoteLevel::kInfo,
       "capture: on, budget " + std::to_string(g_budget) + " bytes" +
           (cfg.capture_filter.empty() ? "" : ", filter " + cfg.capture_filter) +
           (g_backend == Backend::kHost
                ? "; the host NCCL's buffers are copied on the host in stream order"
            : g_backend == Backend::kDevice
                ? "; GPU buffers are copied into pinned memory on each call's stream"
                : "; the host NCCL exports no ncclrrHostStreamAddCallback: nothing is "
                  "captured"));
  g_on = true;
  g_sketch_on = true;  // the per-call hooks of sketch_hooks.h plan and run captures too
}

bool PlanCapture(const CallRecord& rec, const CommState& cs, CaptureHalves* h) {
  const Api api = static_cast<Api>(rec.api);
  if (getpid() != g_pid) {
    CountCaptureSkip(CaptureSkip::kForkedChild, 1);
    return false;
  }
  const uint64_t step =
      g_filter.NeedsSteps() && IsCollective(api) ? StepOf(rec, cs.rank.load()) : 0;
  if (!g_filter.Matches(rec.comm_id, PredictSeq(rec, cs), api, rec.op, rec.flags)) return false;
  if (g_filter.NeedsSteps() && (!IsCollective(api) || !g_filter.StepMatches(step))) return false;
  const auto plan = sketch::PlanCall(api, rec.dtype, rec.count, cs.nranks.load(), cs.rank.load(),
                                     rec.root_peer, (rec.flags & call_flags::kInPlace) != 0);
  if (!plan.ok()) return false;
  const uint64_t size = DtypeSize(rec.dtype);
  const uint64_t send = plan->send ? plan->send->total() * size : 0;
  const uint64_t recv = plan->recv ? plan->recv->total() * size : 0;
  const void* scalar = nullptr;
  if ((rec.flags & call_flags::kScalarOnDevice) != 0)
    if (const PreMulOp* op = cs.FindPreMul(rec.op)) scalar = op->device_scalar;
  const uint64_t total = send + recv + (scalar ? size : 0);
  if (total == 0) return false;
  if ((send && rec.sendbuff == 0) || (recv && rec.recvbuff == 0)) return false;  // NCCL refuses
  if (rec.capture != 0) {
    CountCaptureSkip(CaptureSkip::kGraph, 1);
    return false;
  }
  if (!Reserve(total)) {
    CountCaptureSkip(g_stop.load() == 2 ? CaptureSkip::kWriteFailed : CaptureSkip::kBudget, 1);
    return false;
  }
  g_calls.fetch_add(1, std::memory_order_relaxed);
  for (CaptureJob* job : {&h->before, &h->after}) {
    job->call_uid = rec.uid;
    job->stream = reinterpret_cast<void*>(rec.stream);
    job->device = cs.device.load();
  }
  if (send)
    h->before.Add({reinterpret_cast<const void*>(rec.sendbuff), send, SketchWhich::kSendBefore});
  if (scalar) h->before.Add({scalar, size, SketchWhich::kScalar});
  if (recv)
    h->after.Add({reinterpret_cast<const void*>(rec.recvbuff), recv, SketchWhich::kRecvAfter});
  return true;
}

void PrepareCapturesBeforeCommInit() {
  if (g_backend == Backend::kDevice) PrepareDeviceCaptures();
}

void DispatchCapture(const CaptureJob& job) {
  if (job.empty()) return;
  switch (g_backend) {
    case Backend::kHost:
      return HostCapture(job);
    case Backend::kDevice:
      return DeviceCapture(job);
    case Backend::kNone:
      return CountCaptureSkip(CaptureSkip::kNoBackend, job.n);
  }
}

}  // namespace ncclrr::interpose
