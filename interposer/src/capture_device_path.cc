// Captures on a real GPU: each buffer is copied with cuMemcpyAsync into pinned staging memory on
// the call's own stream, followed by cuStreamWriteValue32 of a pinned, device-mapped flag; a
// poller thread of ncclrr sees the flag, writes the staged bytes to the side file and frees the
// staging. The user's stream is never synchronized, and ncclrr's thread polls a host-visible
// flag, never an event (docs/design.md: it cannot break a user's graph capture). The driver is
// reached through the libcuda.so.1 the process already loaded. A buffer that finds no room in the
// staging memory (NCCLRR_CAPTURE_STAGING_MB, at most the budget) is skipped and counted.
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "capture_jobs.h"
#include "cuda_graphs.h"
#include "device_poller.h"
#include "env_config.h"
#include "ncclrr/base/cuda_driver.h"
#include "runtime.h"

namespace ncclrr::interpose {
namespace {

using cuda::kHostAllocDeviceMap;
using cuda::kHostAllocPortable;
using CuResult = cuda::Result;
using DevPtr = cuda::DevicePtr;
using Driver = cuda::Driver;
constexpr int kFlags = 4096;  // copies in flight at most

struct InFlight {
  uint64_t call_uid;
  SketchWhich which;
  uint64_t offset, bytes;
  int flag;
};

// Staging memory: first-fit ranges of one pinned block, and the flags.
struct Staging {
  Driver cu;
  char* host = nullptr;
  uint32_t* flags = nullptr;
  DevPtr flags_dev = 0;
  std::map<uint64_t, uint64_t> free_ranges;  // offset -> size, coalesced
  std::vector<int> free_flags;
  std::vector<InFlight> inflight;
  std::atomic<bool> no_flags{
      false};  // cuStreamWriteValue32 failed once (no stream memory operations)
};

std::once_flag g_create_once;
Staging* g_staging = nullptr;  // never freed: the driver reclaims it at exit
// Never destroyed either: the poller still waits on them while static destructors run at exit.
std::mutex& g_mu = *new std::mutex();  // guards g_staging's containers

std::chrono::microseconds PollCaptures();

void Create() {
  auto driver = cuda::OpenDriver("", /*may_load=*/false);  // the process's own libcuda.so.1
  if (!driver.ok()) {
    Note(NoteLevel::kWarning, "capture: no CUDA driver is loaded: GPU buffers are not captured");
    return;
  }
  auto* s = new Staging();
  Driver& cu = s->cu;
  cu = std::move(driver.value());
  const bool found =
      cuda::MissingOf({NCCLRR_CUDA_WANT(cu, MemHostAlloc),
                       NCCLRR_CUDA_WANT(cu, MemHostGetDevicePointer),
                       NCCLRR_CUDA_WANT(cu, MemcpyAsync), NCCLRR_CUDA_WANT(cu, StreamWriteValue32),
                       NCCLRR_CUDA_WANT(cu, StreamGetCtx), NCCLRR_CUDA_WANT(cu, CtxPushCurrent),
                       NCCLRR_CUDA_WANT(cu, CtxPopCurrent)})
          .empty();
  const uint64_t size =
      std::min(GetConfig().capture_staging_bytes, std::max<uint64_t>(GetConfig().capture_bytes, 1));
  void* host = nullptr;
  void* flags = nullptr;
  if (!found || cu.MemHostAlloc(&host, size, kHostAllocPortable) != 0 ||
      cu.MemHostAlloc(&flags, kFlags * sizeof(uint32_t),
                      kHostAllocPortable | kHostAllocDeviceMap) != 0 ||
      cu.MemHostGetDevicePointer(&s->flags_dev, flags, 0) != 0) {
    Note(NoteLevel::kWarning,
         std::string("capture: GPU buffers are not captured: ") +
             (found ? "the CUDA driver could not allocate " + std::to_string(size) +
                          " bytes of pinned staging memory (NCCLRR_CAPTURE_STAGING_MB)"
                    : "the CUDA driver lacks cuMemcpyAsync/cuStreamWriteValue32"));
    return;
  }
  s->host = static_cast<char*>(host);
  s->flags = static_cast<uint32_t*>(flags);
  s->free_ranges[0] = size;
  for (int i = kFlags - 1; i >= 0; --i) s->free_flags.push_back(i);
  g_staging = s;
  SetDevicePollSource(DevicePollSource::kCaptures, PollCaptures);
}

// First fit; under g_mu.
bool Allocate(uint64_t bytes, uint64_t* offset, int* flag) {
  if (g_staging->free_flags.empty()) return false;
  for (auto it = g_staging->free_ranges.begin(); it != g_staging->free_ranges.end(); ++it) {
    if (it->second < bytes) continue;
    *offset = it->first;
    const uint64_t rest = it->second - bytes;
    g_staging->free_ranges.erase(it);
    if (rest > 0) g_staging->free_ranges[*offset + bytes] = rest;
    *flag = g_staging->free_flags.back();
    g_staging->free_flags.pop_back();
    return true;
  }
  return false;
}

// Under g_mu.
void Release(uint64_t offset, uint64_t bytes, int flag) {
  g_staging->free_flags.push_back(flag);
  auto& ranges = g_staging->free_ranges;
  auto next = ranges.lower_bound(offset);
  if (next != ranges.end() && offset + bytes == next->first) {
    bytes += next->second;
    next = ranges.erase(next);
  }
  if (next != ranges.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += bytes;
      return;
    }
  }
  ranges[offset] = bytes;
}

// One pass: writes the copies whose flag is set (outside the lock); true when some remain.
bool PollOnce() {
  std::vector<InFlight> done;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto& v = g_staging->inflight;
    for (size_t i = 0; i < v.size();) {
      if (__atomic_load_n(&g_staging->flags[v[i].flag], __ATOMIC_ACQUIRE) != 0) {
        done.push_back(v[i]);
        v[i] = v.back();
        v.pop_back();
      } else {
        ++i;
      }
    }
  }
  for (const InFlight& f : done)
    WriteCapturedBytes(f.call_uid, f.which, g_staging->host + f.offset, f.bytes);
  std::lock_guard<std::mutex> lock(g_mu);
  for (const InFlight& f : done) Release(f.offset, f.bytes, f.flag);
  return !g_staging->inflight.empty();
}

