#pragma once
// One PyTorch Flight Recorder dump (torch/csrc/distributed/c10d/FlightRecorderDetail.hpp), read
// from its pickle (the default) or its JSON variant, versions 2.0 to 2.10. Field by field:
// every field may be missing in some version, so each has a stated fallback; a field of the
// wrong type is an error that names the entry and what was expected.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ncclrr/base/status.h"

namespace ncclrr::fr {

struct Frame {
  std::string file;
  std::string name;
  int64_t line = 0;
};

struct Entry {
  int64_t record_id = -1;
  int64_t pg_id = -1;
  std::string pg_name;             // process_group[0]: the group's name, the same on every rank
  std::string pg_desc;             // process_group[1]: "default_pg", "undefined", ...
  int64_t collective_seq_id = -1;  // 1-based; "seq_id" before 2.2
  int64_t p2p_seq_id = -1;
  int64_t op_id = -1;
  std::string profiling_name;  // "nccl:all_reduce", "nccl:send 0->1"
  std::vector<std::vector<int64_t>> input_sizes, output_sizes;
  std::vector<std::string> input_dtypes, output_dtypes;  // c10 names: "Float", "BFloat16"
  std::string state;                                     // "scheduled", "started", "completed"
  int64_t time_created_ns = 0;
  int64_t time_started_ns = 0;  // 0: not discovered (None in pickles, 0 in JSON)
  int64_t time_completed_ns = 0;
  bool is_p2p = false;
  int64_t timeout_ms = 0;
  std::string thread_id;
  std::vector<Frame> frames;  // innermost first; absent in JSON dumps
};

struct Group {
  std::string name;
  std::string desc;
  std::vector<int64_t> ranks;  // global ranks, in group-rank order
};

struct Dump {
  std::string version;  // "2.10"
  std::string comm_lib_version;
  std::map<std::string, Group> groups;  // pg_config, by group name
  std::vector<Entry> entries;           // oldest first
  bool has_pg_config = false;
  uint64_t entries_without_name = 0;  // skipped: no profiling_name
};

// Detects the encoding: a pickle starts with PROTO (0x80); JSON with '{'; the JSON text written
// through Python's repr of bytes (b'{...}') is accepted too.
StatusOr<Dump> ParseDump(std::string_view bytes);

}  // namespace ncclrr::fr
