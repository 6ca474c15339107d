#pragma once
// --mpi: one process per actor under Open MPI, libmpi loaded at run time (its ABI: handles are
// the addresses of ompi_mpi_comm_world, ompi_mpi_byte, ...). Every process loads the trace and
// builds the same plan and orders; for each ordering, MPI rank 0 makes the communicator ids,
// every process runs the actor whose index is its MPI rank, and rank 0 gathers the outcomes and
// writes the report.
#include <memory>
#include <string>
#include <vector>

#include "executor.h"
#include "ncclrr/analysis/model.h"
#include "ncclrr/replay/options.h"
#include "ncclrr/replay/report.h"

namespace ncclrr::replay {

class MpiWorld {
 public:
  // Loads libmpi ($NCCLRR_MPI_LIBRARY, libmpi.so.40, libmpi.so) and initializes it.
  static StatusOr<std::unique_ptr<MpiWorld>> Init();
  ~MpiWorld();  // MPI_Finalize
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }
  void Broadcast(void* data, size_t bytes);  // from rank 0
  // Every process's blob, on rank 0 (empty elsewhere).
  std::vector<std::string> GatherToRoot(const std::string& blob);

  struct Api;

 private:
  MpiWorld() = default;
  std::unique_ptr<Api> api_;
  int rank_ = 0, size_ = 1, local_rank_ = 0;
};

// Execute() for one process of an MPI job: runs actor rank(), then merges every process's
// outcomes on rank 0 (other ranks return only their own).
ExecResult ExecuteUnderMpi(MpiWorld& mpi, const ReplayPlan& plan, Backend& backend,
                           const DataSource& data, const IssueOrder& order, ExecOptions options);

}  // namespace ncclrr::replay
