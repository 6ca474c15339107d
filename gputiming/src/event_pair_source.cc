#include "event_pair_source.h"

#include <algorithm>
#include <cstdint>

#include "ncclrr/trace/records.h"

namespace ncclrr::gputiming {
namespace {

constexpr int64_t kRefPeriodNs = 1'000'000'000;  // float ms keeps ~60 ns over one second
constexpr size_t kMaxRefs = 16;
constexpr size_t kMaxPending = 1 << 16;  // pairs not yet complete; past it calls go untimed
// How long a reference event may take. On an idle private stream it completes in microseconds,
// but it can queue behind other streams' work where streams share a hardware queue
// (CUDA_DEVICE_MAX_CONNECTIONS, or more streams than queues): behind an NCCL kernel that waits
// for another thread's call, or a hung one. Waiting without a bound would stop the collector and
// GpuTimer::Stop (at exit) for as long.
constexpr int64_t kRefWaitNs = 5'000'000;

}  // namespace

StatusOr<std::unique_ptr<EventPairSource>> EventPairSource::Start(const std::string& driver_library,
                                                                  Mode mode) {
  auto api = LoadEventDriver(driver_library);
  if (!api.ok()) return api.status();
  return std::unique_ptr<EventPairSource>(new EventPairSource(std::move(api).value(), mode));
}

EventPairSource::~EventPairSource() {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Pair& p : pending_) Release(p);
  pending_.clear();
}

std::string EventPairSource::Describe() const {
  if (mode_ == Mode::kProgressMarkers)
    return "a CUDA event before each call on its stream, for GPU progress (driver " + api_.path +
           ")";
  return "CUDA event pairs on each call's stream (driver " + api_.path + ")";
}

cuda::Event EventPairSource::TakeEvent(cuda::Context ctx) {
  ContextState& cs = contexts_[ctx];
  if (!cs.free_events.empty()) {
    cuda::Event e = cs.free_events.back();
    cs.free_events.pop_back();
    return e;
  }
  cuda::Event e = nullptr;
  if (api_.CtxPushCurrent(ctx) != cuda::kSuccess) return nullptr;
  // A progress marker only has to be seen reached: without a timestamp it costs the call less.
  const unsigned flags =
      mode_ == Mode::kProgressMarkers ? cuda::kEventDisableTiming : cuda::kEventDefault;
  if (api_.EventCreate(&e, flags) != cuda::kSuccess) e = nullptr;
  cuda::Context popped = nullptr;
  api_.CtxPopCurrent(&popped);
  return e;
}

void EventPairSource::Release(const Pair& p) {
  ContextState& cs = contexts_[p.ctx];
  if (p.start != nullptr) cs.free_events.push_back(p.start);
  if (p.end != nullptr) cs.free_events.push_back(p.end);
}

uint64_t EventPairSource::BeginScope(uint64_t, const TimedCall* members, size_t n) {
  // One pair per distinct stream among the members that can be timed this way.
  auto pairs = std::make_unique<std::vector<Pair>>();
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < n; ++i) {
    const TimedCall& c = members[i];
    if (c.captured || c.nonblocking || stopped_ || pending_.size() >= kMaxPending) {
      ++skipped_;
      continue;
    }
    const auto stream = reinterpret_cast<cuda::Stream>(c.stream);
    auto same = std::find_if(pairs->begin(), pairs->end(),
                             [&](const Pair& p) { return p.stream == stream; });
    if (same != pairs->end()) {
      same->uids.push_back(c.uid);
      continue;
    }
    Pair p;
    p.uids = {c.uid};
    p.stream = stream;
    p.host_ns = MonotonicNs();  // before the record: the GPU cannot reach the event earlier
    if (api_.StreamGetCtx(stream, &p.ctx) != cuda::kSuccess ||
        (p.start = TakeEvent(p.ctx)) == nullptr ||
        api_.EventRecord(p.start, stream) != cuda::kSuccess) {
      if (p.start != nullptr) Release(p);
      ++failed_;
      continue;
    }
    pairs->push_back(std::move(p));
  }
  if (pairs->empty()) return 0;
  return reinterpret_cast<uint64_t>(pairs.release());
}

