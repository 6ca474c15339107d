// The example's GPU backend: the CUDA runtime through base's table (ncclrr/base/cuda_runtime.h).
#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <random>

#include "backend.h"
#include "ncclrr/base/cuda_runtime.h"

namespace ncclrr::example {
namespace {

using CudaRt = cudart::Runtime;

using cudart::kDeviceToDevice;
using cudart::kDeviceToHost;
using cudart::kEventDisableTiming;
using cudart::kHostToDevice;
using cudart::kNotReady;

// send-race's delay before the racing copy, in microseconds, drawn per write: long enough that
// the copy usually starts after `record --sketch` has read the send buffer (16 MB: ~10 us on the
// call's stream, ~30 us beside the call on half the SMs), short enough to fall inside a 16 MB
// allreduce over NVLink (~100 us) often.
constexpr int kRaceDelayMinUs = 60, kRaceDelayMaxUs = 240;

// Runs on CUDA's host-callback thread: holds the side stream for the delay it was given.
void SleepOnStream(void* us) { usleep(useconds_t(reinterpret_cast<uintptr_t>(us))); }

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
    cudart::Event filled = nullptr;
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
  auto opened = cudart::OpenRuntime();
  if (!opened.ok()) {
    *error = opened.status().message();
    return nullptr;
  }
  const CudaRt& rt = opened.value();
  int devices = 0;
  if (rt.GetDeviceCount(&devices) != 0 || devices < 1) {
    *error = "no CUDA device";
    return nullptr;
  }
  return std::make_unique<CudaBackend>(rt, devices);
}

}  // namespace ncclrr::example
