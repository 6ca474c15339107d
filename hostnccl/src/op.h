// One NCCL call on its way through a host stream, and the non-blocking state machines that move
// its data through the communicator's segment. AdvanceOp never blocks: it does whatever peers
// allow and reports where it would wait, so one thread can drive any number of ranks (group
// calls, InitAll) and a rank that never arrives cannot wedge the caller.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "comm.h"
#include "segment.h"

namespace ncclrr::host {

// Where an operation is blocked, so an idle driver can sleep on the right futex.
struct WaitHint {
  std::shared_ptr<CommRank> comm;  // keeps the segment mapped while the driver sleeps on it
  uint32_t epoch = 0;
};

struct Op {
  std::shared_ptr<CommRank> comm;
  OpDesc desc{};
  const void* send = nullptr;
  void* recv = nullptr;
  uint64_t seq = 0;  // collective position, or per-peer message index for send/recv
  const void* device_scalar = nullptr;

  // Progress.
  int phase = 0;
  uint64_t round = 0, rounds = 0;
  bool done = false;
  ncclResult_t result = ncclSuccess;
  int64_t blocked_since = 0;
};

// Returns true if the op changed state (so other ops may now progress).
bool AdvanceOp(Op& op, WaitHint* hint);

// Shared by both state machines.
bool FailIfBroken(Op& op);
void FinishOp(Op& op, ncclResult_t r);
// Called when the op cannot move; fails it after the timeout with `why` as the diagnostic.
void NoteBlocked(Op& op, WaitHint* hint, uint32_t epoch, const char* phase, const std::string& why);

bool AdvanceColl(Op& op, WaitHint* hint);
bool AdvanceP2p(Op& op, WaitHint* hint);

// Bytes rank `rank` contributes to a collective described by d (what it stages).
uint64_t ContributedBytes(const OpDesc& d, int rank, int nranks);
// Bytes of rank `rank`'s recv buffer a collective described by d writes (0: none).
uint64_t ReceivedBytes(const OpDesc& d, int rank, int nranks);

}  // namespace ncclrr::host
