#include "gpu_timing_hooks.h"

#include <dlfcn.h>
#include <pthread.h>

#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include "cuda_graphs.h"
#include "env_config.h"
#include "ncclrr/gputiming/gpu_timer.h"
#include "real_nccl.h"
#include "runtime.h"

namespace ncclrr::interpose {

std::atomic<bool> g_gpu_timing_on{false};

namespace {

using gputiming::GpuTimer;
using gputiming::TimedCall;

std::mutex g_mu;               // start, retry and stop
GpuTimer* g_timer = nullptr;   // set once, never freed: threads may still be inside it at exit
bool g_retry_pending = false;  // under g_mu: no CUDA driver at recording start, try again
std::string g_first_failure;   // under g_mu: why the first attempt failed

GpuTimer* Timer() { return g_timer; }  // valid whenever g_gpu_timing_on was seen true

gputiming::GpuTimerOptions Options() {
  const Config& cfg = GetConfig();
  gputiming::GpuTimerOptions o;
  o.choice = gputiming::SourceChoiceFromString(cfg.gpu_timing_source);
  o.cupti_library = cfg.gpu_timing_cupti;
  o.cuda_driver_library = cfg.gpu_timing_cuda;
  o.api_records = cfg.gpu_timing_all_api < 0    ? gputiming::ApiRecords::kAuto
                  : cfg.gpu_timing_all_api == 1 ? gputiming::ApiRecords::kAll
                                                : gputiming::ApiRecords::kLaunchesOnly;
  o.progress = cfg.gpu_progress;
  o.sink = [](const GpuTimeRecord& r) {  // the timer's collector thread, or Stop's caller
    Record rec{};
    rec.kind = RecordKind::kGpuTime;
    rec.gpu = r;
    Emit(rec);
  };
  o.note = [](NoteLevel level, const std::string& text) { Note(level, text); };
  return o;
}

void Unavailable(const std::string& why) {
  const std::string text = "GPU timing (--gpu-timing) is unavailable in this process: " + why +
                           ". Calls are recorded without GPU times.";
  Note(NoteLevel::kWarning, text);
  if (GetConfig().verbose) std::fprintf(stderr, "ncclrr: %s\n", text.c_str());
}

bool CudaDriverLoaded() {
  void* h = LoadedLibcuda();
  if (h != nullptr) dlclose(h);
  return h != nullptr;
}

// A forked child has neither the timer's collector thread nor a usable CUDA context: it records
// untimed (and never touches the timer, whose locks another thread may have held at fork).
void ForkChild() { g_gpu_timing_on.store(false); }

// Under g_mu. True when the timer runs; otherwise `why` says what stopped it.
bool TryStart(std::string* why) {
  auto t = GpuTimer::Start(Options());
  if (!t.ok()) {
    *why = t.status().message();
    return false;
  }
  g_timer = t->release();
  pthread_atfork(nullptr, nullptr, ForkChild);
  g_gpu_timing_on.store(true, std::memory_order_release);
  return true;
}

TimedCall Timed(const CallRecord& rec, int32_t device) {
  TimedCall c;
  c.uid = rec.uid;
  c.device = device;
  c.stream = rec.stream;
  c.captured = rec.capture == 1;
  c.nonblocking = (rec.flags & call_flags::kNonblocking) != 0;
  return c;
}

// The scope a call outside a group opened (EndCall closes the thread's own scope; this only
// says whether there is one, so that a call that opened none does not end another's).
thread_local bool t_call_open = false;

}  // namespace

void StartGpuTiming(const NcclLibrary& lib) {
  const Config& cfg = GetConfig();
  if (cfg.gpu_timing == 0) return;
  std::lock_guard<std::mutex> lock(g_mu);
  if (lib.host_nccl && cfg.gpu_timing < 2) {
    Unavailable(
        "the NCCL in use is ncclrr's host NCCL, which runs collectives on the CPU and launches "
        "no GPU kernels");
    return;
  }
  // Asked before trying: loading CUPTI may load the driver without initializing it.
  const bool driver_loaded = CudaDriverLoaded();
  std::string why;
  if (TryStart(&why)) return;
  // The first NCCL call may precede CUDA (ncclGetUniqueId before any CUDA call): NCCL loads and
  // initializes the driver when it creates a communicator, and RetryGpuTiming tries again then.
  if (!driver_loaded && cfg.gpu_timing_cuda.empty()) {
    g_retry_pending = true;
    g_first_failure = why;
    return;
  }
  Unavailable(why);
}

void RetryGpuTiming() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_retry_pending) return;
  if (!CudaDriverLoaded()) return;  // not yet: a later communicator may bring it
  g_retry_pending = false;
  std::string why;
  if (!TryStart(&why)) Unavailable(why);
}

