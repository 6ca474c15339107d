// Sketches on a real GPU: SketchDevice (sketch/include/ncclrr/sketch/device.h) launches the
// kernels on the call's own stream and returns at once; results land in pinned slots that a
// poller thread of ncclrr reads (Poll never blocks and calls no CUDA API) and writes as
// records. The user's stream is never synchronized. A call whose sketches find every slot in
// flight is skipped and counted.
//  * Groups: while a DeviceSketchBatch is open on the thread (the outermost GroupEnd), the
//    halves are held and enqueued together at its end, up to 16 parts per launch per stream,
//    so that a group of small calls costs one kernel launch instead of one per call.
//  * Graphs: a call captured into a CUDA graph keeps its slots; each replay the poller sees is
//    written with `launch` = the replay's number. Once nothing can launch the graph any more
//    (DeviceSketchGraphGone, from cuda_graphs.cc) its slots are read one last time and given
//    back after the launches seen have published.
//  * Beside the call: an out-of-place call's large send side (SketchJob::beside_call) is sketched
//    on a side stream that starts where the call's stream is, so the kernel reads the buffer
//    while NCCL does; once the call is forwarded, its stream waits for that kernel
//    (JoinDeviceSketchesBesideCall), so nothing after the call can overwrite the buffer under it.
//  * fork: the child gets a fresh poller state; a child of a process that had created the
//    sketcher has no usable CUDA context (CUDA does not survive fork), so its calls are skipped.
#include <pthread.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "cuda_graphs.h"
#include "device_poller.h"
#include "env_config.h"
#include "graph_events.h"
#include "ncclrr/sketch/device.h"
#include "runtime.h"
#include "sketch_jobs.h"

