// When the trace reaches the disk, beyond the writer's periodic flush (NCCLRR_FLUSH_MS, so a
// SIGKILL loses at most that much):
//  * exit: the trace is closed (footer) by an atexit handler;
//  * SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTERM, SIGINT: flushed from the signal handler
//    (async-signal-safe), then the handler the application had is called (or the default action
//    taken), so the job dies or carries on exactly as it would have;
//  * flight-recorder mode (NCCLRR_RING): the calls held in memory are written on each of the
//    above, on SIGUSR1 (the process carries on), when a call returns an NCCL error or the async
//    error turns into one, and when the watchdog sees a call in flight longer than
//    NCCLRR_WATCHDOG_MS (in full mode the watchdog writes a note);
//  * fork: the child records into its own file from its first call (the writer restarts) and
//    restarts the housekeeping thread lazily.
// A housekeeping thread (started with the trace) runs the watchdog, the dumps requested from
// NCCL calls and signal handlers, and writes query counts.
#pragma once
#include <atomic>

#include "ncclrr/trace/records.h"

namespace ncclrr::interpose {

// At recording start: atexit, signal handlers (NCCLRR_SIGNALS), fork handlers, housekeeping.
void InstallTriggers();
// Ring mode: ask the housekeeping thread to write the calls in memory. Never blocks.
void RequestDump(const char* reason);
// In a forked child: the housekeeping thread must be restarted before it is needed.
extern std::atomic<bool> g_restart_after_fork;
void RestartAfterFork();

}  // namespace ncclrr::interpose
