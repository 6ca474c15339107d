#pragma once
// The signals the interposer handles as fatal: it writes the trace (calls in flight, then a
// flush) before the signal acts. Those handlers wait for ncclrr's own threads (the writer, the
// housekeeping thread), which therefore block these signals: a signal sent to the process is
// delivered to a thread that can wait for them. A fault of such a thread still kills the
// process (the kernel does not hold back a synchronous fault).
#include <signal.h>

namespace ncclrr {

inline constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTERM, SIGINT};

// Blocks kFatalSignals on the calling thread.
inline void BlockFatalSignalsOnThisThread() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kFatalSignals) sigaddset(&set, sig);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

}  // namespace ncclrr
