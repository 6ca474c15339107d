// One cached accessor per environment knob (read once, like NCCL_PARAM). docs/hostnccl.md lists
// them.
#pragma once
#include <cstdint>

namespace ncclrr::host {

// NCCLRR_HOST_TIMEOUT_MS (default 10000): how long a call may wait for peers before it fails.
int64_t TimeoutNs();
// NCCLRR_HOST_NOOP=1: every call returns ncclSuccess at once (measures an interposer's cost).
bool NoopMode();

}  // namespace ncclrr::host
