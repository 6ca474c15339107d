// Compares the trace of a job recorded through the profiler plugin with the trace of the same job
// recorded through the preload: the same communicators (NCCL's commHash, which the plugin gets
// from NCCL itself, against the preload's own computation of it, per kind of communicator) and
// the same calls on each (api, count, datatype, root or peer, sequence number).
#pragma once
#include <string>
#include <vector>

#include "ncclrr/base/status.h"
#include "ncclrr/trace/trace_reader.h"

namespace ncclrr::profiler::test {

struct CommAgreement {
  uint64_t comm_id = 0;
  int rank = -1;
  std::string kind;  // the preload's CommOrigin name ("InitRank", "Split", ...)
  bool in_plugin = false, in_preload = false;
  bool preload_hash_known = true;  // false: the preload recorded a stand-in id
  size_t plugin_calls = 0, preload_calls = 0;
  std::string first_difference;  // empty when the calls agree
};

struct RouteComparison {
  std::vector<CommAgreement> comms;
  bool agree = true;
  std::string Report() const;  // one line per communicator and rank, then a summary by kind
};

// `plugin_dir` and `preload_dir` are trace directories of the same job.
StatusOr<RouteComparison> CompareRoutes(const std::string& plugin_dir,
                                        const std::string& preload_dir);

}  // namespace ncclrr::profiler::test