void EventPairSource::EndScope(uint64_t, uint64_t token, const TimedCall*, size_t) {
  if (token == 0) return;
  std::unique_ptr<std::vector<Pair>> pairs(reinterpret_cast<std::vector<Pair>*>(token));
  std::lock_guard<std::mutex> lock(mu_);
  for (Pair& p : *pairs) {
    if (mode_ == Mode::kProgressMarkers) {
      pending_.push_back(std::move(p));
      continue;
    }
    p.end = TakeEvent(p.ctx);
    if (p.end == nullptr || api_.EventRecord(p.end, p.stream) != cuda::kSuccess) {
      Release(p);
      ++failed_;
      continue;
    }
    pending_.push_back(std::move(p));
  }
}

uint64_t EventPairSource::BeginGraphLaunch(uint64_t, uint64_t) {
  // A graph launch bracketed by events would time the whole graph, not its NCCL kernels.
  std::lock_guard<std::mutex> lock(mu_);
  ++skipped_;
  return 0;
}

EventPairSource::RefState EventPairSource::EnsureRef(ContextState& cs, cuda::Context ctx,
                                                     int64_t now) {
  if (!cs.refs.empty() && now - cs.refs.back().mono_ns < kRefPeriodNs) return RefState::kReady;
  if (api_.CtxPushCurrent(ctx) != cuda::kSuccess) return RefState::kFailed;
  bool ok = cs.private_stream != nullptr ||
            api_.StreamCreate(&cs.private_stream, cuda::kStreamNonBlocking) == cuda::kSuccess;
  // The private stream is idle: an event completes as soon as the GPU sees it, between the two
  // host reads. The tightest of three brackets, each with its own event (the kept event's GPU
  // time must be the kept bracket's): another thread's work can stretch one. Polled, not
  // synchronized: a reference that does not come within kRefWaitNs is given up.
  Ref ref{nullptr, 0};
  int64_t best = INT64_MAX;
  bool timed_out = false;
  for (int i = 0; i < 3 && ok; ++i) {
    cuda::Event e = nullptr;
    if (api_.EventCreate(&e, cuda::kEventDefault) != cuda::kSuccess) break;
    const int64_t t0 = MonotonicNs();
    cuda::Result q = api_.EventRecord(e, cs.private_stream);
    if (q == cuda::kSuccess) {
      while ((q = api_.EventQuery(e)) == cuda::kNotReady && MonotonicNs() - t0 < kRefWaitNs) {
      }
    }
    const int64_t t1 = MonotonicNs();
    if (q == cuda::kSuccess && t1 - t0 < best) {
      if (ref.event != nullptr) api_.EventDestroy(ref.event);
      ref = {e, t0 + (t1 - t0) / 2};
      best = t1 - t0;
    } else {
      api_.EventDestroy(e);  // released once it completes
    }
    timed_out = q == cuda::kNotReady;
    if (q != cuda::kSuccess) break;
  }
  ok = ok && ref.event != nullptr;
  cuda::Context popped = nullptr;
  api_.CtxPopCurrent(&popped);
  if (!ok) {
    if (!cs.refs.empty()) return RefState::kReady;  // the older reference still serves
    return timed_out ? RefState::kLater : RefState::kFailed;
  }
  cs.refs.push_back(ref);
  if (cs.refs.size() > kMaxRefs) {
    api_.EventDestroy(cs.refs.front().event);
    cs.refs.erase(cs.refs.begin());
  }
  return RefState::kReady;
}

bool EventPairSource::TimeOf(const ContextState& cs, cuda::Event e, int64_t host_ns, int64_t* out) {
  const std::vector<Ref>& refs = cs.refs;
  if (refs.empty()) return false;
  // The latest reference taken before the event was recorded keeps the elapsed time positive and
  // short; an event older than every reference is measured backwards from the first.
  auto it = std::upper_bound(refs.begin(), refs.end(), host_ns,
                             [](int64_t v, const Ref& r) { return v < r.mono_ns; });
  const Ref& ref = it == refs.begin() ? refs.front() : *(it - 1);
  float ms = 0;
  if (api_.EventElapsedTime(&ms, ref.event, e) != cuda::kSuccess) return false;
  *out = ref.mono_ns + static_cast<int64_t>(static_cast<double>(ms) * 1e6);
  return true;
}

