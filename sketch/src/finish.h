#pragma once
// Turning raw partials into SketchData: shared by the host implementation and SketchDevice::Poll
// so that both finish identically (integer residues, race combination across blocks).
#include <cstdint>
#include <vector>

#include "ncclrr/sketch/sketch.h"
#include "sketch_core.h"

namespace ncclrr::sketch {

bool IsIntDtype(uint8_t dtype);

// Fills dots/sumsq/counts of `out` from a block (or race) partial.
void FinishPartial(const core::Partial& p, uint8_t dtype, SketchData& out);

// The race partial of a buffer: the per-block race partials combined by the canonical tree.
core::Partial CombineRaceBlocks(std::vector<core::Partial> per_block, uint8_t dtype);

// SketchData for block b (dots etc. from `p`, samples from `values`, indices recomputed).
SketchData MakeBlockSketch(const core::Partial& p, const BlockLayout& layout, uint32_t b,
                           const double* values, uint32_t nsamples);
SketchData MakeRaceSketch(const core::Partial& p, const BlockLayout& layout, const double* values,
                          uint32_t nsamples);

}  // namespace ncclrr::sketch
