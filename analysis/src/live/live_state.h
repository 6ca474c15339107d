#pragma once
// What LiveStatus keeps of each growing trace file: not the whole trace, only what the status
// needs (per communicator rank the last collectives issued and the calls in flight; per process
// its last NCCL call and its clock), so a refresh costs what was appended, not the file.
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "ncclrr/analysis/live_status.h"
#include "ncclrr/trace/records.h"
#include "ncclrr/trace/trace_follower.h"

namespace ncclrr::analysis {

struct LiveCommRank {
  uint64_t comm_id = 0;
  int rank = 0;
  int nranks = 0;
  std::deque<CallRecord> recent;                 // last collectives issued, by seq (bounded)
  std::map<uint64_t, CallRecord> in_flight;      // uid -> collective still in flight
  uint64_t p2p_calls = 0;                        // Sends and Recvs seen returned
  std::map<uint64_t, CallRecord> p2p_in_flight;  // uid -> Send or Recv still in flight
  // (peer, send) -> returned calls, for up to kP2pPeersCounted peers: an all-to-all over
  // thousands of ranks is not counted (p2p_uncounted), so status holds O(ranks) per process.
  static constexpr size_t kP2pPeersCounted = 64;
  std::map<std::pair<int, bool>, uint64_t> p2p_returned;
  bool p2p_uncounted = false;
  bool has_last_p2p = false;
  CallRecord last_p2p{};  // the latest Send or Recv issued
};

struct LiveFile {
  explicit LiveFile(std::string path) : follower(std::move(path)) {}
  TraceFollower follower;
  std::string error;  // unreadable: why
  bool closed = false;
  int64_t real_minus_mono = 0;
  std::unordered_map<uint32_t, std::string> strings;
  std::unordered_map<uint64_t, uint32_t> comm_name_ids;
  std::map<std::pair<uint64_t, int>, LiveCommRank> comm_ranks;  // (comm, rank)
  bool has_last = false;
  CallRecord last{};  // the last NCCL call of the process (latest issue), any communicator
  std::unordered_map<uint64_t, CallRecord> open_calls;  // uid -> any call still in flight
  std::unordered_set<uint64_t> returned;                // uids seen returned (bounded)
  std::deque<uint64_t> returned_order;
  uint64_t calls = 0;
  // GPU progress (`record --gpu-timing`): what the GPU did with the recent calls.
  bool gpu_progress = false;  // the process marks calls running on the GPU (kGpuProgressNote)
  struct GpuSeen {
    int64_t start_ns = 0;  // mono
    bool ended = false;
  };
  std::unordered_map<uint64_t, GpuSeen> gpu;  // uid -> seen on the GPU (bounded)
  std::deque<uint64_t> gpu_order;
  struct StreamCall {
    uint64_t uid;
    int64_t enter_ns;
  };
  std::unordered_map<uint64_t, std::deque<StreamCall>>
      stream_calls;  // per stream, by uid (bounded)

  std::string Process() const;  // "host pid 1234"
  std::string CommName(uint64_t comm_id) const;
  double Ago(int64_t mono_ns, int64_t now_real_ns) const {
    return static_cast<double>(now_real_ns - (mono_ns + real_minus_mono)) * 1e-9;
  }
};

struct LiveStatus::State {
  std::map<std::string, LiveFile> files;  // by path
};

// What the GPU did with call `c` of `f` by `now_real_ns` (live_status.cc). `gpu_s`: how long it
// has run (kRunning).
LiveGpu GpuStateOf(const LiveFile& f, const CallRecord& c, int64_t now_real_ns, double* gpu_s);

// The verdict for every communicator seen in `files` (live_verdict.cc).
void JudgeComms(const std::map<std::string, LiveFile>& files, const LiveStatusOptions& options,
                int64_t now_real_ns, LiveReport* report);

}  // namespace ncclrr::analysis
