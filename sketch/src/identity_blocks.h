#pragma once
// Block-level identity checks behind CheckCollective (identity.cc).
#include <string>
#include <vector>

#include "ncclrr/sketch/identity.h"

namespace ncclrr::sketch {

BlockVerdict MissingBlock(uint64_t first, uint64_t count, std::string detail);

// Data movement: recv must equal send bit for bit (dots, Σx², counts, common samples).
BlockVerdict CheckCopyBlock(const SketchData& recv, const SketchData& send, int source_rank);

// Reduction: recv = Σ_r scalars[r] · sends[r], exact for integers, within tolerance for floats.
BlockVerdict CheckReductionBlock(const SketchData& recv,
                                 const std::vector<const SketchData*>& sends,
                                 const std::vector<double>& scalars, bool premul, uint8_t dtype,
                                 const ToleranceModel& model);

}  // namespace ncclrr::sketch