struct EventPairSource::Round {
  bool final = false;
  int64_t now = 0;
  const EmitFn* emit = nullptr;
  std::deque<Pair> work, still, done;  // done: their events go back to the pools
  std::vector<std::pair<cuda::Context, ContextState*>> seen;
  std::vector<cuda::Context> with_ref, ref_later;
  uint64_t completed = 0, records = 0, skipped = 0, failed = 0, marks = 0;

  const ContextState& StateOf(cuda::Context ctx) const {
    return *std::find_if(seen.begin(), seen.end(), [&](const auto& s) {
              return s.first == ctx;
            })->second;
  }
  bool HaveRef(cuda::Context ctx) const {
    return std::find(with_ref.begin(), with_ref.end(), ctx) != with_ref.end();
  }
  bool RefLater(cuda::Context ctx) const {
    return std::find(ref_later.begin(), ref_later.end(), ctx) != ref_later.end();
  }
};

void EventPairSource::Collect(bool final, const EmitFn& emit, const NoteFn& note) {
  cuda::RelaxedCaptureScope relaxed(api_);
  std::lock_guard<std::mutex> collect(collect_mu_);
  Round r;
  r.final = final;
  r.now = MonotonicNs();
  r.emit = &emit;
  // The pending pairs are taken out under mu_ and read without it: the calls' threads take mu_
  // at every call, and each pair costs three driver calls here (thousands per round in a loop of
  // small calls), which the calls must not wait for. Pairs that end meanwhile wait for the next
  // round.
  {
    std::lock_guard<std::mutex> lock(mu_);
    r.work.swap(pending_);
    for (const Pair& p : r.work)
      if (std::none_of(r.seen.begin(), r.seen.end(),
                       [&](const auto& s) { return s.first == p.ctx; }))
        r.seen.emplace_back(p.ctx, &contexts_[p.ctx]);  // element addresses outlive rehashing
  }
  // The references of those contexts are renewed first (each can wait for the GPU, kRefWaitNs).
  // Progress markers have no timestamp: a start mark takes the time the marker was seen reached.
  for (const auto& [ctx, cs] : r.seen) {
    if (mode_ == Mode::kProgressMarkers) break;
    const RefState state = EnsureRef(*cs, ctx, r.now);
    if (state == RefState::kReady) r.with_ref.push_back(ctx);
    if (state == RefState::kLater) r.ref_later.push_back(ctx);
  }
  if (mode_ == Mode::kTiming)
    CollectTiming(r);
  else
    CollectMarkers(r);
  uint64_t failed_total = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Pair& p : r.done) Release(p);
    // The unfinished pairs are older than any that ended meanwhile: they stay in front.
    for (Pair& p : pending_) r.still.push_back(std::move(p));
    pending_.swap(r.still);
    completed_ += r.completed;
    records_ += r.records;
    skipped_ += r.skipped;
    failed_ += r.failed;
    start_marks_ += r.marks;
    failed_total = failed_;
  }
  if (final && failed_total > 0 && note)
    note(std::to_string(failed_total) +
         " calls could not be timed with CUDA events (event creation, "
         "recording or reading failed)");
}

void EventPairSource::CollectTiming(Round& r) {
  for (Pair& p : r.work) {
    const ContextState& cs = r.StateOf(p.ctx);
    const bool have_ref = r.HaveRef(p.ctx);
    const cuda::Result q = api_.EventQuery(p.end);
    if (q == cuda::kNotReady) {
      if (r.final) {
        ++r.skipped;  // never wait at the end: a hung collective must not hang the exit
        r.done.push_back(std::move(p));
      } else {
        MaybeMarkStart(p, cs, have_ref, r);
        r.still.push_back(std::move(p));
      }
      continue;
    }
    if (!have_ref && !r.final && r.RefLater(p.ctx)) {
      r.still.push_back(std::move(p));  // its context's first reference is still behind the GPU
      continue;
    }
    int64_t start = 0, end = 0;
    if (q != cuda::kSuccess || !have_ref || !TimeOf(cs, p.start, p.host_ns, &start) ||
        !TimeOf(cs, p.end, p.host_ns, &end)) {
      ++r.failed;
      r.done.push_back(std::move(p));
      continue;
    }
    ++r.completed;
    // The GPU reaches the start event only after the host recorded it: what the reference's
    // bracket leaves uncertain (microseconds) must not put it earlier.
    start = std::max(start, p.host_ns);
    for (uint64_t uid : p.uids) {
      GpuTimeRecord g{};
      g.call_uid = uid;
      g.start_ns = start;
      g.end_ns = std::max(start, end);
      g.source = static_cast<uint8_t>(GpuTimeSource::kEventPair);
      (*r.emit)(g);
      ++r.records;
    }
    r.done.push_back(std::move(p));
  }
}

