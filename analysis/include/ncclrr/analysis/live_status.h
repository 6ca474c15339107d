#pragma once
// `ncclrr status DIR`: which rank is stuck where, while the job still runs. The trace files of a
// running job grow (records are flushed every few tens of milliseconds; calls blocked in NCCL are
// written as in-flight records); LiveStatus follows every file, reading only what was appended
// since the last refresh, and keeps per communicator rank the last collectives it issued and the
// call it is blocked in. From those it tells, per communicator:
//   running    every rank keeps up;
//   straggler  some ranks have not yet issued a collective the others issued a while ago
//              (shorter than hang_after_s): who, and how far behind;
//   hung       a collective issued by some ranks has waited hang_after_s or more for ranks that
//              never issued it (named, with their last NCCL call on any communicator and how long
//              ago), or every rank issued it and some are blocked inside it that long, or (with
//              GPU progress) it has not started on some ranks' GPUs, or run on every rank's GPU,
//              that long; or, with no collective waited in, ranks have been blocked in a Send
//              or Recv that long (a pipeline or ring exchange that NCCL cannot pair).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ncclrr/base/status.h"

namespace ncclrr::analysis {

struct LiveStatusOptions {
  double hang_after_s = 10;        // waiting at least this long: hung
  double straggler_after_s = 0.2;  // waiting at least this long (less than hang_after_s): straggler
  // A rank that issues the recent collectives (median of up to 64) at least this long after
  // the first rank to issue them is a straggler, whatever the moment shows.
  double straggler_lag_s = 0.05;
};

// What the GPU did with a call, known when the job is recorded with `--gpu-timing`.
enum class LiveGpu : uint8_t {
  kUnknown,     // no GPU progress in this process, a call too recent to tell, or one not timed
  kNotStarted,  // issued, but its stream has not reached it: earlier work on the stream runs
  kRunning,     // its kernels started and have not ended
  kDone,        // its kernels ended
};
const char* LiveGpuName(LiveGpu g);  // "unknown", "not started", "running", "done"

// One NCCL call as status shows it.
struct LiveCall {
  uint64_t comm_id = 0;
  std::string comm_name;
  uint64_t seq = 0;
  std::string call;        // "AllReduce(1024 float32, sum)"
  double ago_s = 0;        // since it was issued
  bool in_flight = false;  // the host call has not returned
  LiveGpu gpu = LiveGpu::kUnknown;
  double gpu_s = 0;  // kRunning: since its kernels started
};

struct LiveRank {
  int rank = 0;
  std::string process;  // "host pid 1234"
  std::string file;     // its trace file
  bool has_call = false;
  LiveCall last;  // last collective issued on this communicator
  bool blocked = false;
  LiveCall blocked_in;     // the oldest call of this rank on the communicator still in flight
  uint64_t p2p_calls = 0;  // Sends and Recvs seen on the communicator
  bool p2p_blocked = false;
  LiveCall p2p_blocked_in;  // the oldest Send or Recv of this rank still in flight; or
  // p2p_unmatched: its last Send or Recv, which the peer has not matched, and after which the
  // process made no NCCL call (a grouped Send returns at once; the wait is in the group's end)
  bool p2p_unmatched = false;
  bool behind = false;  // has not issued the collective the others wait in
  // With GPU progress: the oldest collective issued on this communicator that the GPU has not
  // finished (gpu_front.gpu says whether it runs or has not started); none when all are done.
  bool gpu_progress = false;
  bool has_gpu_front = false;
  LiveCall gpu_front;
};

// A rank the others wait for.
struct LiveMissing {
  int rank = 0;
  std::string process;  // "" when no trace file of this rank was seen
  std::string file;
  uint64_t calls_behind = 0;  // collectives on this communicator it has not issued
  bool has_elsewhere = false;
  LiveCall last_anywhere;  // its last NCCL call on any communicator
  double lag_s = 0;        // straggler: median delay behind the first rank to issue
  // Hung: the rank waits itself in another communicator for a rank that waits here (a
  // deadlock of communicators used in opposite orders).
  bool deadlock = false;
  uint64_t deadlock_comm = 0;
  uint64_t deadlock_seq = 0;
  // Hung with GPU progress: it issued the collective, but its GPU has not started it.
  bool gpu_not_started = false;
};

enum class LiveState : uint8_t { kRunning, kStraggler, kHung, kFinished };
const char* LiveStateName(LiveState s);  // "running", "straggler", "hung", "finished"

struct LiveComm {
  uint64_t id = 0;
  std::string name;
  int nranks = 0;
  LiveState state = LiveState::kRunning;
  std::vector<LiveRank> ranks;  // the ranks seen, by rank
  int unseen_ranks = 0;         // ranks with no trace file here
  // straggler / hung: the collective waited in, since when, by whom, for whom.
  uint64_t wait_seq = 0;
  std::string wait_call;
  double wait_s = 0;
  std::vector<int> waiting;
  std::vector<LiveMissing> missing;
  std::string why;  // one line: the verdict's reason
};

enum class LiveVerdict : uint8_t { kNoData, kRunning, kStraggler, kHung, kFinished };
const char* LiveVerdictName(LiveVerdict v);  // "no data", "running", "straggler", "hung", ...

struct LiveReport {
  std::string dir;
  LiveVerdict verdict = LiveVerdict::kNoData;
  int files = 0;
  int open_files = 0;  // not closed yet: their processes run, or were killed
  int ring_files = 0;  // flight-recorder mode: visible only after a dump
  uint64_t calls = 0;
  std::vector<LiveComm> comms;
  std::vector<std::string> notes;  // unreadable files, stale processes, ring mode
  // 0 running, straggler or finished; 1 hung; 2 no data.
  int ExitCode() const;
};

class LiveStatus {
 public:
  explicit LiveStatus(std::string dir, LiveStatusOptions options = {});
  ~LiveStatus();
  LiveStatus(const LiveStatus&) = delete;
  LiveStatus& operator=(const LiveStatus&) = delete;

  // Reads what the files gained since the last refresh (and files that appeared) and tells
  // where every communicator stands at `now_real_ns` (CLOCK_REALTIME). Errors: `dir` is not a
  // directory or trace file.
  StatusOr<LiveReport> Refresh(int64_t now_real_ns);

  struct State;

 private:
  std::string dir_;
  LiveStatusOptions options_;
  std::unique_ptr<State> state_;
};

std::string FormatLiveText(const LiveReport& report);
std::string FormatLiveJson(const LiveReport& report);

// The request file in a trace directory that asks every recording process (ring mode) to write
// its ring now (docs/recording.md "Dump on demand").
inline constexpr const char* kDumpRequestFile = "ncclrr-dump-request";
// Writes a new request into `dir`, naming `who`. Returns the request's id.
StatusOr<std::string> RequestDump(const std::string& dir, const std::string& who);

}  // namespace ncclrr::analysis
