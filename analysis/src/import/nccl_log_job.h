#pragma once
// What the NCCL log importer learned from the logs, before it is written as a trace: processes,
// the communicator handles each used (LocalComm), their calls, and — after InferCommunicators —
// which handles are ranks of one communicator, which rank each is, and how sure that is.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "import/nccl_log_line.h"
#include "ncclrr/trace/records.h"

namespace ncclrr::nccl_log {

struct LoggedCall {
  CollFields fields;
  size_t local = 0;  // index into Job::locals
  int64_t time_ns = 0;
  uint32_t tid = 0;
  int prefix_dev = -1;
  uint64_t seq = 0;  // set by InferCommunicators
};

enum class RankSource { kUnknown, kInitLine, kGlobalRank, kLauncher, kDevice, kGuess };

struct LocalComm {
  size_t process = 0;
  uint64_t handle = 0;
  int nranks = -1;
  int rank = -1;
  int device = -1;
  RankSource rank_source = RankSource::kUnknown;
  std::optional<InitFields> init;  // its "Init COMPLETE" (or older "comm … rank …") line
  int64_t first_ns = 0;
  std::vector<size_t> calls;  // indices into Job::calls, log order
  size_t comm = SIZE_MAX;     // index into Job::comms once inferred
};

struct Process {
  std::string host;
  int64_t pid = 0;
  std::string source;  // the log file it came from (first seen)
  int launcher_rank = -1;
  std::map<uint64_t, size_t> locals;  // handle -> index into Job::locals
};

struct InferredComm {
  uint64_t id = 0;
  bool nccl_hash_known = false;  // id is NCCL's commId
  CommOrigin origin = CommOrigin::kUnknown;
  uint64_t parent_id = 0;
  int color = 0, key = 0;
  int nranks = 0;
  std::vector<size_t> members;  // indices into Job::locals
  std::string note;             // how it was inferred and how sure that is
};

struct Job {
  std::vector<Process> processes;
  std::vector<LocalComm> locals;
  std::vector<LoggedCall> calls;
  std::vector<InferredComm> comms;
};

// Groups the handles into communicators, assigns ranks and per-communicator sequence numbers,
// and writes a note per communicator.
void InferCommunicators(Job* job);

}  // namespace ncclrr::nccl_log
