#include "triggers.h"

#include <dlfcn.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>
#include <thread>

#include "call_clock.h"
#include "call_path.h"
#include "comm_lifecycle.h"
#include "cuda_graphs.h"
#include "dump_requests.h"
#include "env_config.h"
#include "gpu_timing_hooks.h"
#include "ncclrr/trace/fatal_signals.h"
#include "queries.h"
#include "runtime.h"
#include "symbols.h"

namespace ncclrr::interpose {

std::atomic<bool> g_restart_after_fork{false};
std::atomic<int> g_writer_pid{0};

namespace {

// --- the housekeeping thread -------------------------------------------------------------------

std::atomic<uint32_t> g_wake{0};
std::atomic<bool> g_usr1{false};  // set by the SIGUSR1 handler
std::atomic<bool> g_housekeeping{false};
std::atomic<bool> g_final{false};  // exit: write the last query counts, then stop
std::atomic<bool> g_final_done{false};
std::mutex g_dump_mu;
char g_dump_reason[256];           // under g_dump_mu; non-empty: a dump is wanted
int64_t g_last_error_dump_ns = 0;  // under g_dump_mu

void Wake() {
  g_wake.fetch_add(1, std::memory_order_release);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&g_wake), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr,
          0);
}

void Sleep(uint32_t seen, int ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1'000'000L};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&g_wake), FUTEX_WAIT_PRIVATE, seen, &ts, nullptr,
          0);
}

bool Ring() { return GetConfig().ring_calls > 0; }

