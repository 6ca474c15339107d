#pragma once
// Executes one ordering on a backend: one thread per actor (recorded process and device). Each
// actor creates its communicators (nonblocking, so a stuck replay can be aborted; blocking with
// --no-verify, which times the replay; pairing is the same), issues its units in the order's
// sequence onto streams that mirror the recorded ones, and retires units in issue order once
// their completion markers are reached: outputs are copied back and verified, buffers go back to
// the actor's ring arena.
//
// Hangs: a watchdog on the calling thread counts issued and retired units; when nothing moves for
// `timeout_s`, every actor records which units were still in flight (the head of each stream is
// the stuck call), aborts its communicators and drains. The replay never waits on NCCL without a
// deadline.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "actor_report.h"
#include "backend.h"
#include "data.h"
#include "ncclrr/replay/report.h"
#include "order.h"
#include "verify.h"

namespace ncclrr::replay {

struct ExecOptions {
  bool verify = true;
  double timeout_s = 30;
  uint64_t memory_budget = 0;  // bytes per actor for buffers of calls in flight
  bool warmup = false;         // one small allreduce per communicator before the timed replay
  std::string label;           // "recorded order", for progress lines
  std::function<void(std::string_view)> progress;
  // Under --mpi each process runs one actor: which ones run here (empty: all), on which device
  // slot (-1: the actor's index), with communicator ids made by MPI rank 0 (empty: made here).
  std::vector<uint32_t> run_actors;
  int device_slot = -1;
  std::vector<ncclUniqueId> ids;
  // Under --mpi the other processes' watchdogs fire a moment later: waiting this long after the
  // snapshot before aborting lets them record their heads before the abort moves them.
  double abort_grace_s = 0;
};

struct CallOutcome {
  uint64_t position = 0;  // replay position (collectives) or per-peer index (send/recv)
  bool issued = false, completed = false, failed = false;
  CallCheck check;
};

struct ExecResult {
  bool hang = false;
  std::string error;               // the first error that stopped the replay
  std::vector<CallOutcome> calls;  // per plan call
  std::vector<StuckCall> stuck;
  double seconds = 0;               // from the start barrier to the last retired unit
  double setup_seconds = 0;         // communicator creation and buffer allocation
  std::vector<ActorReport> actors;  // where each actor stood (only those that ran are filled)
};

ExecResult Execute(const ReplayPlan& plan, Backend& backend, const DataSource& data,
                   const IssueOrder& order, const ExecOptions& options);

// Replay positions of every call under `order` (what NCCL will pair).
std::vector<uint64_t> ReplayPositions(const ReplayPlan& plan, const IssueOrder& order);

}  // namespace ncclrr::replay
