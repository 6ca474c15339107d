#include "cupti_source.h"

#include <pthread.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

namespace ncclrr::gputiming {
namespace {

// The source whose buffers CUPTI fills: CUPTI's callbacks carry no user pointer.
std::atomic<CuptiSource*> g_active{nullptr};

constexpr size_t kBufferBytes = size_t{2} << 20;
constexpr size_t kBufferAlign = 8;  // CUPTI's requirement

// Set by the first launch callback of any thread, scope or not: callbacks work here.
std::atomic<bool> g_launch_seen{false};

// The scopes open on this thread, innermost last, for OnLaunch (CUPTI's external id stack cannot
// be read back). Deeper nesting than this does not occur (one call or group end, or one graph
// launch, at a time); past it, launches go uncorrelated until the stack is back within it.
constexpr uint64_t kMaxScopeDepth = 4;
thread_local uint64_t t_scope_ids[kMaxScopeDepth];
thread_local uint64_t t_scope_depth = 0;  // may exceed kMaxScopeDepth

// A scope's token: bit 0, its id went onto CUPTI's external id stack; bit 1, onto ncclrr's own,
// whose depth before it is in the bits above (EndScope restores it, whatever ended in between).
constexpr uint64_t kPushedExternal = 1;
constexpr uint64_t kPushedOwn = 2;
constexpr int kDepthShift = 2;

// A forked child keeps CUPTI's callbacks but has no usable CUDA context and none of the threads
// that may have held launch_mu_ at fork: its launches are nothing to ncclrr.
void ForgetInForkedChild() {
  g_active.store(nullptr);
  t_scope_depth = 0;
}

}  // namespace

CuptiSource::CuptiSource(cupti::Api api)
    : api_(std::move(api)), clock_([this] {
        uint64_t t = 0;
        api_.GetTimestamp(&t);
        return t;
      }) {}

CuptiSource::~CuptiSource() {
  if (subscriber_ != nullptr) api_.Unsubscribe(subscriber_);
  CuptiSource* self = this;
  g_active.compare_exchange_strong(self, nullptr);
}

StatusOr<std::unique_ptr<CuptiSource>> CuptiSource::Start(const std::string& library,
                                                          CuptiCorrelation how) {
  auto api = cupti::LoadApi(library);
  if (!api.ok()) return api.status();

  // CUPTI admits one subscriber. If someone holds it, the job (or a tool around it) uses CUPTI:
  // ncclrr leaves CUPTI to them. Launch callbacks keep the slot until Stop (the preload's cupti*
  // wrappers hand it over to a job that asks later); otherwise it is released at once.
  void* subscriber = nullptr;
  const cupti::Result probe = api->Subscribe(&subscriber, OnLaunch, nullptr);
  if (probe == cupti::kErrorMultipleSubscribers) {
    return Unsupported(
        "another CUPTI client is active in this process (the PyTorch profiler, Nsight Systems or "
        "another tool): ncclrr does not take CUPTI from it");
  }
  if (probe != cupti::kSuccess) {
    return Unsupported("CUPTI (" + api->path + ") cannot start: " + api->ErrorText(probe) +
                       ". Is there a GPU and a CUDA driver that matches this CUPTI?");
  }
  if (g_active.load() != nullptr) {
    api->Unsubscribe(subscriber);
    return Unsupported("another ncclrr GPU timer already uses CUPTI in this process");
  }
  static std::once_flag fork_handler;
  std::call_once(fork_handler, [] { pthread_atfork(nullptr, nullptr, ForgetInForkedChild); });
  std::unique_ptr<CuptiSource> src(new CuptiSource(std::move(api).value()));
  src->subscriber_ = subscriber;  // released below unless launch callbacks use it
  g_launch_seen.store(false);
  g_active.store(src.get());
  cupti::Api& a = src->api_;
  cupti::Result r = a.ActivityRegisterCallbacks(OnBufferRequested, OnBufferCompleted);
  if (r != cupti::kSuccess) {
    g_active.store(nullptr);
    return Unsupported("CUPTI refused activity buffers: " + a.ErrorText(r));  // unsubscribes
  }
  auto enable = [&](int kind) {
    const cupti::Result e = a.ActivityEnable(kind);
    if (e == cupti::kSuccess) src->enabled_kinds_.push_back(kind);
    return e;
  };
  r = enable(cupti::kKindConcurrentKernel);
  if (r == cupti::kSuccess) r = enable(cupti::kKindExternalCorrelation);
  if (r == cupti::kSuccess && how == CuptiCorrelation::kLaunchCallbacks &&
      !src->EnableLaunchCallbacks())
    how = CuptiCorrelation::kLaunchRecords;
  if (how != CuptiCorrelation::kLaunchCallbacks) {
    a.Unsubscribe(src->subscriber_);
    src->subscriber_ = nullptr;
  }
  if (r == cupti::kSuccess && how == CuptiCorrelation::kLaunchRecords) {
    // Only the launch entry points' API records (CUPTI 12.6+). Both domains: NCCL launches
    // through the driver, or through the CUDA runtime it links statically.
    const bool narrow = a.ActivityEnableDriverApi != nullptr &&
                        a.ActivityEnableRuntimeApi != nullptr &&
                        EnableLaunchIds([&](int domain, uint32_t cbid) {
                          return (domain == cupti::kDomainDriverApi
                                      ? a.ActivityEnableDriverApi(cbid, 1)
                                      : a.ActivityEnableRuntimeApi(cbid, 1)) == cupti::kSuccess;
                        });
    if (!narrow) how = CuptiCorrelation::kAllRecords;
  }
  if (r == cupti::kSuccess && how == CuptiCorrelation::kAllRecords) {
    r = enable(cupti::kKindDriver);
    if (r == cupti::kSuccess) r = enable(cupti::kKindRuntime);
  }
  if (r != cupti::kSuccess) {
    for (int kind : src->enabled_kinds_) a.ActivityDisable(kind);
    if (src->subscriber_ != nullptr) a.Unsubscribe(src->subscriber_);
    src->subscriber_ = nullptr;
    g_active.store(nullptr);
    return Unsupported("CUPTI cannot record kernels: " + a.ErrorText(r) +
                       ". Is there a GPU, and may this user profile it "
                       "(NVreg_RestrictProfilingToAdminUsers)?");
  }
  src->how_ = how;
  src->push_external_.store(how != CuptiCorrelation::kLaunchCallbacks);
  src->clock_.Calibrate();
  return src;
}

bool CuptiSource::EnableLaunchIds(const std::function<bool(int, uint32_t)>& enable) {
  // NCCL launches through the driver: every driver entry point must take. The runtime's are for
  // an NCCL with a static CUDA runtime; an older CUPTI may not know the newest of them.
  bool ok = true;
  for (uint32_t cbid : cupti::kLaunchDriverCallbacks)
    ok = enable(cupti::kDomainDriverApi, cbid) && ok;
  for (uint32_t cbid : cupti::kLaunchRuntimeCallbacks) enable(cupti::kDomainRuntimeApi, cbid);
  return ok;
}

bool CuptiSource::EnableLaunchCallbacks() {
  // Those that took stay enabled on a refusal: Start then unsubscribes, which drops them all.
  return api_.EnableCallback != nullptr && subscriber_ != nullptr &&
         EnableLaunchIds([&](int domain, uint32_t cbid) {
           return api_.EnableCallback(1, subscriber_, domain, cbid) == cupti::kSuccess;
         });
}

std::string CuptiSource::Describe() const {
  const char* how =
      how_ == CuptiCorrelation::kLaunchCallbacks ? "; launches correlated by CUPTI callbacks"
      : how_ == CuptiCorrelation::kLaunchRecords ? "; launches correlated by their API records"
                                                 : "; all driver and runtime API records enabled";
  return std::string("CUPTI kernel records from ") + api_.path +
         (api_.already_loaded ? " (already loaded by the process)" : "") + how;
}

uint64_t CuptiSource::Push(uint64_t ext_id) {
  if (stopped_.load(std::memory_order_relaxed)) return 0;
  uint64_t token = kPushedOwn | (t_scope_depth << kDepthShift);
  if (t_scope_depth < kMaxScopeDepth) t_scope_ids[t_scope_depth] = ext_id;
  ++t_scope_depth;
  if (push_external_.load(std::memory_order_relaxed)) {
    if (api_.ActivityPushExternalCorrelationId(cupti::kExternalKindCustom2, ext_id) ==
        cupti::kSuccess)
      token |= kPushedExternal;
    else
      push_failures_.fetch_add(1, std::memory_order_relaxed);
  }
  return token;
}

void CuptiSource::OnLaunch(void*, int, uint32_t, const void* data) {
  if (!g_launch_seen.load(std::memory_order_relaxed)) g_launch_seen.store(true);
  // Outside a scope: not an NCCL call's launch (the job's own kernels, or NCCL's own thread).
  if (t_scope_depth == 0 || t_scope_depth > kMaxScopeDepth) return;
  const auto* cb = static_cast<const cupti::CallbackData*>(data);
  if (cb == nullptr || cb->callback_site != cupti::kApiEnter) return;
  CuptiSource* self = g_active.load(std::memory_order_acquire);
  if (self == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(self->launch_mu_);
    self->launches_.emplace_back(cb->correlation_id, t_scope_ids[t_scope_depth - 1]);
  }
  self->launch_correlations_.fetch_add(1, std::memory_order_relaxed);
}

void CuptiSource::TakeLaunches() {
  std::vector<std::pair<uint32_t, uint64_t>> launches;
  {
    std::lock_guard<std::mutex> lock(launch_mu_);
    launches.swap(launches_);
  }
  for (const auto& [corr, ext] : launches) correlator_.AddExternalCorrelation(corr, ext);
}

uint64_t CuptiSource::BeginScope(uint64_t ext_id, const TimedCall* members, size_t n) {
  const bool group = (ext_id & kGroupTag) != 0;
  bool nonblocking = false;
  for (size_t i = 0; i < n; ++i) nonblocking |= members[i].nonblocking;
  if (group || nonblocking) {
    std::vector<ScopeMember> m;
    m.reserve(n);
    for (size_t i = 0; i < n; ++i) m.push_back({members[i].uid, members[i].device});
    std::lock_guard<std::mutex> lock(mu_);
    // Registered before the launch: a nonblocking comm's kernel may start before EndScope.
    if (nonblocking) correlator_.AddNonblockingScope(ext_id, m);
    if (group) correlator_.AddGroup(ext_id, std::move(m));
  }
  return Push(ext_id);
}

void CuptiSource::EndScope(uint64_t, uint64_t token, const TimedCall*, size_t) {
  // Popped even after Stop: the id must not stay on this thread's stacks.
  if ((token & kPushedOwn) != 0) t_scope_depth = token >> kDepthShift;
  if ((token & kPushedExternal) != 0)
    api_.ActivityPopExternalCorrelationId(cupti::kExternalKindCustom2, nullptr);
}

void CuptiSource::AddGraphTemplate(uint64_t graph, const TimedCall& call, uint64_t group_id) {
  std::lock_guard<std::mutex> lock(mu_);
  correlator_.AddGraphTemplate(graph, {call.uid, call.device}, group_id);
}

uint64_t CuptiSource::BeginGraphLaunch(uint64_t ext_id, uint64_t graph) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    correlator_.AddGraphLaunch(ext_id, graph);
  }
  return Push(ext_id);
}

