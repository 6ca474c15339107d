#pragma once
// SketchDevice: the sketch computed by CUDA kernels on the caller's stream, bit-identical to
// SketchHost on the same bytes.
//
// Rules (the interposer relies on them):
//  * CUDA only through dlopen("libcuda.so.1") and the driver API; the kernels are a fatbin
//    (sm_75 and sm_90 code, compute_90 PTX) embedded in the library and loaded per context.
//  * Enqueue launches ONE kernel per datatype on the given stream and returns at once: stream
//    order is the only synchronization (no event, no cudaStreamSynchronize, no host callback).
//    The kernel reads the buffer when the stream reaches it, so a sketch enqueued before a
//    collective on the collective's stream sees the data the collective reads.
//  * EnqueueForked is the one exception: the kernels run on a side stream that waits for the
//    caller's stream (an event), beside what the caller enqueues next, until JoinFork makes the
//    caller's stream wait for them (another event). Never a host wait either.
//  * Results land in pinned, host-mapped slots written by the kernel's last CTA, with a
//    completion flag the host polls (Poll never blocks).
//  * First use of a CUDA context loads the module and allocates the slots under relaxed
//    stream-capture mode, so it is safe while the user's stream is being captured. A launch
//    into a capturing stream becomes part of the graph: its slot then reports every replay of
//    the graph (generation) until Release.
//  * Thread-safe. Destroy it while its CUDA contexts are alive (or never: at process exit the
//    driver reclaims everything).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ncclrr/base/status.h"
#include "ncclrr/sketch/sketch.h"

namespace ncclrr::sketch {

struct SketchDeviceOptions {
  std::string driver_path = "libcuda.so.1";
  uint32_t slots = 128;       // sketches in flight per CUDA context
  uint32_t max_tiles = 1024;  // CTAs per sketch: larger buffers get larger tiles
  bool one_wave = true;       // and at most one wave of them (two per SM; false: max_tiles alone)
  uint32_t max_blocks = 64;   // blocks per sketch (AlltoAll / ReduceScatter peers)
  uint32_t max_samples = 64 * 64 + 256;  // raw values per slot (blocks x samples + race)
};

struct DeviceSketchRequest {
  const void* data = nullptr;  // device (or device-mapped) pointer to block 0
  SketchRequest request;
};

struct DeviceSketchResult {
  SketchResult result;
  uint64_t generation = 0;  // 1 for a plain launch; a captured slot's replay number (1-based)
  uint64_t missed = 0;      // replays whose results were overwritten before they were polled
};

class SketchDevice {
 public:
  using SlotId = uint64_t;

  // Unsupported (with what is missing) when there is no driver, no device, or the library was
  // built without nvcc. Nothing is allocated until the first Enqueue on a context.
  static StatusOr<std::unique_ptr<SketchDevice>> Create(const SketchDeviceOptions& options = {});
  ~SketchDevice();
  SketchDevice(const SketchDevice&) = delete;
  SketchDevice& operator=(const SketchDevice&) = delete;

  // Enqueues up to 16 sketches on `stream` (a cudaStream_t / CUstream; 0 is the legacy default
  // stream of the current context), one launch per distinct datatype. Returns one slot per
  // request, in order. Fails without launching anything when a request is invalid or exceeds
  // the options, when no slot is free, or when the stream's capture was invalidated.
  StatusOr<std::vector<SlotId>> Enqueue(void* stream,
                                        const std::vector<DeviceSketchRequest>& requests);

  // What JoinFork needs; empty (nothing to join) when the sketches went on the stream itself.
  struct Fork {
    void* stream = nullptr;  // the caller's
    void* done = nullptr;    // CUevent recorded on the side stream after the sketches
    uint32_t context = 0;
    bool empty() const { return done == nullptr; }
  };
  // Like Enqueue, but the kernels run on a side stream of this context (one per caller stream)
  // that first waits for `stream`'s work so far: they read the buffers at this point of
  // `stream`, concurrently with what the caller enqueues on it next, which must only read them
  // (an out-of-place collective's send buffer). Call JoinFork once that work is enqueued and
  // before anything that may write the buffers. A capturing stream, or a context out of side
  // streams (32) or events, gets the sketches on `stream` itself and an empty `fork`.
  StatusOr<std::vector<SlotId>> EnqueueForked(void* stream,
                                              const std::vector<DeviceSketchRequest>& requests,
                                              Fork* fork);
  // Makes the fork's stream wait for its sketches (no-op for an empty fork).
  void JoinFork(const Fork& fork);

  // Sets up `stream`'s context now (0: the thread's current one): loads the kernels, allocates
  // device scratch and pinned slots. Those calls can wait for every GPU's work to finish, which
  // deadlocks when one thread drives several GPUs and another's NCCL kernel waits for this
  // thread: the interposer calls this before a communicator is created, not at the first call.
  Status Prepare(void* stream);

  // nullopt while the kernel has not finished. A result of a plain launch releases the slot; a
  // captured slot stays until Release.
  StatusOr<std::optional<DeviceSketchResult>> Poll(SlotId slot);

  // Gives a slot back. One whose kernel may still run is recycled only once it has finished; a
  // captured slot once `launches` replays (every launch of its graph's executables, counted by
  // the caller) have published. Results published but not polled are dropped.
  void Release(SlotId slot, uint64_t launches = 0);

  // Driver version, kernel image and per-context state, for notes in the trace.
  std::string Describe() const;

 private:
  struct Impl;
  explicit SketchDevice(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// True when the library carries device kernels (it was built with nvcc).
bool DeviceKernelsBuiltIn();

}  // namespace ncclrr::sketch
