#pragma once
// The signals the interposer handles as fatal: it writes the trace (calls in flight, then a
// flush) before the signal acts. Those handlers wait for ncclrr's own threads (the writer, the
// housekeeping thread), which therefore block these signals: a signal sent to the process is
// delivered to a thread that can wait for them. A fault of such a thread still kills the
// process (the kernel does not hold back a synchronous fault).
#include <pthread.h>
#include <signal.h>

#include <thread>
#include <utility>

namespace ncclrr {

inline constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTERM, SIGINT};

// Starts fn on a thread that blocks kFatalSignals from its first instruction. Blocking them in
// fn is too late: a new thread starts with its creator's mask, and a signal pending for the
// process (sent while the creator blocked it, or before a slow machine ran the thread at all)
// is delivered to it before fn runs; a handler there would wait for the very thread it runs on.
template <class Fn>
std::thread StartThreadBlockingFatalSignals(Fn&& fn) {
  sigset_t set, old;
  sigemptyset(&set);
  for (int sig : kFatalSignals) sigaddset(&set, sig);
  pthread_sigmask(SIG_BLOCK, &set, &old);
  struct RestoreMask {
    sigset_t mask;
    ~RestoreMask() { pthread_sigmask(SIG_SETMASK, &mask, nullptr); }
  } restore{old};
  return std::thread(std::forward<Fn>(fn));
}

}  // namespace ncclrr