void EventPairSource::CollectMarkers(Round& r) {
  // Per stream, the newest marker the GPU reached: the markers before it on that stream are done
  // (their kernels ended before the stream got further), the ones after it are not reached yet.
  // Scanned from the newest, so each stream costs the queries down to its newest reached marker.
  enum : uint8_t { kNotReached, kNewestReached, kPassed };
  std::vector<uint8_t> state(r.work.size(), kNotReached);
  std::vector<cuda::Stream> resolved;
  for (size_t i = r.work.size(); i-- > 0;) {
    const Pair& p = r.work[i];
    if (std::find(resolved.begin(), resolved.end(), p.stream) != resolved.end()) {
      state[i] = kPassed;
    } else if (api_.EventQuery(p.start) == cuda::kSuccess) {
      state[i] = kNewestReached;
      resolved.push_back(p.stream);
    }
  }
  constexpr int64_t kStalledNs = 1'000'000'000;
  bool stalled = false;
  for (size_t i = 0; i < r.work.size(); ++i) {
    Pair& p = r.work[i];
    stalled |= state[i] == kNotReached && r.now - p.host_ns > kStalledNs;
    if (state[i] == kPassed || r.final) {
      ++r.completed;
      r.done.push_back(std::move(p));
      continue;
    }
    if (state[i] == kNewestReached) MaybeMarkStart(p, r.StateOf(p.ctx), r.HaveRef(p.ctx), r);
    r.still.push_back(std::move(p));
  }
  stalled_.store(stalled, std::memory_order_relaxed);
}

void EventPairSource::MaybeMarkStart(Pair& p, const ContextState& cs, bool have_ref, Round& r) {
  if (p.start_marked || r.final || api_.EventQuery(p.start) != cuda::kSuccess) return;
  if (p.started_seen_ns == 0) {
    p.started_seen_ns = r.now;  // one more round: calls that end soon get no mark
    return;
  }
  int64_t start = 0;
  if (!have_ref || !TimeOf(cs, p.start, p.host_ns, &start)) start = p.started_seen_ns;
  start = std::max(start, p.host_ns);
  for (uint64_t uid : p.uids) {
    GpuTimeRecord g{};
    g.call_uid = uid;
    g.start_ns = start;
    g.end_ns = 0;  // a start mark: still running when seen
    g.source = static_cast<uint8_t>(GpuTimeSource::kEventPair);
    (*r.emit)(g);
    ++r.marks;
  }
  p.start_marked = true;
}

void EventPairSource::Stop(const EmitFn& emit, const NoteFn& note) {
  Collect(/*final=*/true, emit, note);
  std::lock_guard<std::mutex> collect(collect_mu_);
  std::lock_guard<std::mutex> lock(mu_);
  stopped_ = true;
  for (auto& [ctx, cs] : contexts_) {
    for (cuda::Event e : cs.free_events) api_.EventDestroy(e);
    for (const Ref& r : cs.refs) api_.EventDestroy(r.event);
    cs.free_events.clear();
    cs.refs.clear();
  }
}

void EventPairSource::AddStats(GpuTimerStats* s) const {
  std::lock_guard<std::mutex> lock(mu_);
  s->start_marks += start_marks_;
  if (mode_ == Mode::kProgressMarkers) return;  // the timing source counts the calls
  s->nccl_kernels += completed_;
  s->matched_kernels += completed_;
  s->records += records_;
  s->skipped_calls += skipped_ + failed_;
}

}  // namespace ncclrr::gputiming
