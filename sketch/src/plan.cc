#include "ncclrr/sketch/plan.h"

#include <string>

namespace ncclrr::sketch {
namespace {

BlockLayout One(uint8_t dtype, uint64_t count, uint64_t g) {
  BlockLayout l;
  l.dtype = dtype;
  l.block_count = count;
  l.nblocks = 1;
  l.g0 = g;
  return l;
}
BlockLayout Blocks(uint8_t dtype, uint64_t count, int n, uint64_t g0, uint64_t gstride) {
  BlockLayout l = One(dtype, count, g0);
  l.nblocks = uint32_t(n);
  l.gstride = gstride;
  return l;
}

}  // namespace

StatusOr<CallSketchPlan> PlanCall(Api api, uint8_t dtype, uint64_t count, int nranks, int rank,
                                  int root, bool in_place) {
  if (DtypeSize(dtype) == 0)
    return InvalidArgument("sketch plan: unknown datatype code " + std::to_string(dtype));
  if (nranks <= 0 || rank < 0 || rank >= nranks)
    return InvalidArgument("sketch plan: rank " + std::to_string(rank) + " of " +
                           std::to_string(nranks) + " ranks is not a communicator position");
  if (IsRooted(api) && (root < 0 || root >= nranks))
    return InvalidArgument("sketch plan: root " + std::to_string(root) + " is outside 0.." +
                           std::to_string(nranks - 1));
  const uint64_t n = uint64_t(nranks), r = uint64_t(rank);
  const bool is_root = rank == root;
  CallSketchPlan p;
  switch (api) {
    case Api::kAllReduce:
      p.send = One(dtype, count, 0);
      p.recv = One(dtype, count, 0);
      break;
    case Api::kBroadcast:
    case Api::kBcast:
      if (is_root) p.send = One(dtype, count, 0);
      p.recv = One(dtype, count, 0);
      break;
    case Api::kReduce:
      p.send = One(dtype, count, 0);
      if (is_root) p.recv = One(dtype, count, 0);
      break;
    case Api::kAllGather:
      p.send = One(dtype, count, r * count);
      p.recv = Blocks(dtype, count, nranks, 0, count);
      break;
    case Api::kReduceScatter:
      p.send = Blocks(dtype, count, nranks, 0, count);
      p.recv = One(dtype, count, r * count);
      break;
    case Api::kAlltoAll:
      p.send = Blocks(dtype, count, nranks, r * n * count, count);
      p.recv = Blocks(dtype, count, nranks, r * count, n * count);
      break;
    case Api::kGather:
      p.send = One(dtype, count, r * count);
      if (is_root) p.recv = Blocks(dtype, count, nranks, 0, count);
      break;
    case Api::kScatter:
      if (is_root) p.send = Blocks(dtype, count, nranks, 0, count);
      p.recv = One(dtype, count, r * count);
      break;
    case Api::kSend:
      p.send = One(dtype, count, 0);
      break;
    case Api::kRecv:
      p.recv = One(dtype, count, 0);
      break;
    default:
      return InvalidArgument("sketch plan: " + std::string(ApiName(api)) +
                             " moves no data; only collectives and Send/Recv are sketched");
  }
  // Bcast's in-place root and Reduce's in-place root read and write one buffer.
  p.send_race = p.send.has_value() && !in_place;
  return p;
}

int CopySourceRank(Api api, uint64_t count, int nranks, int root, uint64_t first) {
  if (count == 0 || nranks <= 0) return -1;
  const uint64_t n = uint64_t(nranks);
  switch (api) {
    case Api::kBroadcast:
    case Api::kBcast:
    case Api::kScatter:
      return root;
    case Api::kAllGather:
    case Api::kGather:
      return first / count < n ? int(first / count) : -1;
    case Api::kAlltoAll:  // block (i*N + j)*c comes from rank i
      return (first / count) / n < n ? int((first / count) / n) : -1;
    default:
      return -1;
  }
}

}  // namespace ncclrr::sketch
