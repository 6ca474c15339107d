#pragma once
// What a replay found, per ordering: which calls got wrong results (against the fp64 reference of
// what the logical order should combine), which positions were stuck when the replay timed out,
// and a one-line explanation ("seq 41-42 swapped on rank 1"). Text and JSON forms hold no times,
// addresses or pids, so two replays of one trace give identical bytes.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ncclrr/replay/options.h"

namespace ncclrr::replay {

// A replayed call whose output differs from the reference.
struct WrongCall {
  uint64_t comm_id = 0;
  std::string comm_name;
  uint64_t seq = 0;     // replay position on the communicator (p2p: per-peer index)
  int rank = 0;         // communicator rank
  std::string call;     // "AllReduce(1024 float32, sum)"
  std::string logical;  // which logical call the rank meant: "tensor 1, step 3"
  uint64_t wrong_elements = 0;
  uint64_t checked_elements = 0;
  uint64_t first_wrong = 0;  // element index
  double got = 0, expected = 0;
  bool args_differ = false;  // the ranks' calls for this logical call disagree on their arguments
};

// A call that was issued but had not completed when the replay timed out.
struct StuckCall {
  uint64_t comm_id = 0;
  std::string comm_name;
  uint64_t seq = 0;
  int rank = 0;
  std::string call;
  std::string why;  // "ranks [1] have not issued seq 5: rank 1 is blocked at comm 0x.. seq 5"
};

enum class Outcome : uint8_t { kRight, kWrong, kHang, kError };
const char* OutcomeName(Outcome o);  // "right", "wrong", "hang", "error"

struct OrderResult {
  std::string order;  // "recorded", "canonical", "permute", "file:PATH"
  int trial = -1;     // permute: 0-based trial number
  uint64_t trial_seed = 0;
  Outcome outcome = Outcome::kRight;
  std::string error;  // kError: what failed

  uint64_t calls = 0;          // calls replayed (issued)
  uint64_t checked_calls = 0;  // calls whose output was verified
  uint64_t wrong_calls = 0;
  uint64_t wrong_elements = 0;
  // Steps of the job's loop, where one was found (the calls repeat with a period); 0: none, and
  // the verdict counts calls.
  uint64_t steps = 0;
  uint64_t wrong_steps = 0;               // steps with at least one wrong or stuck call
  std::vector<uint64_t> wrong_step_list;  // those steps, ascending
  std::vector<std::string> explanation;   // how the ranks' orders disagree, if they do
  std::vector<WrongCall> wrong;           // the first kMaxListedCalls wrong calls
  std::vector<StuckCall> stuck;           // every stuck call (first incomplete one per stream)
  uint64_t moved_calls = 0;               // permute/file: calls not at their recorded place
  std::string order_json;                 // permute trials that failed: the order as a file:F

  // Captured data only: whether each replayed output matched the recorded one.
  std::optional<bool> reproduced;
  uint64_t reproduced_calls = 0, unreproduced_calls = 0;

  // Wall-clock measurements: not part of the text or JSON unless asked for
  // (NCCLRR_REPLAY_TIMING=1), since they differ between two replays.
  double seconds = 0;        // first issue to last completion
  double setup_seconds = 0;  // communicators, streams, buffers
  double bus_bytes = 0;      // nccl-tests bus bytes of the calls of each communicator's rank 0
};

inline constexpr size_t kMaxListedCalls = 20;

struct ReplayReport {
  std::string trace;
  ReplayOptions options;
  int32_t recorded_nccl_version = 0;
  int32_t replay_nccl_version = 0;
  uint64_t ranks = 0, comms = 0, calls = 0;  // of the trace
  // An incomplete trace (flight-recorder windows, torn or unclosed files, dropped records):
  // calls left out because some rank's file may lack their counterparts; the notes say which.
  uint64_t left_out_calls = 0;
  std::vector<std::string> warnings;  // version differences, unsupported features, data notes
  std::vector<OrderResult> results;
  bool include_timing = false;  // add "timing" to each JSON result and text line
  // How the replay ran: "one process, a thread per rank", "one process per rank: 4 process(es)
  // on 1 GPU(s) (up to 4 per GPU; ...)" and the replay memory per rank.
  std::string mode;
  // One process per rank (--mpi, --processes): processes other than the root hold only their
  // own part and print nothing; under --mpi every process exits with rank 0's code.
  bool secondary = false;
  int secondary_exit_code = 0;

  // 0: every replayed call matched its reference; 1: any wrong result or hang; 2: any error.
  int ExitCode() const;
};

std::string FormatText(const ReplayReport& report);
std::string FormatJson(const ReplayReport& report);
// `{"error": MESSAGE, "exit_code": 2}`: what `replay --json` prints when it cannot replay.
std::string ErrorJson(const std::string& message);
// "recorded order: 2 of 4 steps wrong (seq 4-5 swapped on rank 1); canonical order: 0 wrong"
std::string SummaryLine(const ReplayReport& report);

}  // namespace ncclrr::replay
