#pragma once
// The data side of `ncclrr diff`: do two runs' sketches (`record --sketch`) of one call agree?
// Two runs of one program compute the same inputs only up to rounding (a reduction's order may
// change between runs), so float sketches agree within a tolerance scaled by the buffer's norm
// and the dtype's unit roundoff; integer sketches are exact and compare exactly.
#include <cstdint>
#include <vector>

#include "ncclrr/analysis/model.h"
#include "ncclrr/trace/trace_data.h"

namespace ncclrr::analysis {

enum class Agreement : uint8_t { kUnknown, kAgree, kDiffer };

struct DataComparison {
  Agreement inputs = Agreement::kUnknown;   // send blocks sketched before the call
  Agreement outputs = Agreement::kUnknown;  // recv blocks sketched after it
};

// One call in one run: where it is and which graph launch (0: issued eagerly).
struct RunCall {
  const TraceModel* model = nullptr;
  CallRef call;
  uint32_t launch = 0;
};

// Relative tolerance of a dtype (see DiffOptions::data_tolerance_floor).
double SketchTolerance(uint8_t dtype, double floor);

// Do two sets of sketched blocks describe the same data? kUnknown when either is empty or they
// cover different blocks.
Agreement CompareBlocks(const std::vector<const SketchData*>& a,
                        const std::vector<const SketchData*>& b, double tolerance_floor);

DataComparison CompareCallData(const RunCall& a, const RunCall& b, double tolerance_floor);

}  // namespace ncclrr::analysis
