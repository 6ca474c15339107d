// SketchDevice: per CUDA context, a module (the embedded fatbin), device scratch and control
// words per slot, and one pinned host-mapped region holding every slot's header, partials and
// samples. Enqueue fills kabi::Jobs and launches ncclrr_sketch_<dtype> on the caller's stream;
// Poll reads what the last CTA published (kernel_body.h, FinishJob).
#include "ncclrr/sketch/device.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <optional>

#include "cuda_driver.h"
#include "fatbin.h"
#include "launch_plan.h"
#include "ncclrr/trace/records.h"

namespace ncclrr::sketch {
namespace {

enum class SlotState : uint8_t { kFree, kInFlight, kCaptured, kAbandoned };

struct Slot {
  SlotState state = SlotState::kFree;
  uint64_t consumed = 0;  // last generation the host has read (or let go unread)
  uint64_t base = 0;      // generation before this use's first launch: results count from it
  uint64_t expected = 0;  // generation that must be published before the slot is reused
  SketchRequest request;
  kabi::Job host_view{};  // the job with host pointers, for reading results
};

// A caller stream's side stream, for EnqueueForked.
struct SideStream {
  cu::CUstream user = nullptr, side = nullptr;
};
inline constexpr size_t kMaxSideStreams = 32;  // per context; more streams are not forked

// Handles that name a different stream on each thread (the legacy default stream, and the
// per-thread default stream): one side stream for all of them would make one thread's stream
// wait for another thread's work. Not forked.
bool SharedStreamHandle(cu::CUstream s) { return uintptr_t(s) <= 2; }

struct Context {
  cu::CUcontext ctx = nullptr;
  cu::CUmodule module = nullptr;
  cu::CUfunction fn[kNumDtypes] = {};
  cu::CUdeviceptr scratch = 0, control = 0, pinned_dev = 0;
  uint8_t* pinned = nullptr;
  int device = -1, cc_major = 0, cc_minor = 0, sms = 0;
  std::vector<Slot> slots;
  std::vector<SideStream> sides;         // under fork_mu
  std::vector<cu::CUevent> free_events;  // under fork_mu
};

size_t RoundUp(size_t v, size_t a) { return (v + a - 1) / a * a; }

}  // namespace

struct SketchDevice::Impl {
  SketchDeviceOptions opt;
  cu::Driver d;
  // `mu` guards the contexts and slots and is never held across a CUDA call that can wait for
  // the GPU: a context's set-up (module load, allocations) and kernel launches (a full launch
  // queue waits for the stream) run outside it. Otherwise a thread blocked there, behind an NCCL
  // kernel waiting for another thread's call, would stop that thread's sketches (and the poller,
  // and the exit's last poll) at this lock: a deadlock. `init_mu` serializes set-ups.
  std::mutex mu, init_mu;
  std::mutex fork_mu;  // side streams and events; held only across calls that do not wait
  std::vector<std::unique_ptr<Context>> contexts;  // grows under init_mu and mu; never shrinks
  size_t off_main = 0, off_race = 0, off_samples = 0, slot_bytes = 0, scratch_bytes = 0;

