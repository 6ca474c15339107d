#pragma once
// One line of an NCCL or RCCL INFO log, read without regular expressions (a console log can hold
// megabyte-long lines, and std::regex recurses per character). Understood shapes, NCCL 2.4–2.30
// and RCCL:
//   [launcher prefix] host:pid:tid [dev] NCCL INFO <body>
// where the launcher prefix is anything a launcher or terminal put in front ("[rank3]:",
// "[default0]:", "(RayTrainWorker pid=…)", "0: ", "> ", "[2026-05-05 06:16:47] ") and <body> is
//   [N] Op: opCount HEX sendbuff P recvbuff P count N datatype D op O root R comm P [nranks=N]
//       stream P [task T globalrank G]                                          (COLL)
//   [ncclCommInit…|ncclCommSplit] comm P rank R nranks N cudaDev D … [commId 0xH |
//       parent P splitCount S color C key K] [- Init COMPLETE|START]            (INIT)
// Everything else (tuning lines "AllReduce: 4 Bytes -> Algo …", RCCL "##" kernel traces,
// transport lines) is kOther. Two messages glued onto one line (two processes writing at once)
// are read as the last one.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ncclrr::nccl_log {

struct CollFields {
  std::string op;  // "AllReduce", "Send", …
  uint64_t op_count = 0;
  bool has_op_count = false;
  uint64_t sendbuff = 0, recvbuff = 0, comm = 0, stream = 0;
  uint64_t count = 0;
  int datatype = 0, redop = 0, root = 0;
  int nranks = -1;
  int global_rank = -1;  // RCCL's "globalrank": the rank in this communicator
};

struct InitFields {
  std::string function;  // "ncclCommInitRank", "ncclCommSplit", … ("" in NCCL ≤ 2.18)
  uint64_t comm = 0;
  int rank = -1, nranks = -1, cuda_dev = -1;
  std::optional<uint64_t> comm_id;
  std::optional<uint64_t> parent;
  int split_count = 0, color = 0, key = 0;
};

enum class LineKind { kNotNccl, kOther, kColl, kInit };

struct ParsedLine {
  LineKind kind = LineKind::kNotNccl;
  bool has_process = false;  // host, pid, tid and dev were read from NCCL's prefix
  std::string host;
  int64_t pid = 0;
  uint32_t tid = 0;
  int dev = -1;
  int launcher_rank = -1;     // "[rankN]:" put in front by torchrun
  bool out_of_range = false;  // a number did not fit: the line is skipped
  CollFields coll;
  InitFields init;
};

ParsedLine ParseLine(std::string_view line);

}  // namespace ncclrr::nccl_log
