#include "stream.h"

#include <sched.h>
#include <unistd.h>

#include <shared_mutex>
#include <unordered_map>

namespace ncclrr::host {
namespace {

struct Registry {
  std::shared_mutex mu;
  std::unordered_map<cudaStream_t, HostStream*> by_handle;
  std::unordered_map<int, HostStream*> defaults;
  std::vector<HostStream*> all;
};

Registry& Reg() {
  static Registry* r = new Registry;  // never destroyed: streams may be used from atexit handlers
  return *r;
}

// Runs the head task of `s` as far as it goes, then the next, and so on.
bool DriveStream(HostStream& s, WaitHint* hint) {
  bool moved = false;
  for (;;) {
    Task* t;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      if (s.queue.empty()) break;
      t = s.queue.front().get();
    }
    if (t->host_fn) {
      t->host_fn(t->host_arg);  // the head of its stream: everything before it has finished
      t->host_fn = nullptr;
    }
    bool all_done = true;
    ncclResult_t first_error = ncclSuccess;
    for (Op& op : t->ops) {
      if (!op.done) moved |= AdvanceOp(op, hint);
      if (!op.done)
        all_done = false;
      else if (op.result != ncclSuccess && first_error == ncclSuccess)
        first_error = op.result;
    }
    if (!all_done) break;
    std::unique_ptr<Task> finished;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      if (s.error == ncclSuccess) s.error = first_error;
      finished = std::move(s.queue.front());
      s.queue.pop_front();
    }
    s.pending.fetch_sub(1, std::memory_order_acq_rel);
    moved = true;
  }
  return moved;
}

}  // namespace

HostStream* StreamFor(cudaStream_t handle, int device) {
  Registry& r = Reg();
  {
    std::shared_lock<std::shared_mutex> lock(r.mu);
    if (handle == nullptr) {
      auto it = r.defaults.find(device);
      if (it != r.defaults.end()) return it->second;
    } else {
      auto it = r.by_handle.find(handle);
      if (it != r.by_handle.end()) return it->second;
    }
  }
  std::unique_lock<std::shared_mutex> lock(r.mu);
  HostStream*& slot = handle == nullptr ? r.defaults[device] : r.by_handle[handle];
  if (slot == nullptr) {
    slot = new HostStream;
    r.all.push_back(slot);
  }
  return slot;
}

cudaStream_t NewStream() {
  auto* s = new HostStream;
  Registry& r = Reg();
  std::unique_lock<std::shared_mutex> lock(r.mu);
  r.by_handle[reinterpret_cast<cudaStream_t>(s)] = s;
  r.all.push_back(s);
  return reinterpret_cast<cudaStream_t>(s);
}

bool IsKnownStream(cudaStream_t handle) {
  Registry& r = Reg();
  std::shared_lock<std::shared_mutex> lock(r.mu);
  return r.by_handle.count(handle) != 0;
}

void ForgetStream(cudaStream_t handle) {
  if (handle == nullptr) return;
  Registry& r = Reg();
  HostStream* s;
  {
    std::shared_lock<std::shared_mutex> lock(r.mu);
    auto it = r.by_handle.find(handle);
    if (it == r.by_handle.end()) return;
    s = it->second;
  }
  Synchronize(s);
  std::unique_lock<std::shared_mutex> lock(r.mu);
  r.by_handle.erase(handle);
  std::erase(r.all, s);
  delete s;
}

void Enqueue(HostStream* s, std::unique_ptr<Task> task, bool drive) {
  {
    std::lock_guard<std::mutex> lock(s->mu);
    s->queue.push_back(std::move(task));
  }
  s->pending.fetch_add(1, std::memory_order_acq_rel);
  if (drive) ProgressAll(nullptr);
}

bool ProgressAll(WaitHint* hint) {
  Registry& r = Reg();
  bool any = false;
  for (;;) {
    bool moved = false;
    {
      std::shared_lock<std::shared_mutex> lock(r.mu);
      for (HostStream* s : r.all) {
        if (s->pending.load(std::memory_order_acquire) == 0) continue;
        if (s->driving.test_and_set(std::memory_order_acquire)) continue;
        moved |= DriveStream(*s, hint);
        s->driving.clear(std::memory_order_release);
      }
    }
    if (!moved) return any;
    any = true;
  }
}

void IdleWait(const WaitHint& hint, int* spins) {
  // Spin briefly (a peer thread is often about to arrive), then sleep on the communicator's
  // futex; the 1 ms cap covers wake-ups from places that do not bump that futex.
  if (++*spins < 64) {
    sched_yield();
  } else if (hint.comm != nullptr) {
    hint.comm->seg.Wait(hint.epoch, 1000);
  } else {
    usleep(200);
  }
}

ncclResult_t Synchronize(HostStream* s) {
  if (s != nullptr) {
    DriveUntil([s] { return s->pending.load() == 0 ? ncclSuccess : ncclInProgress; });
    std::lock_guard<std::mutex> lock(s->mu);
    ncclResult_t r = s->error;
    s->error = ncclSuccess;
    return r;
  }
  std::vector<HostStream*> all;
  {
    std::shared_lock<std::shared_mutex> lock(Reg().mu);
    all = Reg().all;
  }
  ncclResult_t first = ncclSuccess;
  for (HostStream* one : all) {
    ncclResult_t r = Synchronize(one);
    if (first == ncclSuccess) first = r;
  }
  return first;
}

}  // namespace ncclrr::host
