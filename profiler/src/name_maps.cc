#include "name_maps.h"

#include <cstring>

#include "profiler_abi.h"

namespace ncclrr::profiler {

Api ApiFromFuncName(const char* func) {
  if (func == nullptr) return Api::kUnknown;
  struct Entry {
    const char* name;
    Api api;
  };
  static constexpr Entry kFuncs[] = {
      {"AllReduce", Api::kAllReduce},
      {"Broadcast", Api::kBroadcast},
      {"Reduce", Api::kReduce},
      {"AllGather", Api::kAllGather},
      {"ReduceScatter", Api::kReduceScatter},
      {"AlltoAll", Api::kAlltoAll},
      {"Gather", Api::kGather},
      {"Scatter", Api::kScatter},
      {"Send", Api::kSend},
      {"Recv", Api::kRecv},
  };
  for (const Entry& e : kFuncs)
    if (std::strcmp(func, e.name) == 0) return e.api;
  return Api::kUnknown;
}

Api ApiFromFuncValue(uint8_t func) {
  switch (func) {
    case abi::kFuncBroadcast:
      return Api::kBroadcast;
    case abi::kFuncReduce:
      return Api::kReduce;
    case abi::kFuncAllGather:
      return Api::kAllGather;
    case abi::kFuncReduceScatter:
      return Api::kReduceScatter;
    case abi::kFuncAllReduce:
      return Api::kAllReduce;
    case abi::kFuncSend:
      return Api::kSend;
    case abi::kFuncRecv:
      return Api::kRecv;
    default:
      return Api::kUnknown;
  }
}

uint8_t DtypeFromName(const char* datatype) {
  if (datatype == nullptr || std::strncmp(datatype, "nccl", 4) != 0) return kUnknownDtype;
  static constexpr const char* kNames[kNumDtypes] = {
      "Int8",    "Uint8",   "Int32",   "Uint32",   "Int64",      "Uint64",
      "Float16", "Float32", "Float64", "Bfloat16", "Float8e4m3", "Float8e5m2"};
  for (int i = 0; i < kNumDtypes; ++i)
    if (std::strcmp(datatype + 4, kNames[i]) == 0) return static_cast<uint8_t>(i);
  return kUnknownDtype;
}

}  // namespace ncclrr::profiler
