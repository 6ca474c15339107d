// CUDA through dlopen: a handful of runtime calls, typed by hand (cudaError_t is an int; 0 is
// success, 600 is cudaErrorNotReady).
#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <random>

#include "backend.h"

namespace ncclrr::example {
namespace {

struct CudaRt {
  int (*SetDevice)(int);
  int (*GetDeviceCount)(int*);
  int (*Malloc)(void**, size_t);
  int (*Free)(void*);
  int (*Memcpy)(void*, const void*, size_t, int);
  int (*MemcpyAsync)(void*, const void*, size_t, int, cudaStream_t);
  int (*StreamCreate)(cudaStream_t*);
  int (*StreamDestroy)(cudaStream_t);
  int (*StreamQuery)(cudaStream_t);
  int (*EventCreateWithFlags)(void**, unsigned);
  int (*EventRecord)(void*, cudaStream_t);
  int (*EventDestroy)(void*);
  int (*StreamWaitEvent)(cudaStream_t, void*, unsigned);
  int (*LaunchHostFunc)(cudaStream_t, void (*)(void*), void*);
  const char* (*GetErrorString)(int);
};

constexpr int kHostToDevice = 1, kDeviceToHost = 2, kDeviceToDevice = 3, kNotReady = 600;
constexpr unsigned kEventDisableTiming = 2;

// send-race's delay before the racing copy, in microseconds, drawn per write: long enough that
// the copy usually starts after `record --sketch` has read the send buffer (16 MB: ~10 us on the
// call's stream, ~30 us beside the call on half the SMs), short enough to fall inside a 16 MB
// allreduce over NVLink (~100 us) often.
constexpr int kRaceDelayMinUs = 60, kRaceDelayMaxUs = 240;

// Runs on CUDA's host-callback thread: holds the side stream for the delay it was given.
void SleepOnStream(void* us) { usleep(useconds_t(reinterpret_cast<uintptr_t>(us))); }

template <typename F>
bool Load(void* h, const char* name, F* f) {
  *f = reinterpret_cast<F>(dlsym(h, name));
  return *f != nullptr;
}

class CudaBackend : public Backend {
 public:
  explicit CudaBackend(const CudaRt& rt, int devices) : rt_(rt), devices_(devices) {}
  void SetDevice(int rank) override { rt_.SetDevice(rank % devices_); }
  void* Alloc(size_t bytes) override {
    void* p = nullptr;
    rt_.Malloc(&p, bytes);
    return p;
  }
  void Free(void* p) override { rt_.Free(p); }
  void ToDevice(void* dst, const void* src, size_t bytes) override {
    rt_.Memcpy(dst, src, bytes, kHostToDevice);
  }
  void ToHost(void* dst, const void* src, size_t bytes) override {
    rt_.Memcpy(dst, src, bytes, kDeviceToHost);
  }
  cudaStream_t NewStream() override {
    cudaStream_t s = nullptr;
    rt_.StreamCreate(&s);
    return s;
  }
  void FreeStream(cudaStream_t s) override { rt_.StreamDestroy(s); }
  // Polls instead of blocking, so an NCCL error (or the watchdog) can end the wait.
  bool Sync(cudaStream_t s, const std::vector<ncclComm_t>& comms, std::string* error) override {
    for (;;) {
      const int q = rt_.StreamQuery(s);
      if (q == 0) return true;
      if (q != kNotReady) {
        *error = rt_.GetErrorString(q);
        return false;
      }
      for (ncclComm_t c : comms) {
        ncclResult_t a = ncclSuccess;
        ncclCommGetAsyncError(c, &a);
        if (a != ncclSuccess && a != ncclInProgress) {
          *error = ncclGetErrorString(a);
          return false;
        }
      }
      usleep(50);
    }
  }
  // Queued before the call: after the rank's earlier work on `stream` (the buffer's fill) and a
  // random delay, the copy runs on `side` while the collective is in flight.
  void RacyWrite(void* dst, const void* src, size_t bytes, cudaStream_t stream,
                 cudaStream_t side) override {
    void* filled = nullptr;
    if (rt_.EventCreateWithFlags(&filled, kEventDisableTiming) == 0) {
      rt_.EventRecord(filled, stream);
      rt_.StreamWaitEvent(side, filled, 0);
      rt_.EventDestroy(filled);  // released once the wait is satisfied
    }
    const auto us = uintptr_t(kRaceDelayMinUs + random_() % (kRaceDelayMaxUs - kRaceDelayMinUs));
    rt_.LaunchHostFunc(side, SleepOnStream, reinterpret_cast<void*>(us));
    rt_.MemcpyAsync(dst, src, bytes, kDeviceToDevice, side);
  }
  bool RaceQueuedBeforeIssue() const override { return true; }

 private:
  CudaRt rt_;
  int devices_;
  std::minstd_rand random_{std::random_device{}()};  // one racing rank uses it
};

}  // namespace

std::unique_ptr<Backend> MakeCudaBackend(std::string* error) {
  if (LoadedHostNccl()) {
    *error = "the host NCCL is loaded; the real libnccl.so.2 was not found";
    return nullptr;
  }
  void* h = nullptr;
  for (const char* name : {"libcudart.so.13", "libcudart.so.12", "libcudart.so",
                           "/usr/local/cuda/lib64/libcudart.so.13"}) {
    if ((h = dlopen(name, RTLD_NOW | RTLD_GLOBAL)) != nullptr) break;
  }
  if (h == nullptr) {
    *error = "libcudart.so.13 not found";
    return nullptr;
  }
  CudaRt rt{};
  if (!Load(h, "cudaSetDevice", &rt.SetDevice) ||
      !Load(h, "cudaGetDeviceCount", &rt.GetDeviceCount) || !Load(h, "cudaMalloc", &rt.Malloc) ||
      !Load(h, "cudaFree", &rt.Free) || !Load(h, "cudaMemcpy", &rt.Memcpy) ||
      !Load(h, "cudaMemcpyAsync", &rt.MemcpyAsync) ||
      !Load(h, "cudaStreamCreate", &rt.StreamCreate) ||
      !Load(h, "cudaStreamDestroy", &rt.StreamDestroy) ||
      !Load(h, "cudaStreamQuery", &rt.StreamQuery) ||
      !Load(h, "cudaEventCreateWithFlags", &rt.EventCreateWithFlags) ||
      !Load(h, "cudaEventRecord", &rt.EventRecord) ||
      !Load(h, "cudaEventDestroy", &rt.EventDestroy) ||
      !Load(h, "cudaStreamWaitEvent", &rt.StreamWaitEvent) ||
      !Load(h, "cudaLaunchHostFunc", &rt.LaunchHostFunc) ||
      !Load(h, "cudaGetErrorString", &rt.GetErrorString)) {
    *error = "libcudart lacks a needed symbol";
    return nullptr;
  }
  int devices = 0;
  if (rt.GetDeviceCount(&devices) != 0 || devices < 1) {
    *error = "no CUDA device";
    return nullptr;
  }
  return std::make_unique<CudaBackend>(rt, devices);
}

}  // namespace ncclrr::example
