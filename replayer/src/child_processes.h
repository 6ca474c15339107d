#pragma once
// `replay --processes` (and --backend nccl with more actors than GPUs): the replay starts one
// child process per actor, running this same executable with the same replay arguments. The
// parent is the group's root and replays no actor: it makes the communicator ids, sends them to
// every child over a socket pair, collects each child's outcomes and writes the one report. A
// child finds its link, actor, GPU and memory in $NCCLRR_REPLAY_CHILD, dies with its parent
// (PR_SET_PDEATHSIG) and prints nothing of its own but errors.
#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "gpu_sharing.h"
#include "process_group.h"

namespace ncclrr::replay {

// The parent's side.
class ChildProcesses : public ProcessGroup {
 public:
  // `args`: the replay's command-line arguments after the executable ("replay", DIR, ...).
  // `budget`: replay memory per GPU, divided among the processes on it. `wait_s`: once one child
  // has reported an ordering, how long the others may take before they count as stuck.
  static StatusOr<std::unique_ptr<ChildProcesses>> Start(const std::vector<std::string>& args,
                                                         const GpuPlacement& placement,
                                                         uint64_t budget, double wait_s);
  ~ChildProcesses() override;  // closes the links, reaps the children (killing late ones)

  bool root() const override { return true; }
  int actor() const override { return -1; }
  int device_slot() const override { return -1; }
  Status Broadcast(void* data, size_t bytes) override;
  Status GatherToRoot(const std::string& blob, std::vector<std::string>* all) override;

 private:
  struct Child {
    pid_t pid = -1;
    int fd = -1;
    bool gone = false;
    std::string why;  // how it ended, once gone
  };
  ChildProcesses() = default;
  void Lost(size_t actor, const std::string& why);
  std::vector<Child> children_;
  double wait_s_ = 60;
};

// A child's side: nullptr unless this process was started as a replay child.
class ChildLink : public ProcessGroup {
 public:
  static StatusOr<std::unique_ptr<ChildLink>> FromEnvironment();
  ~ChildLink() override;

  bool root() const override { return false; }
  int actor() const override { return actor_; }
  int device_slot() const override { return slot_; }
  uint64_t memory_budget(uint64_t) const override { return budget_; }
  Status Broadcast(void* data, size_t bytes) override;
  Status GatherToRoot(const std::string& blob, std::vector<std::string>* all) override;

 private:
  ChildLink() = default;
  int fd_ = -1, actor_ = 0, slot_ = -1;
  uint64_t budget_ = 0;
};

// Whether this process is a replay child (the CLI then keeps quiet).
bool IsReplayChild();

}  // namespace ncclrr::replay