  Status InitContext(Context& c);
  std::optional<uint32_t> FindContext(cu::CUcontext ctx) const;  // mu held
  // `lock` holds mu on entry and on return; released while a new context is set up.
  StatusOr<uint32_t> ContextFor(cu::CUstream stream, std::unique_lock<std::mutex>& lock);
  const kabi::SlotHeader* Header(const Context& c, uint32_t s) const {
    return reinterpret_cast<const kabi::SlotHeader*>(c.pinned + s * slot_bytes);
  }
  void FillJob(Context& c, uint32_t s, const void* data, kabi::Job& dev, kabi::Job& host);
  int AcquireSlot(Context& c);
  // How many of the GPU's SMs a sketch may hold (TileCap).
  enum class Grid {
    kOneWave,  // all of them, each with as many CTAs as fit at once (per sketch: a fused launch
               // of several large sketches is several waves)
    kHalfSms,  // half of them, one CTA each: a forked sketch leaves the rest to the collective
  };
  uint32_t TileCap(const Context& c, Grid grid) const;
  // SketchDevice::Enqueue with at most TileCap(grid) CTAs per sketch.
  StatusOr<std::vector<SlotId>> EnqueueOn(void* stream,
                                          const std::vector<DeviceSketchRequest>& requests,
                                          Grid grid);
  // EnqueueForked's side stream for `user` and an event, or false when out of either.
  bool ForkResources(Context& c, cu::CUstream user, cu::CUstream* side, cu::CUevent* event);
  void GiveEvent(Context& c, cu::CUevent e);
  // `max_tiles` is raised to the request's block count (one tile per block at least), within
  // opt.max_tiles.
  Status CheckRequest(const DeviceSketchRequest& r, uint32_t max_tiles, kabi::Job& job) const;
};

Status SketchDevice::Impl::InitContext(Context& c) {
  cu::RelaxedCaptureScope relaxed(d);  // the user's stream may be capturing right now
  cu::CUresult r = d.CtxPushCurrent(c.ctx);
  if (r != cu::kSuccess)
    return Unsupported(d.Error(r, "sketch: cannot enter the stream's context"));
  auto fail = [&](cu::CUresult err, const std::string& what) {
    cu::CUcontext popped;
    d.CtxPopCurrent(&popped);
    return Unsupported(d.Error(err, "sketch: " + what));
  };
  d.CtxGetDevice(&c.device);
  d.DeviceGetAttribute(&c.cc_major, cu::kAttrComputeCapabilityMajor, c.device);
  d.DeviceGetAttribute(&c.cc_minor, cu::kAttrComputeCapabilityMinor, c.device);
  d.DeviceGetAttribute(&c.sms, cu::kAttrMultiprocessorCount, c.device);
  size_t image_size = 0;
  const unsigned char* image = SketchFatbin(&image_size);
  r = d.ModuleLoadData(&c.module, image);
  if (r != cu::kSuccess)
    return fail(r, "cannot load the sketch kernels (sm_75/sm_90 code, compute_90 PTX) on device " +
                       std::to_string(c.device) + " (sm_" + std::to_string(c.cc_major) +
                       std::to_string(c.cc_minor) + "); GPU sketches are off for it");
  for (int t = 0; t < kNumDtypes; ++t) {
    const std::string name = "ncclrr_sketch_" + std::to_string(t);
    r = d.ModuleGetFunction(&c.fn[t], c.module, name.c_str());
    if (r != cu::kSuccess) return fail(r, "kernel " + name + " missing from the embedded image");
  }
  const size_t slots = opt.slots;
  if ((r = d.MemAlloc(&c.scratch, slots * scratch_bytes)) != cu::kSuccess ||
      (r = d.MemAlloc(&c.control, slots * sizeof(kabi::SlotControl))) != cu::kSuccess)
    return fail(r, "cannot allocate " + std::to_string(slots * scratch_bytes) +
                       " bytes of device scratch (lower SketchDeviceOptions::slots)");
  // Zero the control words on a private non-blocking stream: the legacy stream would synchronize
  // with (and break the capture of) the user's streams.
  cu::CUstream zero_stream = nullptr;
  if ((r = d.StreamCreate(&zero_stream, cu::kStreamNonBlocking)) != cu::kSuccess ||
      (r = d.MemsetD8Async(c.control, 0, slots * sizeof(kabi::SlotControl), zero_stream)) !=
          cu::kSuccess ||
      (r = d.StreamSynchronize(zero_stream)) != cu::kSuccess)
    return fail(r, "cannot clear the sketch control words");
  d.StreamDestroy(zero_stream);
  void* host = nullptr;
  r = d.MemHostAlloc(&host, slots * slot_bytes, cu::kHostAllocPortable | cu::kHostAllocDeviceMap);
  if (r != cu::kSuccess)
    return fail(
        r, "cannot allocate " + std::to_string(slots * slot_bytes) + " bytes of pinned memory");
  c.pinned = static_cast<uint8_t*>(host);
  std::memset(c.pinned, 0, slots * slot_bytes);
  if ((r = d.MemHostGetDevicePointer(&c.pinned_dev, host, 0)) != cu::kSuccess)
    return fail(r, "pinned memory is not mapped into the device");
  c.slots.assign(slots, Slot{});
  cu::CUcontext popped;
  d.CtxPopCurrent(&popped);
  return Status::Ok();
}

std::optional<uint32_t> SketchDevice::Impl::FindContext(cu::CUcontext ctx) const {
  for (uint32_t i = 0; i < contexts.size(); ++i)
    if (contexts[i]->ctx == ctx) return i;
  return std::nullopt;
}

StatusOr<uint32_t> SketchDevice::Impl::ContextFor(cu::CUstream stream,
                                                  std::unique_lock<std::mutex>& lock) {
  cu::CUcontext ctx = nullptr;
  const cu::CUresult r = d.StreamGetCtx(stream, &ctx);
  if (r != cu::kSuccess || !ctx)
    return InvalidArgument(d.Error(r,
                                   "sketch: the stream has no CUDA context (is a device "
                                   "current on this thread?)"));
  if (auto i = FindContext(ctx)) return *i;
  lock.unlock();  // the set-up can wait for the GPU: other contexts' sketches go on meanwhile
  std::lock_guard<std::mutex> one_setup(init_mu);
  lock.lock();
  if (auto i = FindContext(ctx)) return *i;  // another thread set it up meanwhile
  lock.unlock();
  auto c = std::make_unique<Context>();
  c->ctx = ctx;
  const Status s = InitContext(*c);
  lock.lock();
  NCCLRR_RETURN_IF_ERROR(s);
  contexts.push_back(std::move(c));
  return uint32_t(contexts.size() - 1);
}

int SketchDevice::Impl::AcquireSlot(Context& c) {
  for (uint32_t s = 0; s < c.slots.size(); ++s) {
    Slot& slot = c.slots[s];
    // Abandoned: a plain launch, or a graph's last replay, that had not published yet.
    if (slot.state == SlotState::kAbandoned && Header(c, s)->done >= slot.expected) {
      slot.consumed = Header(c, s)->done;
      slot.state = SlotState::kFree;
    }
    if (slot.state == SlotState::kFree) return int(s);
  }
  return -1;
}

void SketchDevice::Impl::FillJob(Context& c, uint32_t s, const void* data, kabi::Job& dev,
                                 kabi::Job& host) {
  const size_t base = s * slot_bytes;
  dev.data = data;
  dev.scratch = reinterpret_cast<core::Partial*>(c.scratch + s * scratch_bytes);
  dev.control = reinterpret_cast<kabi::SlotControl*>(c.control + s * sizeof(kabi::SlotControl));
  dev.header = reinterpret_cast<kabi::SlotHeader*>(c.pinned_dev + base);
  dev.out_main = reinterpret_cast<core::Partial*>(c.pinned_dev + base + off_main);
  dev.out_race = reinterpret_cast<core::Partial*>(c.pinned_dev + base + off_race);
  dev.out_samples = reinterpret_cast<double*>(c.pinned_dev + base + off_samples);
  host = dev;
  host.header = reinterpret_cast<kabi::SlotHeader*>(c.pinned + base);
  host.out_main = reinterpret_cast<core::Partial*>(c.pinned + base + off_main);
  host.out_race = reinterpret_cast<core::Partial*>(c.pinned + base + off_race);
  host.out_samples = reinterpret_cast<double*>(c.pinned + base + off_samples);
}

Status SketchDevice::Impl::CheckRequest(const DeviceSketchRequest& r, uint32_t max_tiles,
                                        kabi::Job& job) const {
  if (r.request.layout.nblocks > opt.max_blocks)
    return InvalidArgument("sketch: " + std::to_string(r.request.layout.nblocks) +
                           " blocks exceed the " + std::to_string(opt.max_blocks) +
                           " of SketchDeviceOptions::max_blocks; split the request");
  // Never above the scratch's opt.max_tiles: PlanJob then refuses what does not fit.
  const uint32_t tiles = std::min(opt.max_tiles, std::max(max_tiles, r.request.layout.nblocks));
  NCCLRR_RETURN_IF_ERROR(PlanJob(r.request, tiles, job));
  if (JobSampleSlots(job) > opt.max_samples)
    return InvalidArgument("sketch: " + std::to_string(JobSampleSlots(job)) +
                           " samples exceed SketchDeviceOptions::max_samples (" +
                           std::to_string(opt.max_samples) + "); ask for fewer per block");
  if (!r.data && r.request.layout.total() > 0)
    return InvalidArgument("sketch: null data pointer for a non-empty buffer");
  return Status::Ok();
}

bool SketchDevice::Impl::ForkResources(Context& c, cu::CUstream user, cu::CUstream* side,
                                       cu::CUevent* event) {
  std::lock_guard<std::mutex> lock(fork_mu);
  *side = nullptr;
  for (const SideStream& s : c.sides)
    if (s.user == user) *side = s.side;
  cu::RelaxedCaptureScope relaxed(d);  // another thread's stream may be capturing right now
  cu::CUcontext popped;
  if (d.CtxPushCurrent(c.ctx) != cu::kSuccess) return false;
  if (*side == nullptr && c.sides.size() < kMaxSideStreams &&
      d.StreamCreate(side, cu::kStreamNonBlocking) == cu::kSuccess)
    c.sides.push_back({user, *side});
  *event = nullptr;
  if (*side != nullptr) {
    if (!c.free_events.empty()) {
      *event = c.free_events.back();
      c.free_events.pop_back();
    } else if (d.EventCreate(event, cu::kEventDisableTiming) != cu::kSuccess) {
      *event = nullptr;
    }
  }
  d.CtxPopCurrent(&popped);
  return *side != nullptr && *event != nullptr;
}

void SketchDevice::Impl::GiveEvent(Context& c, cu::CUevent e) {
  std::lock_guard<std::mutex> lock(fork_mu);
  c.free_events.push_back(e);  // reusable at once: a wait takes the event's state when enqueued
}

StatusOr<std::vector<SketchDevice::SlotId>> SketchDevice::EnqueueForked(
    void* stream_ptr, const std::vector<DeviceSketchRequest>& requests, Fork* fork) {
  Impl& m = *impl_;
  *fork = Fork{};
  auto stream = static_cast<cu::CUstream>(stream_ptr);
  int capture = cu::kCaptureStatusNone;
  if (SharedStreamHandle(stream) || m.d.StreamIsCapturing(stream, &capture) != cu::kSuccess ||
      capture != cu::kCaptureStatusNone)
    return Enqueue(stream_ptr, requests);  // Enqueue says what is wrong, or joins the graph
  Context* c = nullptr;
  uint32_t ci = 0;
  {
    std::unique_lock<std::mutex> lock(m.mu);
    auto found = m.ContextFor(stream, lock);
    if (!found.ok()) return found.status();
    ci = *found;
    c = m.contexts[ci].get();
  }
  cu::CUstream side = nullptr;
  cu::CUevent event = nullptr;
  if (!m.ForkResources(*c, stream, &side, &event)) {
    if (event != nullptr) m.GiveEvent(*c, event);
    return Enqueue(stream_ptr, requests);
  }
  // The side stream starts where `stream` is now; the same event then marks the sketches' end.
  if (m.d.EventRecord(event, stream) != cu::kSuccess ||
      m.d.StreamWaitEvent(side, event, 0) != cu::kSuccess) {
    m.GiveEvent(*c, event);
    return Enqueue(stream_ptr, requests);
  }
  auto ids = m.EnqueueOn(side, requests, Impl::Grid::kHalfSms);
  // Recording on a stream that just took a launch does not fail short of a broken context,
  // where nothing more runs anyway: then the fork is left unjoined.
  if (!ids.ok() || m.d.EventRecord(event, side) != cu::kSuccess) {
    m.GiveEvent(*c, event);
    return ids;
  }
  fork->stream = stream_ptr;
  fork->done = event;
  fork->context = ci;
  return ids;
}

void SketchDevice::JoinFork(const Fork& fork) {
  if (fork.empty()) return;
  Impl& m = *impl_;
  auto event = static_cast<cu::CUevent>(fork.done);
  m.d.StreamWaitEvent(static_cast<cu::CUstream>(fork.stream), event, 0);
  Context* c = nullptr;
  {
    std::lock_guard<std::mutex> lock(m.mu);
    c = m.contexts[fork.context].get();
  }
  m.GiveEvent(*c, event);
}

Status SketchDevice::Prepare(void* stream) {
  std::unique_lock<std::mutex> lock(impl_->mu);
  auto ci = impl_->ContextFor(static_cast<cu::CUstream>(stream), lock);
  return ci.ok() ? Status::Ok() : ci.status();
}

StatusOr<std::vector<SketchDevice::SlotId>> SketchDevice::Enqueue(
    void* stream_ptr, const std::vector<DeviceSketchRequest>& requests) {
  return impl_->EnqueueOn(stream_ptr, requests, Impl::Grid::kOneWave);
}

// Tiles only regroup chunks: the result is the same whatever the cap. (A sketch of more blocks
// than the cap still gets one CTA per block, within opt.max_tiles.)
uint32_t SketchDevice::Impl::TileCap(const Context& c, Grid grid) const {
  if (c.sms <= 0) return grid == Grid::kHalfSms ? 1 : opt.max_tiles;  // unknown GPU
  // One wave: more CTAs than fit at once made the last wave's stragglers and every CTA's
  // start-up cost more than they spread (float32 at 1 GB: 68% of read bandwidth with 1,024
  // tiles on an H200, 73% with 256, 57% with 4,096).
  if (grid == Grid::kOneWave)
    return opt.one_wave ? std::min(opt.max_tiles, uint32_t(c.sms) * kabi::kCtasPerSm)
                        : opt.max_tiles;
  // Half the SMs, so that the collective's CTAs find SMs free while the sketch runs: a grid of
  // many waves would hold every SM until it is done, and the collective would run after it
  // instead of beside it.
  return std::min(opt.max_tiles, std::max<uint32_t>(1, uint32_t(c.sms) / 2));
}

StatusOr<std::vector<SketchDevice::SlotId>> SketchDevice::Impl::EnqueueOn(
    void* stream_ptr, const std::vector<DeviceSketchRequest>& requests, Grid grid) {
  Impl& m = *this;
  if (requests.empty() || requests.size() > size_t(kabi::kMaxJobs))
    return InvalidArgument("sketch: 1 to " + std::to_string(kabi::kMaxJobs) +
                           " sketches per Enqueue, got " + std::to_string(requests.size()));
  std::vector<kabi::Job> jobs(requests.size());
  for (size_t i = 0; i < requests.size(); ++i)  // refused before any context is set up
    NCCLRR_RETURN_IF_ERROR(m.CheckRequest(requests[i], m.opt.max_tiles, jobs[i]));
  auto stream = static_cast<cu::CUstream>(stream_ptr);
  int capture = cu::kCaptureStatusNone;
  cu::CUresult r = m.d.StreamIsCapturing(stream, &capture);
  if (r != cu::kSuccess) return InvalidArgument(m.d.Error(r, "sketch: cannot query the stream"));
  if (capture != cu::kCaptureStatusNone && capture != cu::kCaptureStatusActive)
    return Unsupported("sketch: the stream's capture was invalidated; nothing enqueued");
  std::unique_lock<std::mutex> lock(m.mu);
  auto ci = m.ContextFor(stream, lock);
  if (!ci.ok()) return ci.status();
  Context& c = *m.contexts[*ci];  // stable: contexts are never removed
  const uint32_t cap = m.TileCap(c, grid);
  for (size_t i = 0; i < requests.size() && cap < m.opt.max_tiles; ++i)
    NCCLRR_RETURN_IF_ERROR(m.CheckRequest(requests[i], cap, jobs[i]));  // fewer, larger tiles
  std::vector<int> slots;
  for (size_t i = 0; i < requests.size(); ++i) {
    const int s = m.AcquireSlot(c);
    if (s < 0) {
      for (int t : slots) c.slots[t].state = SlotState::kFree;
      return Unsupported("sketch: all " + std::to_string(c.slots.size()) +
                         " slots of this context are in flight; poll results or raise "
                         "SketchDeviceOptions::slots");
    }
    c.slots[s].state = SlotState::kInFlight;  // reserved
    slots.push_back(s);
  }
  std::vector<kabi::Job> host_views(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    // Only a graph relaunches a slot while the host may be reading it: the kernel's seqlock
    // fence is needed there alone (kernel_body.h, FinishJob).
    if (capture == cu::kCaptureStatusActive) jobs[i].mode |= kabi::kModeReplayed;
    m.FillJob(c, uint32_t(slots[i]), requests[i].data, jobs[i], host_views[i]);
  }
  // The reserved slots are this call's alone (their ids are not handed out yet): the launches,
  // which can wait for the stream when its launch queue is full, run without mu.
  lock.unlock();
  // One launch per datatype, jobs of that datatype back to back in the grid.
  std::vector<bool> launched(requests.size(), false);
  cu::CUcontext popped;
  if ((r = m.d.CtxPushCurrent(c.ctx)) != cu::kSuccess) {
    lock.lock();  // nothing was launched: the reserved slots are free again
    for (int t : slots) c.slots[t].state = SlotState::kFree;
    return Unsupported(m.d.Error(r, "sketch: cannot enter the stream's context"));
  }
  for (size_t i = 0; i < requests.size() && r == cu::kSuccess; ++i) {
    if (launched[i]) continue;
    kabi::Launch launch{};
    for (size_t k = i; k < requests.size(); ++k) {
      if (launched[k] || jobs[k].dtype != jobs[i].dtype) continue;
      jobs[k].cta_begin = launch.total_ctas;
      launch.jobs[launch.njobs++] = jobs[k];
      launch.total_ctas += kabi::JobCtas(jobs[k]);
      launched[k] = true;
    }
    void* args[] = {&launch};
    r = m.d.LaunchKernel(c.fn[jobs[i].dtype], launch.total_ctas, 1, 1, kabi::kThreadsPerCta, 1, 1,
                         0, stream, args, nullptr);
  }
  m.d.CtxPopCurrent(&popped);
  lock.lock();
  if (r != cu::kSuccess) {  // earlier launches of this call may be in flight: abandon those
    for (size_t i = 0; i < requests.size(); ++i) {
      Slot& s = c.slots[slots[i]];
      s.expected = s.consumed + 1;
      s.state = SlotState::kAbandoned;
    }
    return Unsupported(m.d.Error(r, "sketch: kernel launch failed"));
  }
  std::vector<SlotId> ids;
  for (size_t i = 0; i < requests.size(); ++i) {
    Slot& s = c.slots[slots[i]];
    s.request = requests[i].request;
    s.host_view = host_views[i];
    s.base = s.consumed;
    s.expected = s.consumed + 1;
    s.state = capture == cu::kCaptureStatusActive ? SlotState::kCaptured : SlotState::kInFlight;
    ids.push_back((SlotId(*ci) << 32) | uint32_t(slots[i]));
  }
  return ids;
}

StatusOr<std::optional<DeviceSketchResult>> SketchDevice::Poll(SlotId id) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  const uint32_t ci = uint32_t(id >> 32), si = uint32_t(id);
  if (ci >= m.contexts.size() || si >= m.contexts[ci]->slots.size())
    return InvalidArgument("sketch: slot id " + std::to_string(id) + " was never handed out");
  Context& c = *m.contexts[ci];
  Slot& s = c.slots[si];
  if (s.state != SlotState::kInFlight && s.state != SlotState::kCaptured)
    return InvalidArgument("sketch: slot " + std::to_string(id) + " has no sketch pending");
  const kabi::SlotHeader* h = m.Header(c, si);
  const uint64_t done = h->done;
  if (done <= s.consumed || (s.state == SlotState::kInFlight && done < s.expected))
    return std::optional<DeviceSketchResult>();
  std::atomic_thread_fence(std::memory_order_acquire);
  DeviceSketchResult out;
  out.result = ReadJobResults(s.request, s.host_view);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (h->begin != done) return std::optional<DeviceSketchResult>();  // a replay is writing
  out.generation = done - s.base;  // 1 for a plain launch, the replay number for a graph
  out.missed = done - s.consumed - 1;
  s.consumed = done;
  if (s.state == SlotState::kInFlight) s.state = SlotState::kFree;
  return std::optional<DeviceSketchResult>(std::move(out));
}

