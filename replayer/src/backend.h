#pragma once
// Where a replay runs: the host NCCL (buffers in host memory, host streams) or the real NCCL on
// GPUs (CUDA runtime through dlopen). The executor sees one interface: an NCCL function table
// plus, per actor thread, memory, streams, copies and completion markers.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nccl_api.h"
#include "ncclrr/replay/options.h"

namespace ncclrr::replay {

// One actor's device: used only from that actor's thread (Release from the thread that joins it).
class ActorDevice {
 public:
  virtual ~ActorDevice() = default;
  virtual StatusOr<void*> Alloc(size_t bytes) = 0;
  virtual void Free(void* p) = 0;
  virtual StatusOr<cudaStream_t> NewStream() = 0;
  // Stream-ordered copy of host memory into device memory (before later work on `s`).
  virtual Status Upload(void* dst, const void* src, size_t bytes, cudaStream_t s) = 0;
  // Copy of device memory whose producing work has completed.
  virtual Status Download(void* dst, const void* src, size_t bytes) = 0;
  // A marker after everything enqueued on `s` so far; Reached() polls it (and drives progress).
  virtual StatusOr<uint64_t> Mark(cudaStream_t s) = 0;
  virtual bool Reached(cudaStream_t s, uint64_t marker) = 0;
  // Frees streams and markers; called after the actor's communicators are destroyed or aborted.
  virtual void Release() = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  const NcclApi& nccl() const { return nccl_; }
  virtual std::string Describe() const = 0;  // "host NCCL 2.28.9 (/path/libncclrr-hostnccl.so)"
  virtual int MaxActors() const = 0;         // GPUs on the nccl backend
  // Units an actor keeps in flight before it waits for its oldest to complete (0: as many as its
  // buffers allow). The host NCCL runs calls on the threads that poll it, and every poll walks
  // what is queued: an actor that queued its whole trace at once made a 32-rank replay 3x slower.
  virtual size_t PacedUnits() const { return 0; }
  // Called on the actor's thread before anything else (selects its device).
  virtual StatusOr<std::unique_ptr<ActorDevice>> BindActor(int slot, int recorded_device) = 0;
  // Settings the replay pinned or could not pin (NCCL_ALGO, ...), for the report.
  const std::vector<std::string>& notes() const { return notes_; }

 protected:
  NcclApi nccl_;
  std::vector<std::string> notes_;
};

struct BackendConfig {
  BackendKind kind = BackendKind::kHost;
  std::string library;  // ReplayOptions::host_library or nccl_library
  double timeout_s = 30;
  // The recording's NCCL_* environment (one process file's), for pinning algorithm, protocol and
  // channels on the real NCCL.
  std::vector<std::pair<std::string, std::string>> recorded_env;
};

StatusOr<std::unique_ptr<Backend>> MakeHostBackend(const BackendConfig& config);
StatusOr<std::unique_ptr<Backend>> MakeNcclBackend(const BackendConfig& config);

// The directory of the running executable ("" when unknown).
std::string ExecutableDir();

}  // namespace ncclrr::replay
