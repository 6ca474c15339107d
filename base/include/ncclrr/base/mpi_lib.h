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
  // `out` holds out_sizes[p] bytes for process p, end to end in process order; `in` receives
  // what each sent here, laid out the same way. MPI counts are ints: when every size is a whole
  // number of 8-byte words they go as words (16 GiB in all per process), else as bytes (2 GiB).
  Status AllToAll(const std::string& out, const std::vector<uint64_t>& out_sizes, std::string* in,
                  std::vector<uint64_t>* in_sizes);

  struct Api;

 private:
  MpiLib() = default;
  std::unique_ptr<Api> api_;
  std::string who_;
  int rank_ = 0, size_ = 1;
};

}  // namespace ncclrr