void SketchDevice::Release(SlotId id, uint64_t launches) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  const uint32_t ci = uint32_t(id >> 32), si = uint32_t(id);
  if (ci >= m.contexts.size() || si >= m.contexts[ci]->slots.size()) return;
  Slot& s = m.contexts[ci]->slots[si];
  if (s.state == SlotState::kFree || s.state == SlotState::kAbandoned) return;
  if (s.state == SlotState::kCaptured) s.expected = s.base + launches;
  const uint64_t done = m.Header(*m.contexts[ci], si)->done;
  if (done < s.expected) {
    s.state = SlotState::kAbandoned;  // recycled once its last launch has published
  } else {
    s.consumed = done;  // what it published unread must not pass for the next use's result
    s.state = SlotState::kFree;
  }
}

std::string SketchDevice::Describe() const {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  int version = 0;
  m.d.DriverGetVersion(&version);
  size_t image = 0;
  SketchFatbin(&image);
  std::string s = "sketch device: driver " + std::to_string(version / 1000) + "." +
                  std::to_string(version % 1000 / 10) + ", kernel image " + std::to_string(image) +
                  " bytes, " + std::to_string(m.opt.slots) + " slots per context";
  for (const auto& c : m.contexts)
    s += "; device " + std::to_string(c->device) + " sm_" + std::to_string(c->cc_major) +
         std::to_string(c->cc_minor);
  return s;
}

