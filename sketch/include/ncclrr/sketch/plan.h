#pragma once
// Which sketches a call needs and where their blocks sit in the collective's logical result.
// The interposer sketches exactly these layouts; the identity checks (identity.h) match blocks
// by their global index `first`, so both sides must agree on this plan.
//
//   collective      send side (before the call)          recv side (after the call)
//   AllReduce       1 block, g = 0                        1 block, g = 0
//   Broadcast       root only: 1 block, g = 0             every rank: 1 block, g = 0
//   Reduce          every rank: 1 block, g = 0            root only: 1 block, g = 0
//   AllGather       1 block at g = rank*sc                N blocks of sc at g = r*sc
//   ReduceScatter   N blocks of rc at g = j*rc            1 block at g = rank*rc
//   AlltoAll        N blocks of c at g = (rank*N + j)*c   N blocks of c at g = (i*N + rank)*c
//   Gather          1 block at g = rank*c                 root only: N blocks at g = r*c
//   Scatter         root only: N blocks at g = j*c        1 block at g = rank*c
//   Send / Recv     1 block, g = 0                        1 block, g = 0
// (count as nccl.h defines it: sc/rc/c are the per-rank counts.)
#include <cstdint>
#include <optional>

#include "ncclrr/base/status.h"
#include "ncclrr/sketch/sketch.h"
#include "ncclrr/trace/records.h"

namespace ncclrr::sketch {

struct CallSketchPlan {
  std::optional<BlockLayout> send;  // sketch sendbuff before the call with this layout
  std::optional<BlockLayout> recv;  // sketch recvbuff after the call with this layout
  // Sketch the send side in kFullAndRace mode and re-read its race sample (kRaceOnly) after the
  // call: only when the call is out of place (never re-read bytes NCCL writes).
  bool send_race = false;
};

// `in_place` as nccl.h defines it (reduce-scatter: recvbuff == sendbuff + rank*recvcount;
// all-gather: sendbuff == recvbuff + rank*sendcount; others: sendbuff == recvbuff).
StatusOr<CallSketchPlan> PlanCall(Api api, uint8_t dtype, uint64_t count, int nranks, int rank,
                                  int root, bool in_place);

// The rank whose send block holds global index `first` in a data-movement collective (the
// source of a recv block), or -1 for reductions and unknown layouts.
int CopySourceRank(Api api, uint64_t count, int nranks, int root, uint64_t first);

}  // namespace ncclrr::sketch
