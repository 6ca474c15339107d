// One cached accessor per environment knob (read once, like NCCL_PARAM). docs/hostnccl.md lists
// them.
#pragma once
#include <cstdint>

namespace ncclrr::host {

// NCCLRR_HOST_TIMEOUT_MS (default 10000): how long a call may wait for peers before it fails.
int64_t TimeoutNs();
// NCCLRR_HOST_NOOP=1: every call returns ncclSuccess at once (measures an interposer's cost).
bool NoopMode();

// NCCLRR_HOST_FLIP_OUTPUT=RANK:SEQ[:BIT] (unset: off): a faulty link, made deterministic. When
// communicator rank RANK finishes the collective at position SEQ (0-based, per communicator,
// every communicator), bit BIT (default 30: the top exponent bit of a 4-byte element 0) of its
// output buffer is flipped, after NCCL wrote it and before the call completes. Nothing happens
// when that rank has no output there or the buffer is shorter.
struct OutputFlip {
  int rank = -1;  // -1: off
  uint64_t seq = 0;
  uint64_t bit = 30;
};
const OutputFlip& OutputFlipFault();

}  // namespace ncclrr::host
