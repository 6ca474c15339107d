// PyTorch's vocabulary for NCCL calls in Flight Recorder dumps: ProcessGroupNCCL's profiling
// titles and c10's ScalarType names.
#include "ncclrr/analysis/flight_recorder_export.h"

namespace ncclrr::analysis {

std::string FlightRecorderProfilingName(Api api, int rank, int peer) {
  switch (CanonicalApi(api)) {
    case Api::kAllReduce:
      return "nccl:all_reduce";
    case Api::kBroadcast:
      return "nccl:broadcast";
    case Api::kReduce:
      return "nccl:reduce";
    // ProcessGroupNCCL's flat-tensor variants (all_gather_into_tensor, reduce_scatter_tensor)
    // are the ones that issue exactly one ncclAllGather / ncclReduceScatter.
    case Api::kAllGather:
      return "nccl:_all_gather_base";
    case Api::kReduceScatter:
      return "nccl:_reduce_scatter_base";
    case Api::kAlltoAll:
      return "nccl:all_to_all";
    case Api::kGather:
      return "nccl:gather";
    case Api::kScatter:
      return "nccl:scatter";
    case Api::kSend:
      return "nccl:send " + std::to_string(rank) + "->" + std::to_string(peer);
    case Api::kRecv:
      return "nccl:recv " + std::to_string(rank) + "<-" + std::to_string(peer);
    default:
      return "";
  }
}

std::string_view FlightRecorderDtype(uint8_t dtype) {
  switch (static_cast<Dtype>(dtype)) {
    case Dtype::kInt8:
      return "Char";
    case Dtype::kUint8:
      return "Byte";
    case Dtype::kInt32:
      return "Int";
    case Dtype::kUint32:
      return "UInt32";
    case Dtype::kInt64:
      return "Long";
    case Dtype::kUint64:
      return "UInt64";
    case Dtype::kFloat16:
      return "Half";
    case Dtype::kFloat32:
      return "Float";
    case Dtype::kFloat64:
      return "Double";
    case Dtype::kBfloat16:
      return "BFloat16";
    case Dtype::kFloat8e4m3:
      return "Float8_e4m3fn";
    case Dtype::kFloat8e5m2:
      return "Float8_e5m2";
  }
  return "Undefined";
}

}  // namespace ncclrr::analysis