SketchDevice::SketchDevice(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

SketchDevice::~SketchDevice() {
  for (auto& c : impl_->contexts) {
    cu::CUcontext popped;
    if (impl_->d.CtxPushCurrent(c->ctx) != cu::kSuccess) continue;
    if (c->module) impl_->d.ModuleUnload(c->module);
    if (c->scratch) impl_->d.MemFree(c->scratch);
    if (c->control) impl_->d.MemFree(c->control);
    if (c->pinned) impl_->d.MemFreeHost(c->pinned);
    for (const SideStream& s : c->sides) impl_->d.StreamDestroy(s.side);
    for (cu::CUevent e : c->free_events) impl_->d.EventDestroy(e);
    impl_->d.CtxPopCurrent(&popped);
  }
}

StatusOr<std::unique_ptr<SketchDevice>> SketchDevice::Create(const SketchDeviceOptions& options) {
  if (!DeviceKernelsBuiltIn())
    return Unsupported(
        "sketch: this build has no device kernels (nvcc was not found when it "
        "was built); GPU buffers cannot be sketched");
  if (options.slots == 0 || options.max_tiles == 0 || options.max_blocks == 0)
    return InvalidArgument("sketch: SketchDeviceOptions needs at least one slot, tile and block");
  auto impl = std::make_unique<Impl>();
  impl->opt = options;
  auto driver = cu::LoadDriver(options.driver_path);
  if (!driver.ok()) return driver.status();
  impl->d = *driver;
  impl->off_main = sizeof(kabi::SlotHeader);
  impl->off_race = impl->off_main + options.max_blocks * sizeof(core::Partial);
  impl->off_samples = impl->off_race + options.max_blocks * sizeof(core::Partial);
  impl->slot_bytes = RoundUp(impl->off_samples + options.max_samples * sizeof(double), 128);
  impl->scratch_bytes = 2 * size_t(options.max_tiles) * sizeof(core::Partial);
  return std::unique_ptr<SketchDevice>(new SketchDevice(std::move(impl)));
}

}  // namespace ncclrr::sketch
