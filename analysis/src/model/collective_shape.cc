#include "ncclrr/analysis/collective_shape.h"

#include <string>

#include "ncclrr/analysis/model.h"

namespace ncclrr::analysis {

CollectiveShape ShapeOf(const CallRecord& c, int nranks) {
  const uint64_t n = static_cast<uint64_t>(nranks > 0 ? nranks : 1);
  const bool root = c.rank == c.root_peer;
  switch (static_cast<Api>(c.api)) {
    case Api::kAllReduce:
      return {c.count, c.count};
    case Api::kBroadcast:
    case Api::kBcast:
      return {root ? c.count : 0, c.count};
    case Api::kReduce:
      return {c.count, root ? c.count : 0};
    case Api::kAllGather:
      return {c.count, c.count * n};
    case Api::kReduceScatter:
      return {c.count * n, c.count};
    case Api::kAlltoAll:
      return {c.count * n, c.count * n};
    case Api::kGather:
      return {c.count, root ? c.count * n : 0};
    case Api::kScatter:
      return {root ? c.count * n : 0, c.count};
    case Api::kSend:
      return {c.count, 0};
    case Api::kRecv:
      return {0, c.count};
    default:
      return {};
  }
}

std::string CountRelationship(Api api) {
  switch (api) {
    case Api::kAllReduce:
      return "count is the element count of both the send and the receive buffer";
    case Api::kBroadcast:
    case Api::kBcast:
      return "count is the element count the root sends and every rank receives";
    case Api::kReduce:
      return "count is the element count every rank sends and the root receives";
    case Api::kAllGather:
      return "count is sendcount: each rank sends count elements and receives count x nranks";
    case Api::kReduceScatter:
      return "count is recvcount: each rank sends count x nranks elements and receives count";
    case Api::kAlltoAll:
      return "count is per peer: each rank sends and receives count x nranks elements";
    case Api::kGather:
      return "count is sendcount: each rank sends count elements, the root receives count x "
             "nranks";
    case Api::kScatter:
      return "count is recvcount: the root sends count x nranks elements, each rank receives "
             "count";
    case Api::kSend:
    case Api::kRecv:
      return "a Send and its matching Recv must move the same number of elements";
    default:
      return "";
  }
}

std::string ShortCall(const CallRecord& c) {
  const Api api = static_cast<Api>(c.api);
  std::string s(ApiName(api));
  s += "(" + std::to_string(c.count) + " " + std::string(DtypeName(c.dtype));
  const bool reduces = api == Api::kAllReduce || api == Api::kReduce || api == Api::kReduceScatter;
  if (reduces) s += ", " + std::string(RedOpName(c.op, c.flags));
  // A negative root is one the trace does not know (a Flight Recorder dump records none).
  if (IsRooted(api)) s += c.root_peer < 0 ? ", root?" : ", root " + std::to_string(c.root_peer);
  if (api == Api::kSend) s += " to " + std::to_string(c.root_peer);
  if (api == Api::kRecv) s += " from " + std::to_string(c.root_peer);
  return s + ")";
}

}  // namespace ncclrr::analysis
