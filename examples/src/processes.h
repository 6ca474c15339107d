// --processes: one process per rank, as torchrun and mpirun run real jobs. The parent starts a
// child per rank running this same command line; rank 0 makes the communicator ids and leaves
// them in a file the others read (a launcher's store, in miniature). With --backend nccl every
// child gets its own NCCL_HOSTID, so ranks may share a GPU: NCCL then connects them through its
// network transport (sockets over lo unless NCCL_SOCKET_IFNAME says otherwise).
#pragma once
#include <vector>

#include <nccl.h>

namespace ncclrr::example {

// The parent: starts `ranks` children and waits for them. Exit 3 if any rank hung, 2 if any
// failed, 1 if any saw wrong results, else 0.
int RunRankProcesses(char** argv, int ranks, bool real_nccl);

// This process's rank when it is a child of RunRankProcesses, else -1.
int ChildRank();

// The ids of `count` communicators: made by rank 0, read by the others (waiting up to 60 s).
std::vector<ncclUniqueId> SharedIds(int count, int rank);

}  // namespace ncclrr::example
