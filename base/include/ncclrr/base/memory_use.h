#pragma once
// What this process holds in memory, and what the machine has left: how a check in passes sizes
// its groups (analysis/check_in_passes.h). Linux (/proc); 0 where it cannot be read.
#include <cstdint>

namespace ncclrr {

uint64_t ResidentBytes();  // this process's resident set now
// What can be allocated without swapping: MemAvailable, or less where a memory cgroup this
// process is in (a Slurm job's, a container's) leaves less room.
uint64_t AvailableMemoryBytes();

}  // namespace ncclrr
