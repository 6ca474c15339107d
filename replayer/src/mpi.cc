#include "mpi.h"

#include <algorithm>
#include <cstdlib>

#include "replay_env.h"

namespace ncclrr::replay {

StatusOr<std::unique_ptr<MpiWorld>> MpiWorld::Init() {
  auto mpi = MpiLib::Init("--mpi");
  if (!mpi.ok()) return mpi.status();
  std::unique_ptr<MpiWorld> w(new MpiWorld());
  w->mpi_ = std::move(mpi.value());
  w->rank_ = w->mpi_->rank();
  w->size_ = w->mpi_->size();
  w->local_rank_ = w->rank_;
  if (Env().mpi_local_rank >= 0) w->local_rank_ = Env().mpi_local_rank;
  w->local_size_ = Env().mpi_local_size > 0 ? Env().mpi_local_size : w->size_;
  return w;
}

MpiWorld::~MpiWorld() = default;

GpuPlacement MpiWorld::Place(int gpus, int nccl_version) {
  placement_ = PlaceOnGpus(local_size_, gpus, nccl_version);
  for (const auto& [k, v] : placement_.EnvFor(local_rank_, HostName()))
    setenv(k.c_str(), v.c_str(), 1);
  return placement_;
}

Status MpiWorld::Broadcast(void* data, size_t bytes) { return mpi_->Broadcast(data, bytes); }

Status MpiWorld::GatherToRoot(const std::string& blob, std::vector<std::string>* out) {
  return mpi_->GatherToRoot(blob, out);
}

}  // namespace ncclrr::replay