// Where this process's trace file is: dump requests live beside it.
std::string TraceDir() {
  const std::string& p = g_runtime.writer->path();
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

// A signal handler's request that the housekeeping thread write every call in flight.
std::atomic<uint32_t> g_inflight_req{0};
std::atomic<uint32_t> g_inflight_done{0};
std::atomic<int> g_housekeeping_tid{0};

int64_t InFlightAgeNs() { return int64_t{std::max<uint32_t>(GetConfig().flush_ms, 1)} * 1'000'000; }

// Async-signal-safe: wakes the housekeeping thread to write the calls in flight and waits for it
// at most `timeout_ms` (not at all on the housekeeping thread itself).
void WriteInFlightFromSignal(int timeout_ms) {
  if (!g_housekeeping.load() || static_cast<int>(syscall(SYS_gettid)) == g_housekeeping_tid.load())
    return;
  const uint32_t want = g_inflight_req.fetch_add(1) + 1;
  Wake();
  for (int i = 0; i < timeout_ms * 4; ++i) {
    if (static_cast<int32_t>(g_inflight_done.load(std::memory_order_acquire) - want) >= 0) return;
    timespec ts{0, 250'000};
    nanosleep(&ts, nullptr);
  }
}

void Watchdog(int64_t now) {
  const uint32_t limit_ms = GetConfig().watchdog_ms;
  if (limit_ms == 0) return;
  ForEachInFlight([&](InFlightSlot& s) {
    const int64_t enter = s.enter_ns.load(std::memory_order_acquire);
    if (enter == 0 || now - enter < int64_t{limit_ms} * 1'000'000) return;
    if (s.reported_enter.exchange(static_cast<uint64_t>(enter)) == static_cast<uint64_t>(enter))
      return;  // this call was reported already
    char text[256];
    std::snprintf(text, sizeof text,
                  "watchdog: %s on thread %u has been in flight for %lld ms (limit %u ms)",
                  std::string(ApiName(static_cast<Api>(s.api.load()))).c_str(), s.tid.load(),
                  static_cast<long long>((now - enter) / 1'000'000), limit_ms);
    Note(NoteLevel::kWarning, text);
    if (Ring()) {
      g_runtime.writer->Dump(text);
      WriteDumpRequest(TraceDir(), text);  // every rank's ring, as of now (dump-on-timeout)
    } else {
      g_runtime.writer->Flush();
    }
  });
}

void Housekeeping() {
  g_housekeeping_tid.store(static_cast<int>(syscall(SYS_gettid)));
  // Started with the fatal signals blocked: a fatal signal sent to the process goes to another
  // thread, whose handler can have this one write the calls in flight (here it could not wait
  // for itself).
  const uint32_t wd = GetConfig().watchdog_ms;
  const int tick_ms = wd > 0 && wd / 2 < 100 ? static_cast<int>(wd / 2 + 1) : 100;
  int64_t last_queries = 0;
  while (g_housekeeping.load(std::memory_order_acquire)) {
    const uint32_t seen = g_wake.load(std::memory_order_acquire);
    if (g_final.load(std::memory_order_acquire)) {  // on this thread: its ring is still alive
      StopGpuTiming();  // bounded by OnExit's wait: a hung GPU cannot hold the exit
      WriteCallsInFlight(MonotonicNs(), 0);  // other threads still blocked in NCCL
      EmitQueryCounts();
      g_final_done.store(true, std::memory_order_release);
      return;
    }
    if (g_runtime.stage.load() != static_cast<int>(Stage::kRecording)) break;
    const int64_t now = MonotonicNs();
    if (g_usr1.exchange(false)) g_runtime.writer->Dump("SIGUSR1");
    if (std::string request; Ring() && NewDumpRequest(TraceDir(), &request))
      g_runtime.writer->Dump("requested: " + request);
    std::string reason;
    {
      std::lock_guard<std::mutex> lock(g_dump_mu);
      reason = g_dump_reason;
      g_dump_reason[0] = '\0';
    }
    if (!reason.empty()) g_runtime.writer->Dump(reason);
    // Calls in flight longer than a flush interval reach the file now: a job killed with
    // SIGKILL still leaves the calls it was blocked in. A signal asks for all of them at once.
    const uint32_t inflight_want = g_inflight_req.load(std::memory_order_acquire);
    WriteCallsInFlight(now, inflight_want != g_inflight_done.load() ? 0 : InFlightAgeNs());
    g_inflight_done.store(inflight_want, std::memory_order_release);
    Watchdog(now);
    UpdateTscAnchor();
    if (now - last_queries >= 1'000'000'000) {
      EmitQueryCounts();
      last_queries = now;
    }
    Sleep(seen, tick_ms);
  }
}

void StartHousekeeping() {
  if (g_housekeeping.exchange(true)) return;
  StartThreadBlockingFatalSignals(Housekeeping).detach();
}

// --- exit --------------------------------------------------------------------------------------

// Runs inside exit(), after the exiting thread's thread-local objects are gone: records are
// appended by the housekeeping thread, which is then stopped before static destructors run.
void OnExit() {
  if (g_runtime.stage.load() != static_cast<int>(Stage::kRecording)) return;
  if (g_housekeeping.load()) {
    g_final.store(true, std::memory_order_release);
    Wake();
    for (int i = 0; i < 2000 && !g_final_done.load(std::memory_order_acquire); ++i) usleep(500);
  } else {
    StopGpuTiming();  // its last records are dropped (this thread's ring is gone), notes kept
  }
  g_housekeeping.store(false);
  NoteGraphsAtExit();
  // Calls after this point (other atexit handlers, static destructors) are forwarded only.
  g_runtime.stage.store(static_cast<int>(Stage::kForwarding), std::memory_order_release);
  (void)g_runtime.writer->Close("exit");
}

// --- signals -----------------------------------------------------------------------------------

struct sigaction g_previous[65];
std::atomic<int> g_in_fatal{0};

void CallPrevious(int sig, siginfo_t* info, void* ctx) {
  const struct sigaction& old = g_previous[sig];
  if (old.sa_flags & SA_SIGINFO) {
    if (old.sa_sigaction != nullptr) old.sa_sigaction(sig, info, ctx);
    return;
  }
  if (old.sa_handler == SIG_IGN) return;
  if (old.sa_handler != SIG_DFL) {
    old.sa_handler(sig);
    return;
  }
  // The default action, as if ncclrr had never been here: restore it and let the signal act.
  sigaction(sig, &old, nullptr);
  const bool fault = (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE) &&
                     info != nullptr && info->si_code > 0;
  if (!fault) raise(sig);  // delivered when this handler returns (the signal is blocked now)
  // A hardware fault re-executes the faulting instruction on return and dies by default.
}

void OnFatalSignal(int sig, siginfo_t* info, void* ctx) {
  const int saved_errno = errno;
  if (g_in_fatal.fetch_add(1) == 0 &&
      g_runtime.stage.load() == static_cast<int>(Stage::kRecording)) {
    WaitForFinishingCalls(100);               // calls that returned: their records, then
    WriteInFlightFromSignal(300);             // the calls the job is blocked in
    g_runtime.writer->FlushFromSignal(1000);  // in ring mode this writes the ring
  }
  g_in_fatal.fetch_sub(1);
  CallPrevious(sig, info, ctx);
  errno = saved_errno;
}

void OnUsr1(int sig, siginfo_t* info, void* ctx) {
  const int saved_errno = errno;
  g_usr1.store(true);
  Wake();
  const struct sigaction& old = g_previous[sig];
  // SIGUSR1 is ring mode's documented trigger: its default (terminate) is not taken.
  if ((old.sa_flags & SA_SIGINFO) || (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN))
    CallPrevious(sig, info, ctx);
  errno = saved_errno;
}

void Install(int sig, void (*handler)(int, siginfo_t*, void*)) {
  struct sigaction sa {};
  sa.sa_sigaction = handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, &g_previous[sig]);
}

// --- fork --------------------------------------------------------------------------------------

// Every mutex a thread may hold in the middle of ncclrr's bookkeeping is taken before fork()
// and released after it on both sides, so the child never inherits one locked by a thread that
// does not exist there (lock order: lifecycle and queries before the registry).
std::mutex* ForkMutexes(int i) {
  switch (i) {
    case 0:
      return &LifecycleMutex();
    case 1:
      return &QueryMutex();
    case 2:
      return &GraphMutex();
    case 3:
      return &g_dump_mu;
    case 4:
      return &Comms().WriteMutex();
    default:
      return nullptr;
  }
}
constexpr int kForkMutexes = 5;
void ForkPrepare() {
  for (int i = 0; i < kForkMutexes; ++i) ForkMutexes(i)->lock();
}
void ForkParent() {
  for (int i = kForkMutexes - 1; i >= 0; --i) ForkMutexes(i)->unlock();
}

void ForkChild() {
  ForkParent();  // the forking thread holds them all: release them in the child too
  ResetInFlightAfterFork();
  g_housekeeping.store(false);
  g_restart_after_fork.store(true);
}

}  // namespace

