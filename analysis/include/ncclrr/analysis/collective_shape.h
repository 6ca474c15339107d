#pragma once
// How many elements a collective sends and receives on one rank, from the count argument as
// nccl.h defines it per API (allgather: recv = send x nranks; reduce-scatter: send = recv x
// nranks; gather/scatter/reduce/broadcast: only the root's other side). Used to explain count
// mismatches, to size replay buffers and to label export slices.
#include <cstdint>
#include <string>

#include "ncclrr/trace/records.h"

namespace ncclrr::analysis {

struct CollectiveShape {
  uint64_t send_elems = 0;
  uint64_t recv_elems = 0;
};

CollectiveShape ShapeOf(const CallRecord& c, int nranks);
// "recv = sendcount x nranks" style sentence for the API's count argument.
std::string CountRelationship(Api api);

}  // namespace ncclrr::analysis
