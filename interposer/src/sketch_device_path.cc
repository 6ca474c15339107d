// Sketches on a real GPU: SketchDevice (sketch/include/ncclrr/sketch/device.h) launches the
// kernels on the call's own stream and returns at once; results land in pinned slots that a
// poller thread of ncclrr reads (Poll never blocks and calls no CUDA API) and writes as
// records. The user's stream is never synchronized. A call whose sketches find every slot in
// flight is skipped and counted. A call captured into a CUDA graph keeps its slots: each replay
// the poller sees is written with `launch` = the replay's number (generation).
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

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
};

std::once_flag g_create_once;
SketchDevice* g_device = nullptr;  // never freed: the driver reclaims it at exit
std::mutex g_mu;
std::condition_variable g_cv;
std::vector<InFlight> g_inflight;  // under g_mu
bool g_poller_started = false;     // under g_mu

void Create() {
  auto d = SketchDevice::Create();
  if (!d.ok()) {
    Note(NoteLevel::kWarning, "sketch: no GPU sketches: " + d.status().message());
    return;
  }
  g_device = d->release();
  Note(NoteLevel::kInfo, g_device->Describe());
}

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
      WriteSketchResult(f.part, f.call_uid, std::move(got.result),
                        f.captured ? got.generation : 0);
      done = !f.captured;
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

void Poller() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(g_mu);
      g_cv.wait(lock, [] { return !g_inflight.empty(); });
    }
    // Only captured slots left: their next replay may be far away.
    const bool plain = PollOnce();
    std::this_thread::sleep_for(plain ? std::chrono::microseconds(500)
                                      : std::chrono::microseconds(20'000));
  }
}

}  // namespace

bool DeviceSketchesAvailable() {
  std::call_once(g_create_once, Create);
  return g_device != nullptr;
}

void DeviceSketch(const SketchJob& job) {
  std::vector<sketch::DeviceSketchRequest> requests;
  for (int i = 0; i < job.n; ++i) requests.push_back({job.parts[i].data, job.parts[i].request});
  auto slots = g_device->Enqueue(job.stream, requests);
  if (!slots.ok()) {
    const std::string& why = slots.status().message();
    return CountSkip(why.find("in flight") != std::string::npos ? SkipReason::kSlotsInFlight
                                                                : SkipReason::kDeviceError,
                     why);
  }
  std::lock_guard<std::mutex> lock(g_mu);
  for (int i = 0; i < job.n; ++i)
    g_inflight.push_back({job.parts[i], job.call_uid, (*slots)[i], job.captured});
  if (!g_poller_started) {
    g_poller_started = true;
    std::thread(Poller).detach();
  }
  g_cv.notify_one();
}

void DeviceSketchAtExit() {
  if (g_device == nullptr) return;
  for (int i = 0; i < 200 && PollOnce(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace ncclrr::interpose
