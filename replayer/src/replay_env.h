#pragma once
// Every environment variable the replayer reads, read once (docs/replay.md "Environment").
// NCCL_ALGO/NCCL_PROTO/NCCL_*NCHANNELS are NCCL's own and read where they are pinned.
#include <cstdint>
#include <string>

namespace ncclrr::replay {

struct ReplayEnv {
  std::string hostnccl_library;  // NCCLRR_HOSTNCCL_LIBRARY
  std::string nccl_library;      // NCCLRR_NCCL_LIBRARY (file or folder)
  uint64_t memory_budget = 0;    // NCCLRR_REPLAY_MEMORY_MB, in bytes (0: unset)
  bool timing = false;           // NCCLRR_REPLAY_TIMING=1
  int mpi_local_rank = -1;       // OMPI_COMM_WORLD_LOCAL_RANK (-1: unset)
  int mpi_local_size = 0;        // OMPI_COMM_WORLD_LOCAL_SIZE (0: unset)
};

const ReplayEnv& Env();

}  // namespace ncclrr::replay
