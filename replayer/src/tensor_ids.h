#pragma once
// Logical tensor ids the replay can rely on: analysis::LogicalIdentity's, checked to be a
// one-to-one map on every rank (two different buffers of one rank must never be "the same
// tensor", or the canonical order could not pair them). Where the check fails (a buffer that is
// swapped in exactly half of the steps ties two tensors), the ids come from the first step
// instead: the j-th distinct buffer of a given shape on a rank is the reference rank's j-th
// distinct buffer of that shape.
#include <cstdint>
#include <vector>

#include "ncclrr/analysis/logical_identity.h"
#include "ncclrr/analysis/model.h"

namespace ncclrr::replay {

struct TensorIds {
  std::vector<std::vector<uint32_t>> of_slot;  // [rank][slot]: id or analysis::kNoLogicalId
  bool from_first_step = false;                // the fallback was used
  int reference_rank = 0;                      // whose occurrences define the steps
};

TensorIds ReplayTensorIds(const analysis::TraceModel& model,
                          const analysis::LogicalIdentity& identity, size_t comm_index);

}  // namespace ncclrr::replay
