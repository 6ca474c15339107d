// What NCCL's profiler descriptors call things, in ncclrr's terms.
#pragma once
#include <cstdint>

#include "ncclrr/trace/records.h"

namespace ncclrr::profiler {

// "AllReduce", "Send", ... (ncclFuncToString of NCCL 2.24+). kUnknown for anything else.
Api ApiFromFuncName(const char* func);
// An ncclFunc_t value of NCCL 2.23 (profiler v1).
Api ApiFromFuncValue(uint8_t func);
// "ncclFloat32", ... (ncclDatatypeToString) to ncclDataType_t; 0xff when unknown.
uint8_t DtypeFromName(const char* datatype);
inline constexpr uint8_t kUnknownDtype = 0xff;

}  // namespace ncclrr::profiler
