#pragma once
// Host-side halves of a kernel launch: how a SketchRequest becomes a kabi::Job (tile size, CTA
// count) and how a slot's published results become a SketchResult. Shared by SketchDevice and
// the host emulator test, so the emulator checks exactly what the GPU path runs.
#include <cstdint>

#include "kernel_abi.h"
#include "ncclrr/base/status.h"
#include "ncclrr/sketch/sketch.h"

namespace ncclrr::sketch {

// Fills the geometry and sample fields of `job` (not the pointers): the tile is the smallest
// power of two >= 8 chunks that keeps nblocks * tiles_per_block <= max_tiles.
Status PlanJob(const SketchRequest& request, uint32_t max_tiles, kabi::Job& job);

// Elements of the pinned sample area a job writes: nblocks * samples_per_block (full mode) then
// race_samples (race mode).
uint32_t JobSampleSlots(const kabi::Job& job);

// Converts what the kernel published for `job` into sketches.
SketchResult ReadJobResults(const SketchRequest& request, const kabi::Job& job);

}  // namespace ncclrr::sketch
