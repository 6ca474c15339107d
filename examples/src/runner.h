// Runs a scenario: ranks as threads (default) or one thread driving every rank with group calls.
#pragma once
#include <string>

#include "backend.h"
#include "scenarios.h"

namespace ncclrr::example {

struct Options {
  const Scenario* scenario = nullptr;
  int ranks = 2;
  int steps = 4;
  bool group = false;
  // send-race: elements of the raced tensor (0: the scenario's 1024). On a GPU a larger tensor
  // keeps NCCL reading long enough for the racing write to land mid-call.
  size_t race_elems = 0;
  // --processes: this process runs only this rank (-1: every rank, a thread each).
  int only_rank = -1;
};

// Returns the exit code: 0 all right, 1 wrong results. A hang (NCCL error or the watchdog) ends
// the process with 3 from inside.
int Run(const Options& opt, Backend& be);

// Prints "#hang: ..." and exits with 3. Called by the watchdog and on NCCL errors.
[[noreturn]] void ExitHang(const std::string& why);
// Marks progress for the watchdog.
void Heartbeat();
void StartWatchdog(int seconds);

}  // namespace ncclrr::example
