#include "import/fr_calls.h"

#include <array>
#include <utility>

#include "ncclrr/trace/describe.h"

namespace ncclrr::fr {
namespace {

// PyTorch's profiling names (ProcessGroupNCCL.cpp; fr_trace's COLLECTIVES and P2P sets).
struct NameApi {
  std::string_view name;
  Api api;
};
constexpr std::array kNames = {
    NameApi{"all_reduce", Api::kAllReduce},
    NameApi{"allreduce", Api::kAllReduce},
    NameApi{"allreduce_coalesced", Api::kAllReduce},
    NameApi{"all_reduce_barrier", Api::kAllReduce},
    NameApi{"barrier", Api::kAllReduce},
    NameApi{"broadcast", Api::kBroadcast},
    NameApi{"_broadcast_oop", Api::kBroadcast},
    NameApi{"reduce", Api::kReduce},
    NameApi{"_reduce_oop", Api::kReduce},
    NameApi{"all_gather", Api::kAllGather},
    NameApi{"_all_gather_base", Api::kAllGather},
    NameApi{"all_gather_single", Api::kAllGather},
    NameApi{"all_gather_v", Api::kAllGather},
    NameApi{"all_gather_into_tensor_coalesced", Api::kAllGather},
    NameApi{"ALLGATHER_coalesced", Api::kAllGather},
    NameApi{"reduce_scatter", Api::kReduceScatter},
    NameApi{"_reduce_scatter_base", Api::kReduceScatter},
    NameApi{"reduce_scatter_single", Api::kReduceScatter},
    NameApi{"reduce_scatter_v", Api::kReduceScatter},
    NameApi{"reduce_scatter_tensor_coalesced", Api::kReduceScatter},
    NameApi{"REDUCE_SCATTER_coalesced", Api::kReduceScatter},
    NameApi{"all_to_all", Api::kAlltoAll},
    NameApi{"all_to_all_single", Api::kAlltoAll},
    NameApi{"all_to_all_v_single", Api::kAlltoAll},
    NameApi{"alltoall", Api::kAlltoAll},
    NameApi{"alltoall_base", Api::kAlltoAll},
    NameApi{"gather", Api::kGather},
    NameApi{"scatter", Api::kScatter},
    NameApi{"send", Api::kSend},
    NameApi{"recv", Api::kRecv},
};

uint64_t Numel(const std::vector<std::vector<int64_t>>& sizes) {
  uint64_t total = 0;
  for (const auto& dims : sizes) {
    uint64_t n = 1;
    for (int64_t d : dims) n = d > 0 ? n * static_cast<uint64_t>(d) : 0;
    total += n;
  }
  return total;
}

// "0->1" (send: me->peer) or "1<-0" (recv: me<-peer): the peer.
int PeerOf(std::string_view meta, std::string_view arrow) {
  const size_t at = meta.find(arrow);
  if (at == std::string_view::npos) return -1;
  int peer = 0;
  size_t k = at + arrow.size();
  if (k >= meta.size()) return -1;
  for (; k < meta.size() && meta[k] >= '0' && meta[k] <= '9'; ++k) {
    peer = peer * 10 + (meta[k] - '0');
    if (peer > (1 << 24)) return -1;
  }
  return peer;
}

bool InTorch(const std::string& file) {
  return file.find("packages/torch/") != std::string::npos ||
         file.find("/torch/distributed/") != std::string::npos;
}

}  // namespace

uint8_t DtypeFromC10(std::string_view name, int* per_value) {
  *per_value = 1;
  static constexpr std::pair<std::string_view, Dtype> kTypes[] = {
      {"Float", Dtype::kFloat32},
      {"Half", Dtype::kFloat16},
      {"BFloat16", Dtype::kBfloat16},
      {"Double", Dtype::kFloat64},
      {"Long", Dtype::kInt64},
      {"Int", Dtype::kInt32},
      {"Byte", Dtype::kUint8},
      {"Char", Dtype::kInt8},
      {"Bool", Dtype::kUint8},
      {"UInt32", Dtype::kUint32},
      {"UInt64", Dtype::kUint64},
      {"Float8_e4m3fn", Dtype::kFloat8e4m3},
      {"Float8_e5m2", Dtype::kFloat8e5m2}};
  for (const auto& [n, d] : kTypes)
    if (n == name) return static_cast<uint8_t>(d);
  static constexpr std::pair<std::string_view, Dtype> kComplex[] = {
      {"ComplexFloat", Dtype::kFloat32},
      {"ComplexDouble", Dtype::kFloat64},
      {"ComplexHalf", Dtype::kFloat16}};
  for (const auto& [n, d] : kComplex)
    if (n == name) {
      *per_value = 2;
      return static_cast<uint8_t>(d);
    }
  return kUnknownDtype;
}

CallShape ShapeOf(const Entry& e, int nranks) {
  CallShape s;
  std::string_view name = e.profiling_name;
  if (const size_t colon = name.find(':'); colon != std::string_view::npos)
    name = name.substr(colon + 1);  // "nccl:", "xccl:"
  std::string_view meta;
  if (const size_t space = name.find(' '); space != std::string_view::npos) {
    meta = name.substr(space + 1);
    name = name.substr(0, space);
  }
  for (const NameApi& n : kNames)
    if (n.name == name) s.api = n.api;
  if (s.api == Api::kUnknown) return s;
  // Which side NCCL's count describes: the input, except where the output is the smaller one.
  const bool by_output =
      s.api == Api::kReduceScatter || s.api == Api::kScatter || s.api == Api::kRecv;
  const auto& sizes = by_output && !e.output_sizes.empty() ? e.output_sizes : e.input_sizes;
  const auto& dtypes = by_output && !e.output_dtypes.empty() ? e.output_dtypes : e.input_dtypes;
  const auto& other = dtypes.empty() ? (by_output ? e.input_dtypes : e.output_dtypes) : dtypes;
  int per_value = 1;
  if (!other.empty()) s.dtype = DtypeFromC10(other[0], &per_value);
  s.count = Numel(sizes);
  if (s.api == Api::kAllGather && e.input_sizes.empty() && nranks > 0)
    s.count = Numel(e.output_sizes) / static_cast<uint64_t>(nranks);
  if (s.api == Api::kAlltoAll && nranks > 0) s.count /= static_cast<uint64_t>(nranks);
  if (s.api == Api::kAllReduce && name.find("barrier") != std::string_view::npos && s.count == 0)
    s.count = 1;
  s.count *= static_cast<uint64_t>(per_value);
  if (s.api == Api::kSend) s.peer = PeerOf(meta, "->");
  if (s.api == Api::kRecv) s.peer = PeerOf(meta, "<-");
  return s;
}

std::string CallSiteText(const std::vector<Frame>& frames) {
  size_t first = 0;
  while (first < frames.size() && InTorch(frames[first].file)) ++first;
  if (first == frames.size()) first = 0;  // only torch frames: keep them all
  std::string text;
  for (size_t k = first; k < frames.size() && k < first + 8; ++k) {
    if (!text.empty()) text += '<';
    text += SiteFrame(frames[k].file, frames[k].line, frames[k].name);
  }
  return text;
}

}  // namespace ncclrr::fr
