#pragma once
// Where a replayed call's send and receive buffers sit inside the block a unit allocates, with
// the in-place layouts nccl.h defines (allgather/gather: send = recv + rank*count; reduce-scatter
// /scatter: recv = send + rank*count; others: send == recv).
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "plan.h"

namespace ncclrr::replay {

inline size_t AlignUp(size_t n) { return (n + 255) / 256 * 256; }

struct CallLayout {
  size_t send_offset = 0, recv_offset = 0;
  size_t bytes = 0;  // aligned size of the call's region
  size_t send_bytes = 0, recv_bytes = 0;
};

inline CallLayout LayoutOf(const PlanCall& c) {
  const size_t size = DtypeSize(c.dtype);
  CallLayout l;
  l.send_bytes = c.send_elems * size;
  l.recv_bytes = c.recv_elems * size;
  const size_t own_slot = (static_cast<size_t>(c.rank) + 1) * c.count * size;
  const size_t at_rank = static_cast<size_t>(c.rank) * c.count * size;
  size_t bytes = 0;
  if (!c.in_place) {
    l.recv_offset = AlignUp(l.send_bytes);
    bytes = l.recv_offset + l.recv_bytes;
  } else if (c.api == Api::kAllGather || c.api == Api::kGather) {
    l.send_offset = at_rank;
    bytes = std::max(l.recv_bytes, own_slot);
  } else if (c.api == Api::kReduceScatter || c.api == Api::kScatter) {
    l.recv_offset = at_rank;
    bytes = std::max(l.send_bytes, own_slot);
  } else {
    bytes = std::max(l.send_bytes, l.recv_bytes);
  }
  l.bytes = AlignUp(std::max<size_t>(bytes, 1));
  return l;
}

}  // namespace ncclrr::replay
