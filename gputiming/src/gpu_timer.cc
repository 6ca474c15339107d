// GpuTimer: picks a source, keeps each thread's open scopes, runs the collector thread, and hands
// CUPTI over to the job when the job starts using it.
#include "ncclrr/gputiming/gpu_timer.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "cuda_driver_api.h"
#include "cupti_source.h"
#include "event_pair_source.h"
#include "ncclrr/gputiming/kernel_correlator.h"
#include "ncclrr/trace/format.h"

namespace ncclrr::gputiming {
namespace {

std::atomic<uint64_t> g_next_timer_id{1};

// What one thread has open. Plain members: each is touched by its own thread only.
struct OpenScope {
  TimingSource* source = nullptr;  // the source that began it ends it, even after a switch
  uint64_t ext_id = 0;
  uint64_t token = 0;
  bool open = false;
  uint64_t marker_token = 0;  // the progress markers' part of the scope (beside CUPTI)
};
struct ThreadScopes {
  uint64_t timer_id = 0;             // scopes of another (older) timer are discarded
  std::vector<TimedCall> group;      // members of the application's open group
  std::vector<TimedCall> launching;  // members of the group whose GroupEnd is in progress
  TimedCall call;
  OpenScope call_scope, group_scope, graph_scope;
};
thread_local ThreadScopes t_scopes;

}  // namespace

SourceChoice SourceChoiceFromString(const std::string& text) {
  if (text == "cupti") return SourceChoice::kCupti;
  if (text == "events" || text == "event-pair" || text == "eventpair")
    return SourceChoice::kEventPair;
  return SourceChoice::kAuto;
}

const char* SourceName(GpuTimeSource source) {
  switch (source) {
    case GpuTimeSource::kCupti:
      return "cupti";
    case GpuTimeSource::kEventPair:
      return "events";
    case GpuTimeSource::kPlugin:
      return "plugin";
  }
  return "unknown";
}

class GpuTimer::Impl {
 public:
  explicit Impl(GpuTimerOptions o) : opt(std::move(o)), id(g_next_timer_id.fetch_add(1)) {
    emit = [this](const GpuTimeRecord& r) { opt.sink(r); };
    note = [this](const std::string& text) {
      if (opt.note) opt.note(NoteLevel::kInfo, "GPU timing: " + text);
    };
  }

  ThreadScopes& Scopes() {
    ThreadScopes& s = t_scopes;
    if (s.timer_id != id) {
      s = ThreadScopes();
      s.timer_id = id;
    }
    return s;
  }
  TimingSource* Active() const { return active.load(std::memory_order_acquire); }

  void StartCollector() {
    if (opt.collect_interval_ms == 0) return;
    collector = std::thread([this] {
      std::unique_lock<std::mutex> lock(collector_mu);
      while (!collector_stop) {
        collector_cv.wait_for(lock, std::chrono::milliseconds(opt.collect_interval_ms));
        if (collector_stop) break;
        lock.unlock();
        Collect();
        lock.lock();
      }
    });
  }

  void Collect() {
    std::lock_guard<std::mutex> lock(switch_mu);
    EventPairSource* m = Markers();
    if (m != nullptr) m->Collect(false, emit, note);
    TimingSource* s = Active();
    if (s == nullptr) return;
    // A stream that has not reached a call for a second: the kernels before it may have ended
    // with their CUPTI records still held in a partly filled buffer, and `status` needs them to
    // tell where each GPU is. At most once a second.
    const int64_t now = MonotonicNs();
    if (m != nullptr && m->Stalled() && now - last_held_flush_ns >= 1'000'000'000) {
      s->FlushHeldRecords();
      last_held_flush_ns = now;
    }
    s->Collect(false, emit, note);
  }

  // The progress markers, while they run beside CUPTI (null otherwise: event pairs mark starts
  // themselves).
  EventPairSource* Markers() const { return markers_on.load(std::memory_order_acquire); }

  // Begins/ends the markers' part of a scope.
  uint64_t BeginMarkers(uint64_t ext, const TimedCall* members, size_t n) {
    EventPairSource* m = Markers();
    return m != nullptr ? m->BeginScope(ext, members, n) : 0;
  }
  void EndMarkers(uint64_t ext, uint64_t token, const TimedCall* members, size_t n) {
    if (token != 0 && markers != nullptr) markers->EndScope(ext, token, members, n);
  }

