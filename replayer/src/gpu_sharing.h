#pragma once
// Where the processes of a one-process-per-actor replay run, when there are more of them than
// GPUs. NCCL refuses two ranks of one communicator on one GPU of one host; a process that sets
// its own NCCL_HOSTID is a host of its own to NCCL, which then connects it through its network
// transport (sockets over lo on one machine). NCCL 2.30 and later allow it outright with
// NCCL_MULTI_RANK_GPU_ENABLE=1. Results, pairing, orders and hangs are real NCCL's; speed is not.
//
// Process i replays on GPU i % gpus. With host ids, the processes of "host" i / gpus hold one
// GPU each, so processes on different GPUs still share a host (and NCCL's faster paths).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ncclrr/base/status.h"

namespace ncclrr::replay {

enum class GpuSharing : uint8_t {
  kNone,          // at most one process per GPU (or no GPUs: the host backend)
  kHostIds,       // a distinct NCCL_HOSTID per group of processes that share no GPU
  kMultiRankGpu,  // NCCL >= 2.30: NCCL_MULTI_RANK_GPU_ENABLE=1
};

struct GpuPlacement {
  int processes = 0;
  int gpus = 0;  // 0: not on GPUs (the host backend)
  GpuSharing sharing = GpuSharing::kNone;

  int SlotOf(int index) const { return gpus > 0 ? index % gpus : index; }
  int SharersOf(int slot) const;  // processes replaying on GPU `slot` (at least 1)
  int MaxPerGpu() const { return SharersOf(0); }
  // NCCL settings process `index` needs before its first communicator. `host` names this
  // machine (the host ids must differ from other machines' under mpirun).
  std::vector<std::pair<std::string, std::string>> EnvFor(int index, const std::string& host) const;
  // "4 processes on 1 GPU (4 per GPU); each its own NCCL host id: NCCL's network transport"
  std::string Describe() const;
};

// `nccl_version` as NCCL_VERSION_CODE (2.28.9: 22809); gpus 0 for the host backend.
GpuPlacement PlaceOnGpus(int processes, int gpus, int nccl_version);

// This machine's name, for host ids.
std::string HostName();

}  // namespace ncclrr::replay

namespace ncclrr::replay {

struct ReplayPlan;

// Buffers a replay needs: per actor, the largest block one of its units allocates (the arena can
// never be smaller). Refuses, saying how much is needed, when ranks share a GPU and an actor's
// largest block exceeds its share of `per_gpu` bytes.
Status CheckMemoryFits(const ReplayPlan& plan, const GpuPlacement& placement, uint64_t per_gpu);
uint64_t LargestBlock(const ReplayPlan& plan, uint32_t actor);

}  // namespace ncclrr::replay