namespace ncclrr::interpose {
namespace {

using sketch::SketchDevice;

struct InFlight {
  SketchPart part;
  uint64_t call_uid = 0;
  SketchDevice::SlotId slot = 0;
  bool captured = false;
  uint64_t graph = 0;        // captured: the graph it was captured into
  uint64_t last_replay = 0;  // captured: the newest replay written
  uint64_t retire_at = 0;    // captured, graph gone: the launches seen; released once read
};

std::once_flag g_create_once;
SketchDevice* g_device = nullptr;  // never freed: the driver reclaims it at exit
bool g_forked_child = false;       // set in a child forked after g_device was created
// Never destroyed: the detached poller may still wait on them while static destructors run at
// exit (destroying a condition variable a thread waits on blocks the exit).
std::mutex& g_mu = *new std::mutex();
std::vector<InFlight>& g_inflight = *new std::vector<InFlight>();  // under g_mu

// Around fork: g_mu is held so that the child's copy of the in-flight list is consistent, and
// the child starts without the parent's slots (the parent's poller reports them).
void ForkPrepare() { g_mu.lock(); }
void ForkParent() { g_mu.unlock(); }
void ForkChild() {
  g_mu.unlock();  // the forking thread, the child's only thread, holds it
  g_inflight.clear();
  g_forked_child = g_device != nullptr;
}

std::chrono::microseconds PollSketches();

void Create() {
  sketch::SketchDeviceOptions o;
  o.slots = GetConfig().sketch_slots;
  auto d = SketchDevice::Create(o);
  if (!d.ok()) {
    Note(NoteLevel::kWarning, "sketch: no GPU sketches: " + d.status().message());
    return;
  }
  g_device = d->release();
  pthread_atfork(ForkPrepare, ForkParent, ForkChild);
  SetDevicePollSource(DevicePollSource::kSketches, PollSketches);
  Note(NoteLevel::kInfo, g_device->Describe());
}

// Under g_mu: a captured slot whose graph is gone and whose last launch seen has been read.
bool Retired(const InFlight& f) { return f.retire_at != 0 && f.last_replay >= f.retire_at; }

// One pass over the slots in flight; true when plain (not captured) ones remain.
bool PollOnce() {
  std::lock_guard<std::mutex> lock(g_mu);
  bool pending = false;
  for (size_t i = 0; i < g_inflight.size();) {
    InFlight& f = g_inflight[i];
    auto r = g_device->Poll(f.slot);
    bool done = !r.ok();
    if (!r.ok()) {
      CountSkip(SkipReason::kDeviceError, r.status().message());
    } else if (r->has_value()) {
      sketch::DeviceSketchResult& got = **r;
      WriteSketchResult(f.part, f.call_uid, std::move(got.result), f.captured ? got.generation : 0);
      f.last_replay = got.generation;
      done = !f.captured;
    }
    if (!done && Retired(f)) {
      g_device->Release(f.slot, f.retire_at);
      done = true;
    }
    if (done) {
      g_inflight[i] = std::move(g_inflight.back());
      g_inflight.pop_back();
    } else {
      pending |= !f.captured;
      ++i;
    }
  }
  return pending;
}

// The device poller's pass (device_poller.h). Only captured slots left: their next replay may be
// far away, so they are looked at less often.
std::chrono::microseconds PollSketches() {
  const bool plain = PollOnce();
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_inflight.empty()) return std::chrono::microseconds(0);
  return plain ? std::chrono::microseconds(500) : std::chrono::microseconds(20'000);
}

// Sketches of this thread that run beside the call being made, until it is forwarded.
thread_local std::vector<SketchDevice::Fork> t_forks;

// Enqueues the parts of `jobs` (all on one stream) in launches of up to 16 parts; the parts of
// one job are never split across launches; `beside`: on a side stream (t_forks). Slots go to
// the poller.
void EnqueueOnStream(const std::vector<const SketchJob*>& jobs, bool beside = false) {
  constexpr size_t kMaxParts = 16;  // SketchDevice::Enqueue's limit
  uint64_t graph = 0;
  if (jobs.front()->captured && GraphsActive()) graph = QueryCapture(jobs.front()->stream).graph;
  for (size_t first = 0; first < jobs.size();) {
    size_t last = first, parts = 0;
    std::vector<sketch::DeviceSketchRequest> requests;
    while (last < jobs.size() && parts + size_t(jobs[last]->n) <= kMaxParts) {
      for (int i = 0; i < jobs[last]->n; ++i)
        requests.push_back({jobs[last]->parts[i].data, jobs[last]->parts[i].request});
      parts += size_t(jobs[last]->n);
      ++last;
    }
    SketchDevice::Fork fork;
    auto slots = beside ? g_device->EnqueueForked(jobs.front()->stream, requests, &fork)
                        : g_device->Enqueue(jobs.front()->stream, requests);
    if (!fork.empty()) t_forks.push_back(fork);
    if (!slots.ok()) {
      const std::string& message = slots.status().message();
      const bool in_flight = message.find("in flight") != std::string::npos;
      const std::string raise = "NCCLRR_SKETCH_SLOTS (now " +
                                std::to_string(GetConfig().sketch_slots) +
                                "; each slot takes about 0.3 MB of GPU memory and 54 KB pinned)";
      const std::string why =
          in_flight ? "too few of the context's sketch slots were free, the others still in "
                      "flight; " +
                          raise + " raises their number"
          : message.find("SketchDeviceOptions::slots") != std::string::npos
              ? message + "; " + raise + " lowers it"
              : message;
      for (size_t j = first; j < last; ++j)
        CountSkip(in_flight ? SkipReason::kSlotsInFlight : SkipReason::kDeviceError, why);
    } else {
      {
        std::lock_guard<std::mutex> lock(g_mu);
        size_t k = 0;
        for (size_t j = first; j < last; ++j)
          for (int i = 0; i < jobs[j]->n; ++i) {
            InFlight f;
            f.part = jobs[j]->parts[i];
            f.call_uid = jobs[j]->call_uid;
            f.slot = (*slots)[k++];
            f.captured = jobs[j]->captured;
            f.graph = graph;
            g_inflight.push_back(f);
          }
      }
      WakeDevicePoller();  // not under g_mu: the poller takes g_mu in its pass
    }
    first = last;
  }
}

// The jobs held by the thread's open DeviceSketchBatch (null when none is open).
thread_local std::vector<SketchJob>* t_batch = nullptr;

}  // namespace

bool DeviceSketchesAvailable() {
  std::call_once(g_create_once, Create);
  return g_device != nullptr && !g_forked_child;
}

void PrepareDeviceSketches() {
  if (!DeviceSketchesAvailable()) return;
  const Status s = g_device->Prepare(nullptr);
  if (!s.ok() && GetConfig().verbose)
    std::fprintf(stderr, "ncclrr: sketch: %s (set up at the first call instead)\n",
                 s.message().c_str());
}

void DeviceSketch(const SketchJob& job) {
  if (job.empty()) return;
  if (t_batch != nullptr) return t_batch->push_back(job);
  EnqueueOnStream({&job}, job.beside_call);
}

void JoinDeviceSketchesBesideCall() {
  if (t_forks.empty()) return;
  for (const SketchDevice::Fork& f : t_forks) g_device->JoinFork(f);
  t_forks.clear();
}

DeviceSketchBatch::DeviceSketchBatch() {
  if (t_batch == nullptr) t_batch = &jobs_;
}

DeviceSketchBatch::~DeviceSketchBatch() {
  if (t_batch != &jobs_) return;  // nested in another batch: that one enqueues
  t_batch = nullptr;
  if (jobs_.empty()) return;
  // Per stream, in the order the calls were made (streams in order of first use).
  std::vector<void*> streams;
  std::map<void*, std::vector<const SketchJob*>> by_stream;
  for (const SketchJob& job : jobs_) {
    auto& list = by_stream[job.stream];
    if (list.empty()) streams.push_back(job.stream);
    list.push_back(&job);
  }
  for (void* s : streams) EnqueueOnStream(by_stream[s]);
}

void DeviceSketchGraphGone(uint64_t graph, uint64_t last_uid, uint64_t launches) {
  // Launches ncclrr did not see (a statically linked runtime) would make the count too low: a
  // graph never seen launched keeps its slots, as before.
  if (launches == 0) return;
  std::lock_guard<std::mutex> lock(g_mu);
  for (InFlight& f : g_inflight)
    if (f.captured && f.graph == graph && f.call_uid <= last_uid && f.retire_at == 0)
      f.retire_at = launches;  // the poller reads what is left, then releases
}

void DeviceSketchAtExit() {
  if (g_device == nullptr || g_forked_child) return;
  for (int i = 0; i < 200 && PollOnce(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace ncclrr::interpose