// The device poller's pass (device_poller.h).
std::chrono::microseconds PollCaptures() {
  if (g_staging == nullptr) return std::chrono::microseconds(0);
  return PollOnce() ? std::chrono::microseconds(200) : std::chrono::microseconds(0);
}

// Enqueues one copy on the call's stream (its context is made current around it).
void CopyPart(const CapturePart& p, void* stream, uint64_t call_uid) {
  uint64_t offset = 0;
  int flag = 0;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (!Allocate(p.bytes, &offset, &flag))
      return CountCaptureSkip(CaptureSkip::kStagingFull, 1, std::to_string(p.bytes) + " bytes");
  }
  const Driver& cu = g_staging->cu;
  __atomic_store_n(&g_staging->flags[flag], 0u, __ATOMIC_RELEASE);
  const auto cu_stream = static_cast<cuda::Stream>(stream);
  cuda::Context ctx = nullptr;
  const bool pushed = cu.StreamGetCtx(cu_stream, &ctx) == 0 && cu.CtxPushCurrent(ctx) == 0;
  CuResult r = cu.MemcpyAsync(reinterpret_cast<DevPtr>(g_staging->host + offset),
                              reinterpret_cast<DevPtr>(p.data), p.bytes, cu_stream);
  const bool copied = r == 0;
  if (copied)
    r = cu.StreamWriteValue32(cu_stream, g_staging->flags_dev + flag * sizeof(uint32_t), 1, 0);
  if (pushed) cu.CtxPopCurrent(&ctx);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (r != 0) {
      if (!copied) {
        Release(offset, p.bytes, flag);
      } else {
        // Nobody can learn when the queued copy is done: its staging stays taken, and without
        // stream memory operations no later copy can be followed either.
        g_staging->free_flags.push_back(flag);
        g_staging->no_flags.store(true);
      }
      return CountCaptureSkip(CaptureSkip::kCopyFailed, 1,
                              std::string(copied ? "cuStreamWriteValue32" : "cuMemcpyAsync") +
                                  " returned CUresult " + std::to_string(r));
    }
    g_staging->inflight.push_back({call_uid, p.which, offset, p.bytes, flag});
  }
  WakeDevicePoller();  // not under g_mu: the poller takes g_mu in its pass
}

}  // namespace

void PrepareDeviceCaptures() {
  // cuMemHostAlloc needs a current context. A thread that has made no CUDA call yet has none
  // before NCCL creates its communicator: the staging is then made at the first call, as before,
  // rather than failing once for good (call_once) and leaving every GPU buffer uncaptured.
  void* lib = LoadedLibcuda();
  if (lib == nullptr) return;
  void* ctx = nullptr;
  using CtxGetCurrent = CuResult (*)(void**);
  const auto get = reinterpret_cast<CtxGetCurrent>(dlsym(lib, "cuCtxGetCurrent"));
  const bool current = get != nullptr && get(&ctx) == 0 && ctx != nullptr;
  dlclose(lib);
  if (current) std::call_once(g_create_once, Create);
}

void DeviceCapture(const CaptureJob& job) {
  std::call_once(g_create_once, Create);
  if (g_staging == nullptr || g_staging->no_flags.load())
    return CountCaptureSkip(CaptureSkip::kNoBackend, job.n);
  for (int i = 0; i < job.n; ++i) CopyPart(job.parts[i], job.stream, job.call_uid);
}

void DeviceCaptureAtExit() {
  if (g_staging == nullptr) return;
  for (int i = 0; i < 2000 && PollOnce(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace ncclrr::interpose
