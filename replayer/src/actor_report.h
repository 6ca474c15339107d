#pragma once
// Where one actor stood when its execution ended: what the stuck explanation needs, and what an
// MPI process sends to rank 0.
#include <cstdint>
#include <vector>

namespace ncclrr::replay {

struct ActorReport {
  uint64_t issued_units = 0;              // prefix of the actor's order that was issued
  std::vector<uint32_t> in_flight_heads;  // units at the head of a stream when aborted
  bool waiting_for_memory = false;        // stuck before issuing: the arena was full
  bool setup_done = false;
  int64_t setup_ns = 0;
};

}  // namespace ncclrr::replay