void StopGpuTiming() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_retry_pending) {
    g_retry_pending = false;
    Unavailable("no CUDA driver was loaded in this process by its last communicator (" +
                g_first_failure + ")");
  }
  if (!g_gpu_timing_on.exchange(false)) return;
  const GpuTimeSource source = g_timer->source();  // Stop leaves no source active
  (void)g_timer->Stop();
  const gputiming::GpuTimerStats s = g_timer->Stats();
  char text[400];
  std::snprintf(text, sizeof text,
                "GPU timing: %llu GpuTime records, source at the end: %s; %llu NCCL kernels seen, "
                "%llu not tied to a recorded call; %llu calls untimed; %llu launches carried "
                "ncclrr's CUPTI correlation id; %llu calls seen running (start marks)",
                static_cast<unsigned long long>(s.records), gputiming::SourceName(source),
                static_cast<unsigned long long>(s.nccl_kernels),
                static_cast<unsigned long long>(s.unmatched_kernels),
                static_cast<unsigned long long>(s.skipped_calls),
                static_cast<unsigned long long>(s.launch_correlations),
                static_cast<unsigned long long>(s.start_marks));
  std::string note = text;
  if (source == GpuTimeSource::kEventPair && s.skipped_calls > 0)
    note +=
        " (event pairs do not time calls captured into CUDA graphs or on nonblocking "
        "communicators: NCCLRR_GPU_TIMING_SOURCE=cupti times them with CUPTI)";
  Note(NoteLevel::kInfo, note);
}

void GpuTimingBeforeCall(const CallRecord& rec, int32_t device) {
  if (!g_gpu_timing_on.load(std::memory_order_acquire)) return;
  const TimedCall c = Timed(rec, device);
  if (rec.group_depth > 0) {
    Timer()->AddGroupMember(c);
    return;
  }
  Timer()->BeginCall(c);
  t_call_open = true;
}

void GpuTimingAfterCall(const CallRecord& rec) {
  if (t_call_open) {
    t_call_open = false;
    Timer()->EndCall();  // a scope begun stays valid after Stop: EndCall still pops it
  }
  (void)rec;
}

void GpuTimingBeforeGroupEnd() {
  if (g_gpu_timing_on.load(std::memory_order_acquire)) Timer()->BeginGroupEnd();
}

void GpuTimingAfterGroupEnd() {
  if (GpuTimer* t = Timer()) t->EndGroupEnd();
}

void GpuTimingDiscardGroup() {
  if (g_gpu_timing_on.load(std::memory_order_acquire)) Timer()->DiscardGroup();
}

void GpuTimingAddTemplate(uint64_t graph, const CallRecord& rec) {
  if (g_gpu_timing_on.load(std::memory_order_acquire))
    Timer()->AddGraphTemplate(graph, Timed(rec, rec.device), rec.group_id);
}

void GpuTimingBeforeGraphLaunch(uint64_t graph) {
  if (g_gpu_timing_on.load(std::memory_order_acquire)) Timer()->BeginGraphLaunch(graph);
}

void GpuTimingAfterGraphLaunch() {
  if (GpuTimer* t = Timer()) t->EndGraphLaunch();
}

void GpuTimingForgetGraph(uint64_t graph) {
  if (g_gpu_timing_on.load(std::memory_order_acquire)) Timer()->ForgetGraph(graph);
}

void GpuTimingForeignCupti(const char* api) {
  if (g_gpu_timing_on.load(std::memory_order_acquire)) Timer()->OnForeignCuptiUse(api);
}

}  // namespace ncclrr::interpose
