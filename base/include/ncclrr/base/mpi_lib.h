#pragma once
// Open MPI, loaded at run time (ncclrr never links it): libmpi from $NCCLRR_MPI_LIBRARY,
// libmpi.so.40 or libmpi.so, spoken to through Open MPI's ABI (handles are the addresses of
// ompi_mpi_comm_world, ompi_mpi_byte, ...). Used by `replay --mpi` and `check --mpi`; every call
// is collective over MPI_COMM_WORLD and comes from one thread.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ncclrr/base/status.h"

namespace ncclrr {

class MpiLib {
 public:
  // Loads libmpi and initializes it (MPI_THREAD_FUNNELED). `who` prefixes error messages
  // ("--mpi").
  static StatusOr<std::unique_ptr<MpiLib>> Init(const std::string& who);
  ~MpiLib();  // MPI_Finalize
  MpiLib(const MpiLib&) = delete;
  MpiLib& operator=(const MpiLib&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  Status Broadcast(void* data, size_t bytes);
  // Every process's blob, on rank 0 only (`all` stays empty elsewhere).
  Status GatherToRoot(const std::string& blob, std::vector<std::string>* all);
  // out[p] goes to process p; (*in)[p] is what process p sent here. Blobs of any size (sent in
  // pieces of at most 1 GiB: MPI counts are ints).
  Status AllToAll(const std::vector<std::string>& out, std::vector<std::string>* in);

  struct Api;

 private:
  MpiLib() = default;
  std::unique_ptr<Api> api_;
  std::string who_;
  int rank_ = 0, size_ = 1;
};

}  // namespace ncclrr
