// Where buffers and streams come from: the host NCCL (plain memory, host streams) or CUDA (device
// memory and CUDA streams, the runtime reached through dlopen so the binary needs no CUDA to build
// or run).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nccl.h>

namespace ncclrr::example {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual void SetDevice(int rank) = 0;
  virtual void* Alloc(size_t bytes) = 0;
  virtual void Free(void* p) = 0;
  virtual void ToDevice(void* dst, const void* src, size_t bytes) = 0;
  virtual void ToHost(void* dst, const void* src, size_t bytes) = 0;
  virtual cudaStream_t NewStream() = 0;
  virtual void FreeStream(cudaStream_t s) = 0;
  // Waits for the stream; false (with `error` set) when NCCL reported an error on `comms`.
  virtual bool Sync(cudaStream_t s, const std::vector<ncclComm_t>& comms, std::string* error) = 0;
  // send-race: copies `bytes` from `src` over `dst`, the send buffer of the rank's collective on
  // `stream`, from a second stream `side`, so that the write races the collective. Called right
  // after issuing the collective, or right before it when RaceQueuedBeforeIssue().
  virtual void RacyWrite(void* dst, const void* src, size_t bytes, cudaStream_t stream,
                         cudaStream_t side) = 0;
  // CUDA: true. A copy issued while an NCCL kernel waits for its peers spun on the host until the
  // kernel finished (2x H200, CUDA 13, NCCL 2.28), so it always landed after NCCL had read the
  // buffer; queued before the call, behind a random delay, it lands before, during or after
  // NCCL's reads, run by run, and the peers must not wait for it before issuing.
  // The host NCCL: false; the write lands before the peers issue, deterministically.
  virtual bool RaceQueuedBeforeIssue() const = 0;
};

// The host NCCL's backend, or null with `error` set when the loaded libnccl.so.2 is another one.
std::unique_ptr<Backend> MakeHostBackend(std::string* error);
// CUDA, or null with `error` set (no libcudart, no GPU, or the host NCCL got loaded).
std::unique_ptr<Backend> MakeCudaBackend(std::string* error);

// True when the libnccl.so.2 this process loaded is the host NCCL.
bool LoadedHostNccl();

}  // namespace ncclrr::example
