#pragma once
// What NCCL call a Flight Recorder entry stands for: the API from its profiling name, the count
// NCCL was given (from the tensor sizes, per API), the datatype from c10's name, and the call
// site from its Python frames.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "import/fr_dump.h"
#include "ncclrr/trace/records.h"

namespace ncclrr::fr {

inline constexpr uint8_t kUnknownDtype = 0xff;  // c10 types NCCL has no type for (Short, ...)

struct CallShape {
  Api api = Api::kUnknown;  // kUnknown: no NCCL call of its own (split, coalesced markers)
  uint64_t count = 0;
  uint8_t dtype = kUnknownDtype;
  int peer = -1;  // send/recv: the other side's group rank
};

// `nranks`: the process group's size (all_to_all's count is per peer).
CallShape ShapeOf(const Entry& e, int nranks);

// c10::toString(ScalarType) names ("Float", "BFloat16", ...) as NCCL datatypes; complex types
// travel as two reals each (`*per_value` = 2).
uint8_t DtypeFromC10(std::string_view name, int* per_value);

// "train.py:214 in worker<launch.py:30 in main<...": the frames from the first one outside the
// torch package outward (the torch frames above it name only the API), at most 8.
std::string CallSiteText(const std::vector<Frame>& frames);

}  // namespace ncclrr::fr
