#pragma once
// What `ncclrr replay` is asked to do (docs/design.md "Replay"): which backend re-executes the
// calls, in which orders, with which data, and how long a replay may stand still before it counts
// as a hang. Parsing lives here so the CLI and tests share one definition of the order syntax.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ncclrr/base/status.h"

namespace ncclrr::replay {

enum class BackendKind : uint8_t {
  kHost,  // the host NCCL (libncclrr-hostnccl.so, dlopen'd): offline, any number of ranks
  kNccl,  // the real libnccl.so.2 and the CUDA runtime (dlopen'd): one thread per GPU
};

enum class DataMode : uint8_t {
  kSynthetic,  // deterministic per (seed, logical tensor, rank, element), like nccl-tests
  kCaptured,   // the buffers the recording captured (CaptureRef side files)
};

// One ordering of the calls (docs/design.md "Replay").
struct OrderSpec {
  enum class Kind : uint8_t {
    kRecorded,   // every rank issues its calls as it did when recorded: reproduce
    kCanonical,  // every rank follows the logical order: force the fix
    kPermute,    // `trials` seeded reorderings of calls the trace shows to be unordered
    kFile,       // an explicit order from a JSON file (docs/replay.md)
  };
  Kind kind = Kind::kRecorded;
  int trials = 8;    // kPermute
  std::string file;  // kFile

  std::string Label() const;  // "recorded", "canonical", "permute:8", "file:PATH"
};

// "recorded", "canonical", "permute", "permute:N", "file:PATH", or a comma-separated list of
// those (each ordering is replayed in turn). Errors name the bad element and the accepted forms.
StatusOr<std::vector<OrderSpec>> ParseOrderSpecs(std::string_view text);

inline constexpr int kDefaultPermuteTrials = 8;
inline constexpr int kMaxPermuteTrials = 100000;

struct ReplayOptions {
  BackendKind backend = BackendKind::kHost;
  std::vector<OrderSpec> orders = {OrderSpec{}};
  DataMode data = DataMode::kSynthetic;
  uint64_t seed = 1;
  double timeout_s = 30;  // no progress for this long: abort the communicators, report a hang
  bool verify = true;     // false: pure speed run (no data generation or checking per call)
  bool mpi = false;       // one process per rank under Open MPI (nccl backend only)
  // One child process per rank, started by the replay itself (always on the nccl backend when
  // the trace has more ranks than there are GPUs). The children run `command_line` (the replay's
  // arguments after the executable: "replay", DIR, ...) of this same executable.
  bool processes = false;
  std::vector<std::string> command_line;

  // Where the backends' libraries are. Empty: the host NCCL is found relative to the running
  // executable (../lib/libncclrr-hostnccl.so) or through $NCCLRR_HOSTNCCL_LIBRARY; the real NCCL
  // through $NCCLRR_NCCL_LIBRARY, the loader's search path, then known install locations.
  std::string host_library;
  std::string nccl_library;

  // Device memory a rank may hold in buffers of calls in flight; 0: the default (1 GiB per rank on
  // the host backend, 8 GiB per GPU), or $NCCLRR_REPLAY_MEMORY_MB.
  uint64_t memory_budget_bytes = 0;

  // Progress lines ("recorded order: 120 of 400 calls done"); called from the replaying thread.
  std::function<void(std::string_view)> progress;
};

}  // namespace ncclrr::replay
