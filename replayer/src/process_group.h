#pragma once
// A replay that runs one actor per process: under mpirun (MpiWorld), or as children the replay
// started itself (ChildProcesses in the parent, ChildLink in each child). Every process loads the
// trace and builds the same plan and orders; for each ordering the root makes the communicator
// ids, every process with an actor executes it, and the root merges the outcomes into the one
// report (explaining hangs across processes as a one-process replay does).
#include <cstdint>
#include <string>
#include <vector>

#include "executor.h"
#include "ncclrr/base/status.h"

namespace ncclrr::replay {

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual bool root() const = 0;        // makes the ids, merges, prints the report
  virtual int actor() const = 0;        // the actor this process replays; -1: none
  virtual int device_slot() const = 0;  // the GPU it replays on (-1: the actor's index)
  virtual uint64_t memory_budget(uint64_t per_gpu) const { return per_gpu; }  // per actor
  // The root's bytes to every process.
  virtual Status Broadcast(void* data, size_t bytes) = 0;
  // Every actor's blob, on the root (one entry per process that sent one); elsewhere nothing. A
  // process that left without sending is an error naming it, with the others' blobs still in
  // `all`.
  virtual Status GatherToRoot(const std::string& blob, std::vector<std::string>* all) = 0;
};

// Execute() for one process of the group: runs actor() (if any), then merges every process's
// outcomes on the root (other processes return only their own).
ExecResult ExecuteInGroup(ProcessGroup& group, const ReplayPlan& plan, Backend& backend,
                          const DataSource& data, const IssueOrder& order, ExecOptions options);

}  // namespace ncclrr::replay
