#pragma once
// nccl.h's in-place rule, the one copy every capture route and importer uses. `count` is what a
// call record holds (per rank for AllGather and ReduceScatter), `rank` the caller's rank and
// `root` the root of a Gather or Scatter:
//   AllGather      sendbuff == recvbuff + rank * count
//   ReduceScatter  recvbuff == sendbuff + rank * count
//   Gather         sendbuff == recvbuff + root * count (on the root; recvbuff is set there)
//   Scatter        recvbuff == sendbuff + root * count (on the root; sendbuff is set there)
//   otherwise      sendbuff == recvbuff
#include <cstdint>

#include "ncclrr/trace/records.h"

namespace ncclrr {

inline bool IsInPlace(Api api, uint64_t sendbuff, uint64_t recvbuff, uint64_t count, uint8_t dtype,
                      int64_t rank, int64_t root) {
  const auto offset = [&](int64_t index) {
    return static_cast<uint64_t>(index) * count * DtypeSize(dtype);
  };
  switch (api) {
    case Api::kAllGather:
      return rank >= 0 && sendbuff == recvbuff + offset(rank);
    case Api::kReduceScatter:
      return rank >= 0 && recvbuff == sendbuff + offset(rank);
    case Api::kGather:
      return recvbuff != 0 && root >= 0 && sendbuff == recvbuff + offset(root);
    case Api::kScatter:
      return sendbuff != 0 && root >= 0 && recvbuff == sendbuff + offset(root);
    default:
      return sendbuff == recvbuff;
  }
}

}  // namespace ncclrr
