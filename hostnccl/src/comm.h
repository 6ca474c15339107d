// One rank's view of a communicator. The shared part lives in a Segment; this holds what only the
// calling rank needs: call-time counters (which position the next call takes), PreMulSum handles,
// and the sticky async error.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api_visibility.h"
#include "segment.h"

namespace ncclrr::host {

struct PreMulOp {
  bool live = false;
  int dtype = 0;
  double value = 0;              // host-immediate scalar
  const void* device = nullptr;  // ncclScalarDevice: read when the collective starts
};

class CommRank {
 public:
  Segment seg;
  std::string seg_name;
  std::string name;   // ncclConfig_t::commName, for diagnostics
  uint64_t hash = 0;  // NCCL's getHash of the unique id (root comms), or of the lineage
  int rank = 0;
  int nranks = 0;
  int device = 0;
  bool blocking = true;

  // Call-time counters: NCCL pairs calls by the position they take when issued.
  uint64_t next_coll = 0;
  std::vector<uint64_t> next_send, next_recv;
  uint64_t boot_round = 0;
  uint64_t shrink_count = 0;
  std::vector<PreMulOp> premul;

  std::atomic<bool> aborted{false};
  std::atomic<bool> revoked{false};
  std::atomic<int> pending_ops{0};

  // Rendezvous still running (nonblocking init, or a split/shrink child): advanced by whoever
  // waits on it. Returns ncclInProgress until done.
  std::mutex init_mu;
  std::function<ncclResult_t()> init_step;
  int64_t init_started_ns = 0;

  ncclResult_t AsyncError() const { return ncclResult_t(async_error_.load()); }
  // Records the first error (sticky, like NCCL) and prints `message` once on stderr.
  void SetAsyncError(ncclResult_t r, const std::string& message);
  // ncclInProgress while the rendezvous runs; steps it once.
  ncclResult_t StepInit();
  std::string Label() const;  // "comm 0x... \"name\" rank r/n"

 private:
  std::atomic<int> async_error_{ncclSuccess};
};

int64_t NowNs();
uint64_t NcclHash(const char* bytes, int n);

// The unique id of a host communicator: a marker and a random nonce naming the shared segment.
ncclResult_t MakeUniqueId(ncclUniqueId* id);

// Starts joining the communicator: creates/opens its segment and registers `rank`. The returned
// rank is ready once StepInit() returns ncclSuccess.
ncclResult_t StartRootRank(const ncclUniqueId& id, int nranks, int rank, const ncclConfig_t* cfg,
                           std::shared_ptr<CommRank>* out);
// Same, for a communicator whose segment name is derived from a parent (split, shrink).
ncclResult_t StartChildRank(const std::string& seg_name, uint64_t hash, int nranks, int rank,
                            int device, const ncclConfig_t* cfg, std::shared_ptr<CommRank>* out);

// Split: a host-side allgather of (color, key) over the parent, then the child rendezvous. `done`
// receives the child (or null for NCCL_SPLIT_NOCOLOR) when the returned step finishes.
std::function<ncclResult_t()> MakeSplitStep(std::shared_ptr<CommRank> parent, int color, int key,
                                            const ncclConfig_t* cfg, ncclComm_t* newcomm);

// Thread-local device set by ncclrrHostSetDevice, or -1.
int& ThreadDevice();

}  // namespace ncclrr::host

// The handle an application holds. A queued operation keeps its CommRank alive after destroy or
// abort, so a handle can be freed while work referencing it is still being failed or drained.
struct ncclComm {
  uint64_t magic;
  std::shared_ptr<ncclrr::host::CommRank> impl;
};
constexpr uint64_t kCommMagic = 0x6e63636c636f6d6dull;