void CuptiSource::EndGraphLaunch(uint64_t ext_id, uint64_t token) {
  EndScope(ext_id, token, nullptr, 0);
}

void CuptiSource::ForgetGraph(uint64_t graph) {
  std::lock_guard<std::mutex> lock(mu_);
  correlator_.ForgetGraph(graph);
}

void CuptiSource::OnBufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CuptiSource::OnBufferCompleted(void* context, uint32_t stream_id, uint8_t* buffer, size_t,
                                    size_t valid_size) {
  if (CuptiSource* self = g_active.load()) {
    self->ParseBuffer(buffer, valid_size);
    size_t dropped = 0;
    if (self->api_.ActivityGetNumDroppedRecords != nullptr &&
        self->api_.ActivityGetNumDroppedRecords(context, stream_id, &dropped) == cupti::kSuccess)
      self->dropped_.fetch_add(dropped, std::memory_order_relaxed);
  }
  std::free(buffer);
}

void CuptiSource::ParseBuffer(uint8_t* buffer, size_t valid_size) {
  if (buffer == nullptr || valid_size == 0) return;
  std::vector<KernelActivity> kernels;
  std::vector<std::pair<uint32_t, uint64_t>> correlations;
  void* record = nullptr;
  while (api_.ActivityGetNextRecord(buffer, valid_size, &record) == cupti::kSuccess) {
    uint32_t kind = 0;
    std::memcpy(&kind, record, sizeof kind);
    if (kind == cupti::kKindConcurrentKernel) {
      const auto* k = static_cast<const cupti::KernelRecordPrefix*>(record);
      if (!cupti::IsNcclKernelName(k->name)) continue;
      // A forced flush (GPU progress during a stall, or the end) hands over kernels still
      // running with zero timestamps: no time can be told, so the call goes untimed.
      if (k->start == 0 || k->end == 0 || k->end < k->start) continue;
      // The duration is kept exact; only the start moves to the host clock.
      const int64_t start = clock_.ToMonotonic(k->start);
      const int64_t duration = k->end > k->start ? static_cast<int64_t>(k->end - k->start) : 0;
      kernels.push_back(
          {k->correlation_id, static_cast<int32_t>(k->device_id), start, start + duration});
    } else if (kind == cupti::kKindExternalCorrelation) {
      const auto* e = static_cast<const cupti::ExternalCorrelationRecord*>(record);
      if (e->external_kind == cupti::kExternalKindCustom2) {
        correlations.push_back({e->correlation_id, e->external_id});
        launch_correlations_.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }
  if (kernels.empty() && correlations.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [corr, ext] : correlations) correlator_.AddExternalCorrelation(corr, ext);
  for (const KernelActivity& k : kernels) correlator_.AddKernel(k);
}

void CuptiSource::Collect(bool final, const EmitFn& emit, const NoteFn& note) {
  std::lock_guard<std::mutex> collect(collect_mu_);
  if (!stopped_.load()) {
    clock_.Calibrate();
    // Completed buffers only (a forced flush at the end, or when GPU progress asks while the
    // GPU stalls): kernels still running stay in CUPTI either way.
    const bool forced = final || flush_held_.exchange(false);
    api_.ActivityFlushAll(forced ? cupti::kFlushForced : 0);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    TakeLaunches();
  }
  WidenIfLaunchesUnseen(note);
  std::lock_guard<std::mutex> lock(mu_);
  correlator_.Match(final, emit, note);
}

void CuptiSource::WidenIfLaunchesUnseen(const NoteFn& note) {
  if (how_ == CuptiCorrelation::kAllRecords || widened_ || stopped_.load()) return;
  size_t waiting = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiting = correlator_.pending_kernels();
  }
  // Callbacks that came at all work, even if no launch came inside a scope (a job whose
  // communicators are all nonblocking launches only from NCCL's thread): more would not help.
  const bool seen = launch_correlations_.load() > 0 ||
                    (how_ == CuptiCorrelation::kLaunchCallbacks && g_launch_seen.load());
  if (waiting == 0 || seen) {
    unseen_rounds_ = 0;
    return;
  }
  if (++unseen_rounds_ < 2) return;
  widened_ = true;
  for (int kind : {cupti::kKindDriver, cupti::kKindRuntime})
    if (api_.ActivityEnable(kind) == cupti::kSuccess) enabled_kinds_.push_back(kind);
  push_external_.store(true);  // the API records carry the scopes' ids from now on
  if (note)
    note(std::string("GPU timing: NCCL kernels ran but CUPTI gave no ") +
         (how_ == CuptiCorrelation::kLaunchCallbacks ? "launch callback" : "launch API record") +
         "; every driver and runtime API record is enabled from now on (calls before have no GPU "
         "time)");
}

void CuptiSource::Stop(const EmitFn& emit, const NoteFn& note) {
  if (stopped_.load()) return;
  Collect(/*final=*/true, emit, note);
  std::lock_guard<std::mutex> collect(collect_mu_);
  stopped_.store(true);
  for (int kind : enabled_kinds_) api_.ActivityDisable(kind);
  if (how_ == CuptiCorrelation::kLaunchRecords) {
    for (uint32_t cbid : cupti::kLaunchDriverCallbacks) api_.ActivityEnableDriverApi(cbid, 0);
    for (uint32_t cbid : cupti::kLaunchRuntimeCallbacks) api_.ActivityEnableRuntimeApi(cbid, 0);
  }
  // CUPTI's one subscriber slot goes back: the job may take CUPTI next (the profiler hand-over).
  if (subscriber_ != nullptr) api_.Unsubscribe(subscriber_);
  subscriber_ = nullptr;
  enabled_kinds_.clear();
  api_.ActivityFlushAll(cupti::kFlushForced);
  {
    std::lock_guard<std::mutex> lock(mu_);
    TakeLaunches();
    correlator_.Match(true, emit, note);
  }
  CuptiSource* self = this;
  g_active.compare_exchange_strong(self, nullptr);
}

void CuptiSource::AddStats(GpuTimerStats* s) const {
  std::lock_guard<std::mutex> lock(mu_);
  const CorrelatorStats& c = correlator_.stats();
  s->nccl_kernels += c.kernels;
  s->matched_kernels += c.matched;
  s->unmatched_kernels += c.unmatched;
  s->records += c.records;
  s->skipped_calls += push_failures_.load();
  s->cupti_dropped += dropped_.load();
  s->launch_correlations += launch_correlations_.load();
}

}  // namespace ncclrr::gputiming
