#pragma once
// Collects the lines of one or more logs into a Job: a process per (host, pid), a LocalComm per
// communicator handle a process used. Lines that lost NCCL's prefix (two processes writing at
// once) are given to the one process whose handle they name, when exactly one does.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "import/nccl_log_job.h"
#include "ncclrr/analysis/nccl_log_import.h"

namespace ncclrr::nccl_log {

class JobBuilder {
 public:
  // `source` names the log (for notes); lines of one source are numbered from 1.
  void BeginSource(std::string source);
  void AddLine(std::string_view line);
  // Attributes the prefix-less lines, infers communicators, fills `result` (counts, notes,
  // warnings; not files) and returns the job.
  Job Finish(NcclLogImportResult* result);

 private:
  struct Pending {  // a COLL line without NCCL's prefix, placed once every handle is known
    CollFields coll;
    size_t source;
    int64_t time_ns;
  };
  size_t ProcessOf(const std::string& host, int64_t pid);
  size_t LocalOf(size_t process, uint64_t handle, int64_t time_ns);
  void AddCall(size_t process, const CollFields& coll, int64_t time_ns, uint32_t tid, int dev);

  std::vector<std::string> sources_;
  std::vector<int64_t> line_no_;
  std::vector<uint64_t> out_of_range_;
  std::vector<bool> source_has_prefix_;
  std::vector<Pending> pending_;
  Job job_;
  std::map<std::pair<std::string, int64_t>, size_t> process_index_;
  uint64_t lines_ = 0;
};

}  // namespace ncclrr::nccl_log
