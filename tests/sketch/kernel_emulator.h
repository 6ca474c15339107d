#pragma once
// Runs the CUDA kernel's body (sketch/device/src/kernel_body.h) on the host: one cooperative
// fiber per GPU thread, barriers for __syncthreads and for the warp shuffles. Slow, but it
// executes the exact source the GPU runs — indexing, tiling, rounds, stacks, the last-CTA protocol
// — so the CI proves the kernel bit-identical to the host implementation without a GPU.
#include <cstdint>
#include <memory>
#include <vector>

#include "kernel_abi.h"
#include "ncclrr/base/status.h"
#include "ncclrr/sketch/sketch.h"

namespace ncclrr::sketch::test {

// Host memory standing in for one slot: scratch, control, pinned header/results/samples.
struct EmulatedSlot {
  std::vector<core::Partial> scratch;
  kabi::SlotControl control{};
  kabi::SlotHeader header{};
  std::vector<core::Partial> out_main, out_race;
  std::vector<double> samples;
};

// Plans `request` over `data` into `job` with its own EmulatedSlot (pointers filled in).
Status PrepareJob(const void* data, const SketchRequest& request, uint32_t max_tiles,
                  kabi::Job& job, EmulatedSlot& slot);

// Runs every CTA of `launch`; `reverse` runs them last to first (completion order must not
// matter).
void EmulateLaunch(const kabi::Launch& launch, bool reverse);

// Plans, emulates and reads back one request; the result the GPU would publish.
StatusOr<SketchResult> EmulateSketch(const void* data, const SketchRequest& request,
                                     uint32_t max_tiles);

}  // namespace ncclrr::sketch::test