void RestartAfterFork() {
  if (!g_restart_after_fork.exchange(false)) return;
  g_writer_pid.store(getpid());  // the writer restarts into the child's own file
  StartHousekeeping();
}

void InstallTriggers() {
  g_writer_pid.store(getpid());
  std::atexit(OnExit);
  pthread_atfork(ForkPrepare, ForkParent, ForkChild);
  if (GetConfig().signals) {
    for (int sig : kFatalSignals) Install(sig, OnFatalSignal);
    if (Ring()) Install(SIGUSR1, OnUsr1);
  }
  StartHousekeeping();
}

void RequestDump(const char* reason) {
  {
    std::lock_guard<std::mutex> lock(g_dump_mu);
    std::snprintf(g_dump_reason, sizeof g_dump_reason, "%s", reason);
  }
  Wake();
}

void OnCallError(const CallRecord& rec) {
  if (!Ring()) return;  // full mode: the record itself is on its way to the disk
  const int64_t now = MonotonicNs();
  {
    std::lock_guard<std::mutex> lock(g_dump_mu);
    if (now - g_last_error_dump_ns < 1'000'000'000) return;  // a failing poll loop: once a second
    g_last_error_dump_ns = now;
  }
  char text[160];
  std::snprintf(text, sizeof text, "NCCL error: %s returned %d on comm 0x%016llx",
                std::string(ApiName(static_cast<Api>(rec.api))).c_str(), rec.result,
                static_cast<unsigned long long>(rec.comm_id));
  RequestDump(text);
}

}  // namespace ncclrr::interpose

// _exit/_Exit skip atexit handlers (os._exit in Python, multiprocessing workers, programs that
// leave detached threads behind): what is buffered is flushed first (async-signal-safe, as _exit
// itself), so a short process does not lose its last NCCLRR_FLUSH_MS of calls. The file then
// has no footer, as for any process that did not exit normally. Only the process that owns the
// trace flushes: a vfork child shares its memory but must not touch it.
namespace {
void FlushBeforeExit() {
  using namespace ncclrr::interpose;
  if (g_runtime.stage.load() == static_cast<int>(Stage::kRecording) &&
      static_cast<int>(syscall(SYS_getpid)) == g_writer_pid.load())
    g_runtime.writer->FlushFromSignal(1000);
}
[[noreturn]] void RealExit(const char* name, int status) {
  using ExitFn = void (*)(int);
  if (auto fn = reinterpret_cast<ExitFn>(ncclrr::interpose::RealDlsym(RTLD_NEXT, name))) fn(status);
  for (;;) syscall(SYS_exit_group, status);
}
}  // namespace

extern "C" __attribute__((visibility("default"), noreturn)) void _exit(int status) {
  FlushBeforeExit();
  RealExit("_exit", status);
}

extern "C" __attribute__((visibility("default"), noreturn)) void _Exit(int status) {
  FlushBeforeExit();
  RealExit("_Exit", status);
}
