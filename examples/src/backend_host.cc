#include <cstdlib>
#include <cstring>

#include "backend.h"

// Declared weak: absent (null) when the real NCCL is the one loaded.
extern "C" {
int ncclrrHostIsHostNccl(void) __attribute__((weak));
cudaStream_t ncclrrHostStreamCreate(void) __attribute__((weak));
ncclResult_t ncclrrHostStreamSynchronize(cudaStream_t) __attribute__((weak));
void ncclrrHostStreamDestroy(cudaStream_t) __attribute__((weak));
void ncclrrHostSetDevice(int) __attribute__((weak));
}

namespace ncclrr::example {
namespace {

class HostBackend : public Backend {
 public:
  void SetDevice(int rank) override { ncclrrHostSetDevice(rank); }
  void* Alloc(size_t bytes) override { return std::malloc(bytes); }
  void Free(void* p) override { std::free(p); }
  void ToDevice(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void ToHost(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  cudaStream_t NewStream() override { return ncclrrHostStreamCreate(); }
  void FreeStream(cudaStream_t s) override { ncclrrHostStreamDestroy(s); }
  bool Sync(cudaStream_t s, const std::vector<ncclComm_t>&, std::string* error) override {
    ncclResult_t r = ncclrrHostStreamSynchronize(s);
    if (r != ncclSuccess) *error = ncclGetErrorString(r);
    return r == ncclSuccess;
  }
  // The host NCCL reads a send buffer only once every rank has issued the call, so a write made
  // now (before the peers issue theirs) always lands first: the race, made deterministic.
  void RacyWrite(void* dst, const void* src, size_t bytes, cudaStream_t, cudaStream_t) override {
    std::memcpy(dst, src, bytes);
  }
  bool RaceQueuedBeforeIssue() const override { return false; }
};

}  // namespace

bool LoadedHostNccl() { return ncclrrHostIsHostNccl != nullptr && ncclrrHostIsHostNccl() == 1; }

std::unique_ptr<Backend> MakeHostBackend(std::string* error) {
  if (!LoadedHostNccl()) {
    *error = "the libnccl.so.2 loaded is not the host NCCL (check LD_LIBRARY_PATH)";
    return nullptr;
  }
  return std::make_unique<HostBackend>();
}

}  // namespace ncclrr::example
