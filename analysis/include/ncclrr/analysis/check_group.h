#pragma once
// The processes one check is spread over (`ncclrr check DIR --mpi`, docs/check.md "Checking on
// many machines"): each reads a share of the files, and the calls go, communicator by
// communicator, to the process that checks them. Every member calls each exchange in the same
// order (they are collective).
#include <memory>
#include <string>
#include <vector>

#include "ncclrr/analysis/check.h"
#include "ncclrr/base/status.h"

namespace ncclrr::analysis {

class CheckGroup {
 public:
  virtual ~CheckGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Blobs laid end to end: `out` holds out_sizes[p] bytes for member p, in member order; `in`
  // receives what each member sent here, laid out the same way ((*in_sizes)[p] bytes from p).
  // Whole 8-byte words (every size a multiple of 8) go as words: up to 16 GiB per member.
  virtual Status AllToAllPacked(const std::string& out, const std::vector<uint64_t>& out_sizes,
                                std::string* in, std::vector<uint64_t>* in_sizes) = 0;
  // out[p] goes to member p; (*in)[p] is what member p sent here.
  Status AllToAll(const std::vector<std::string>& out, std::vector<std::string>* in);
  // Every member's blob, on every member.
  Status AllGather(const std::string& mine, std::vector<std::string>* all) {
    return AllToAll(std::vector<std::string>(static_cast<size_t>(size()), mine), all);
  }
};

// `n` members that exchange in memory, one per thread of this process: how tests split a check
// the way `--mpi` does, without MPI.
std::vector<std::unique_ptr<CheckGroup>> LocalCheckGroups(int n);

// The processes of this MPI job (Open MPI, loaded at run time: NCCLRR_MPI_LIBRARY, libmpi.so.40).
StatusOr<std::unique_ptr<CheckGroup>> MpiCheckGroup();

// What one member did.
struct SpreadStats {
  uint64_t calls_held = 0;   // call records this member held (its comms', and pairs' it checks)
  uint64_t comms_owned = 0;  // communicators it checked
  bool whole = false;        // the trace could not be spread: member 0 checked all of it
};

// Checks the trace at `dir` spread over the members of `group` (every member calls it). Member
// 0 gets the report, formatted byte for byte as Check() of the whole trace in one process would
// give; the others get an empty one. A trace whose calls name communicators or ranks their files
// never announced (a damaged trace), or one with sketches or captures (the data checks' tallies
// span communicators), is checked whole by member 0.
StatusOr<Report> CheckSpread(const std::string& dir, CheckGroup& group,
                             const CheckOptions& options = {}, SpreadStats* stats = nullptr);

}  // namespace ncclrr::analysis
