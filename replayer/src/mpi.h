#pragma once
// --mpi: one process per actor under Open MPI, libmpi loaded at run time (its ABI: handles are
// the addresses of ompi_mpi_comm_world, ompi_mpi_byte, ...). MPI rank 0 is the group's root;
// every process runs the actor whose index is its MPI rank (process_group.h).
#include <memory>
#include <string>
#include <vector>

#include "gpu_sharing.h"
#include "ncclrr/base/mpi_lib.h"
#include "process_group.h"

namespace ncclrr::replay {

class MpiWorld : public ProcessGroup {
 public:
  // Loads libmpi ($NCCLRR_MPI_LIBRARY, libmpi.so.40, libmpi.so) and initializes it.
  static StatusOr<std::unique_ptr<MpiWorld>> Init();
  ~MpiWorld() override;  // MPI_Finalize
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  int size() const { return size_; }
  // This host's ranks over its GPUs (local rank modulo GPUs): sets what NCCL needs when ranks
  // share a GPU. Call before the first NCCL call.
  GpuPlacement Place(int gpus, int nccl_version);

  bool root() const override { return rank_ == 0; }
  int actor() const override { return rank_; }
  int device_slot() const override { return placement_.SlotOf(local_rank_); }
  uint64_t memory_budget(uint64_t per_gpu) const override {
    return per_gpu / static_cast<uint64_t>(placement_.SharersOf(device_slot()));
  }
  Status Broadcast(void* data, size_t bytes) override;
  Status GatherToRoot(const std::string& blob, std::vector<std::string>* all) override;

 private:
  MpiWorld() = default;
  std::unique_ptr<MpiLib> mpi_;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  GpuPlacement placement_;
};

}  // namespace ncclrr::replay
