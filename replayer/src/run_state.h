#pragma once
// What the actor threads of one execution share with the watchdog: flags, counters for progress
// and hang detection, the first error, and per-call outcomes (each written by its actor only).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "executor.h"
#include "verify.h"

namespace ncclrr::replay {

inline int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct RunState {
  RunState(const ReplayPlan& p, Backend& b, const DataSource& d, const IssueOrder& o,
           const ExecOptions& opt)
      : plan(p), backend(b), data(d), order(o), options(opt) {}

  const ReplayPlan& plan;
  Backend& backend;
  const DataSource& data;
  const IssueOrder& order;
  const ExecOptions& options;

  std::vector<uint64_t> positions;  // per plan call
  std::vector<ncclUniqueId> ids;    // per communicator

  std::atomic<bool> abort{false};
  std::atomic<bool> hang{false};
  std::atomic<bool> go{false};
  std::atomic<uint64_t> progress{0};
  std::atomic<uint64_t> issued_calls{0}, done_calls{0};
  std::atomic<int> ready{0}, finished{0}, exited{0}, snapshots{0};
  int running = 0;  // actors that run in this process
  // Allreduce references shared by this process's ranks: only when it replays every rank.
  std::unique_ptr<SharedReferences> references;
  std::atomic<int64_t> last_done_ns{0};

  std::vector<CallOutcome> outcomes;
  std::vector<ActorReport> actors;

  void Fail(const std::string& error) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (first_error_.empty()) first_error_ = error;
    }
    abort.store(true);
  }
  std::string first_error() {
    std::lock_guard<std::mutex> lock(mu_);
    return first_error_;
  }
  void Progressed() {
    progress.fetch_add(1, std::memory_order_relaxed);
    const int64_t now = SteadyNs();
    int64_t prev = last_done_ns.load(std::memory_order_relaxed);
    while (prev < now && !last_done_ns.compare_exchange_weak(prev, now)) {
    }
  }

 private:
  std::mutex mu_;
  std::string first_error_;
};

// Runs one actor's thread body.
void RunActor(RunState& state, uint32_t actor);

}  // namespace ncclrr::replay
