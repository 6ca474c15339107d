#include "replay_env.h"

#include <cstdlib>

namespace ncclrr::replay {
namespace {

std::string Str(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

ReplayEnv Read() {
  ReplayEnv e;
  e.hostnccl_library = Str("NCCLRR_HOSTNCCL_LIBRARY");
  e.nccl_library = Str("NCCLRR_NCCL_LIBRARY");
  if (const std::string mb = Str("NCCLRR_REPLAY_MEMORY_MB"); !mb.empty())
    e.memory_budget = std::strtoull(mb.c_str(), nullptr, 10) << 20;
  e.timing = Str("NCCLRR_REPLAY_TIMING") == "1";
  if (const std::string lr = Str("OMPI_COMM_WORLD_LOCAL_RANK"); !lr.empty())
    e.mpi_local_rank = std::atoi(lr.c_str());
  if (const std::string ls = Str("OMPI_COMM_WORLD_LOCAL_SIZE"); !ls.empty())
    e.mpi_local_size = std::atoi(ls.c_str());
  return e;
}

}  // namespace

const ReplayEnv& Env() {
  static const ReplayEnv env = Read();
  return env;
}

}  // namespace ncclrr::replay
