#include "device_poller.h"

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace ncclrr::interpose {
namespace {

constexpr int kSources = static_cast<int>(DevicePollSource::kCount);

// Never destroyed: the detached thread may still wait on them while static destructors run at
// exit (destroying a condition variable a thread waits on blocks the exit).
std::mutex& g_mu = *new std::mutex();
std::condition_variable& g_cv = *new std::condition_variable();
std::atomic<DevicePollFn> g_sources[kSources];
bool g_started = false;  // under g_mu
uint64_t g_wakes = 0;    // under g_mu

void Loop() {
  uint64_t seen = 0;
  for (;;) {
    std::chrono::microseconds wait{0};
    for (auto& source : g_sources)
      if (DevicePollFn fn = source.load(std::memory_order_acquire)) {
        const std::chrono::microseconds w = fn();
        if (w.count() > 0 && (wait.count() == 0 || w < wait)) wait = w;
      }
    std::unique_lock<std::mutex> lock(g_mu);
    const auto woken = [&] { return g_wakes != seen; };
    if (wait.count() == 0)
      g_cv.wait(lock, woken);
    else
      g_cv.wait_for(lock, wait, woken);
    seen = g_wakes;
  }
}

// Around fork: the child's copy of the state is consistent, and it has no poller thread.
void ForkPrepare() { g_mu.lock(); }
void ForkParent() { g_mu.unlock(); }
void ForkChild() {
  g_mu.unlock();  // the forking thread, the child's only thread, holds it
  g_started = false;
}

}  // namespace

void SetDevicePollSource(DevicePollSource source, DevicePollFn fn) {
  g_sources[static_cast<int>(source)].store(fn, std::memory_order_release);
}

void WakeDevicePoller() {
  static std::once_flag fork_handlers;
  std::call_once(fork_handlers, [] { pthread_atfork(ForkPrepare, ForkParent, ForkChild); });
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_wakes;
  if (!g_started) {
    g_started = true;
    std::thread(Loop).detach();
  }
  g_cv.notify_one();
}

}  // namespace ncclrr::interpose