  GpuTimerOptions opt;
  const uint64_t id;
  EmitFn emit;
  NoteFn note;
  std::atomic<TimingSource*> active{nullptr};
  std::mutex switch_mu;                                // source switches, collections and Stop
  std::vector<std::unique_ptr<TimingSource>> sources;  // every source used; alive until the end
  std::unique_ptr<EventPairSource> markers;  // progress markers beside CUPTI; alive until the end
  std::atomic<EventPairSource*> markers_on{nullptr};
  int64_t last_held_flush_ns = 0;  // under switch_mu
  std::string description;
  std::atomic<uint64_t> next_group{1}, next_launch{1};
  std::atomic<uint64_t> bad_uids{0};
  bool stopped = false;
  std::thread collector;
  std::mutex collector_mu;
  std::condition_variable collector_cv;
  bool collector_stop = false;
};

GpuTimer::GpuTimer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GpuTimer::~GpuTimer() { (void)Stop(); }

StatusOr<std::unique_ptr<GpuTimer>> GpuTimer::Start(GpuTimerOptions options) {
  if (!options.sink) return InvalidArgument("GpuTimer needs a sink for its records");
  auto impl = std::make_unique<Impl>(std::move(options));
  const GpuTimerOptions& o = impl->opt;
  std::string cupti_why, events_why;
  if (o.choice != SourceChoice::kEventPair) {
    const CuptiCorrelation how = o.api_records == ApiRecords::kAll ? CuptiCorrelation::kAllRecords
                                 : o.api_records == ApiRecords::kLaunchesOnly
                                     ? CuptiCorrelation::kLaunchRecords
                                     : CuptiCorrelation::kLaunchCallbacks;
    auto cupti = CuptiSource::Start(o.cupti_library, how);
    if (cupti.ok()) {
      impl->description = (*cupti)->Describe();
      impl->sources.push_back(std::move(cupti).value());
    } else {
      cupti_why = cupti.status().message();
      if (o.choice == SourceChoice::kCupti)
        return Status(cupti.status().code(), "GPU timing with CUPTI cannot start: " + cupti_why);
    }
  }
  if (impl->sources.empty()) {
    auto events = EventPairSource::Start(o.cuda_driver_library);
    if (!events.ok()) {
      events_why = events.status().message();
      std::string msg = "GPU timing cannot start. ";
      if (!cupti_why.empty()) msg += "CUPTI: " + cupti_why + ". ";
      msg += "CUDA events: " + events_why;
      return Status(events.status().code(), msg);
    }
    impl->description = (*events)->Describe();
    if (!cupti_why.empty()) impl->description += "; CUPTI not used: " + cupti_why;
    impl->sources.push_back(std::move(events).value());
  }
  impl->active.store(impl->sources.back().get());
  if (o.progress && impl->sources.back()->kind() == GpuTimeSource::kCupti) {
    auto markers =
        EventPairSource::Start(o.cuda_driver_library, EventPairSource::Mode::kProgressMarkers);
    if (markers.ok()) {
      impl->description += "; GPU progress from " + (*markers)->Describe();
      impl->markers = std::move(markers).value();
      impl->markers_on.store(impl->markers.get());
    } else {
      impl->description += "; no GPU progress (" + markers.status().message() + ")";
    }
  }
  if (impl->opt.note) {
    impl->opt.note(NoteLevel::kInfo, "GPU timing from " + impl->description);
    if (impl->markers != nullptr || impl->sources.back()->kind() == GpuTimeSource::kEventPair)
      impl->opt.note(NoteLevel::kInfo, format::kGpuProgressNote);
  }
  impl->StartCollector();
  return std::unique_ptr<GpuTimer>(new GpuTimer(std::move(impl)));
}

GpuTimeSource GpuTimer::source() const {
  TimingSource* s = impl_->Active();
  return s != nullptr ? s->kind() : GpuTimeSource::kEventPair;
}

std::string GpuTimer::Describe() const {
  std::lock_guard<std::mutex> lock(impl_->switch_mu);
  return impl_->description;
}

void GpuTimer::BeginCall(const TimedCall& call) {
  ThreadScopes& s = impl_->Scopes();
  s.call_scope = {};
  TimingSource* src = impl_->Active();
  if (src == nullptr) return;
  if ((call.uid & kTagMask) != 0 || call.uid == 0) {
    impl_->bad_uids.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  s.call = call;
  const uint64_t markers = impl_->BeginMarkers(call.uid, &s.call, 1);
  s.call_scope = {src, call.uid, src->BeginScope(call.uid, &s.call, 1), true, markers};
}

void GpuTimer::EndCall() {
  ThreadScopes& s = impl_->Scopes();
  if (!s.call_scope.open) return;
  s.call_scope.source->EndScope(s.call_scope.ext_id, s.call_scope.token, &s.call, 1);
  impl_->EndMarkers(s.call_scope.ext_id, s.call_scope.marker_token, &s.call, 1);
  s.call_scope = {};
}

void GpuTimer::AddGroupMember(const TimedCall& call) {
  if ((call.uid & kTagMask) != 0 || call.uid == 0) {
    impl_->bad_uids.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  impl_->Scopes().group.push_back(call);
}

void GpuTimer::BeginGroupEnd() {
  ThreadScopes& s = impl_->Scopes();
  s.group_scope = {};
  s.launching.swap(s.group);
  s.group.clear();
  TimingSource* src = impl_->Active();
  if (src == nullptr || s.launching.empty()) return;
  const uint64_t ext = kGroupTag | impl_->next_group.fetch_add(1, std::memory_order_relaxed);
  const uint64_t markers = impl_->BeginMarkers(ext, s.launching.data(), s.launching.size());
  s.group_scope = {src, ext, src->BeginScope(ext, s.launching.data(), s.launching.size()), true,
                   markers};
}

void GpuTimer::EndGroupEnd() {
  ThreadScopes& s = impl_->Scopes();
  if (s.group_scope.open) {
    s.group_scope.source->EndScope(s.group_scope.ext_id, s.group_scope.token, s.launching.data(),
                                   s.launching.size());
    impl_->EndMarkers(s.group_scope.ext_id, s.group_scope.marker_token, s.launching.data(),
                      s.launching.size());
  }
  s.group_scope = {};
  s.launching.clear();
}

void GpuTimer::DiscardGroup() { impl_->Scopes().group.clear(); }

void GpuTimer::AddGraphTemplate(uint64_t graph, const TimedCall& call, uint64_t group_id) {
  if (TimingSource* src = impl_->Active()) src->AddGraphTemplate(graph, call, group_id);
}

void GpuTimer::BeginGraphLaunch(uint64_t graph) {
  ThreadScopes& s = impl_->Scopes();
  s.graph_scope = {};
  TimingSource* src = impl_->Active();
  if (src == nullptr) return;
  const uint64_t ext = kGraphLaunchTag | impl_->next_launch.fetch_add(1, std::memory_order_relaxed);
  s.graph_scope = {src, ext, src->BeginGraphLaunch(ext, graph), true};
}

void GpuTimer::EndGraphLaunch() {
  ThreadScopes& s = impl_->Scopes();
  if (s.graph_scope.open)
    s.graph_scope.source->EndGraphLaunch(s.graph_scope.ext_id, s.graph_scope.token);
  s.graph_scope = {};
}

void GpuTimer::ForgetGraph(uint64_t graph) {
  if (TimingSource* src = impl_->Active()) src->ForgetGraph(graph);
}

void GpuTimer::OnForeignCuptiUse(const char* api) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.switch_mu);
  TimingSource* src = m.Active();
  if (m.stopped || src == nullptr || src->kind() != GpuTimeSource::kCupti) return;
  m.note(std::string("the job itself uses CUPTI (") + (api != nullptr ? api : "?") +
         "): ncclrr hands CUPTI over to it and times calls with CUDA events from now on");
  src->Stop(m.emit, m.note);  // flushes and disables what ncclrr enabled, emits what it had
  if (EventPairSource* markers = m.markers_on.exchange(nullptr)) markers->Stop(m.emit, m.note);
  auto events = EventPairSource::Start(m.opt.cuda_driver_library);
  if (!events.ok()) {
    m.note("CUDA events are not available either (" + events.status().message() +
           "); later calls have no GPU time");
    m.active.store(nullptr, std::memory_order_release);
    m.description += "; stopped when the job started using CUPTI";
    return;
  }
  m.description = (*events)->Describe() + "; CUPTI handed over to the job (" +
                  (api != nullptr ? api : "?") + ")";
  m.sources.push_back(std::move(events).value());
  m.active.store(m.sources.back().get(), std::memory_order_release);
  if (m.opt.note) m.opt.note(NoteLevel::kInfo, format::kGpuProgressNote);
}

void GpuTimer::Collect() { impl_->Collect(); }

Status GpuTimer::Stop() {
  Impl& m = *impl_;
  {
    std::lock_guard<std::mutex> lock(m.collector_mu);
    m.collector_stop = true;
  }
  m.collector_cv.notify_all();
  if (m.collector.joinable()) m.collector.join();
  std::lock_guard<std::mutex> lock(m.switch_mu);
  if (m.stopped) return Status::Ok();
  m.stopped = true;
  if (TimingSource* src = m.Active()) src->Stop(m.emit, m.note);
  if (EventPairSource* markers = m.markers_on.exchange(nullptr)) markers->Stop(m.emit, m.note);
  if (m.bad_uids.load() > 0)
    m.note(std::to_string(m.bad_uids.load()) +
           " calls had uids GPU timing cannot use (0 or "
           "with bit 62/63 set) and were not timed");
  m.active.store(nullptr);
  return Status::Ok();
}

GpuTimerStats GpuTimer::Stats() const {
  GpuTimerStats s;
  std::lock_guard<std::mutex> lock(impl_->switch_mu);
  for (const auto& src : impl_->sources) src->AddStats(&s);
  if (impl_->markers) impl_->markers->AddStats(&s);
  s.skipped_calls += impl_->bad_uids.load();
  return s;
}

}  // namespace ncclrr::gputiming
