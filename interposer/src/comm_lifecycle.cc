#include "comm_lifecycle.h"

#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <mutex>
#include <vector>

#include "call_path.h"
#include "comm_hash.h"
#include "cuda_graphs.h"
#include "env_config.h"
#include "gpu_timing_hooks.h"
#include "queries.h"
#include "runtime.h"

namespace ncclrr::interpose {
namespace {

// Creations whose handle NCCL has not written yet (splits in a group, nonblocking splits), and
// communicators not ready yet. Both are short lists.
struct Pending {
  CommState* state;
  ncclComm_t* slot;
};
// Heap objects never destroyed: NCCL calls may still arrive while the process exits.
std::mutex g_mu;
std::vector<Pending>& PendingList() {
  static auto* v = new std::vector<Pending>();
  return *v;
}
std::vector<CommState*>& Unready() {
  static auto* v = new std::vector<CommState*>();
  return *v;
}
uint64_t g_unknown_count = 0;

// What a caller's ncclConfig_t says. Fields were only ever appended to the struct, so 2.28's
// offsets hold for older configs as long as `size` covers them.
struct ConfigView {
  int blocking = -1;
  const char* name = nullptr;
};
ConfigView ReadConfig(const ncclConfig_t* c) {
  ConfigView v;
  if (c == nullptr || c->magic != 0xcafebeef) return v;
  if (c->size >= offsetof(ncclConfig_t, blocking) + sizeof(int) &&
      c->blocking != NCCL_CONFIG_UNDEF_INT)
    v.blocking = c->blocking != 0;
  if (c->size >= offsetof(ncclConfig_t, commName) + sizeof(const char*)) v.name = c->commName;
  return v;
}

int Version() { return g_runtime.lib->version; }

CommState* NewState(CommOrigin origin, const ncclConfig_t* config, const CommState* parent) {
  auto* cs = new CommState();
  cs->origin = static_cast<uint8_t>(origin);
  cs->create_ns = MonotonicNs();
  cs->creator_tid = CurrentTid();
  const ConfigView v = ReadConfig(config);
  if (v.blocking >= 0) {
    cs->blocking = static_cast<uint8_t>(v.blocking);
  } else if (parent != nullptr && config == nullptr) {
    cs->blocking = parent->blocking;  // a child without a config copies its parent's
  } else {
    cs->blocking = GetConfig().nccl_comm_blocking == 0 ? 0 : 1;
  }
  if (!cs->blocking) cs->async_error.store(ncclInProgress);  // until NCCL says it is ready
  if (v.name != nullptr && v.name[0] != '\0')
    cs->name_id = g_runtime.writer->Intern(v.name);
  else if (parent != nullptr && config == nullptr)
    cs->name_id = parent->name_id;
  return cs;
}

void EmitCommRecord(const CommState* cs) {
  Record r{};
  r.kind = RecordKind::kComm;
  CommRecord& c = r.comm;
  c.comm_id = cs->id;
  c.parent_id = cs->parent_id;
  c.handle = reinterpret_cast<uint64_t>(cs->handle);
  c.create_ns = cs->create_ns;
  c.nranks = cs->nranks.load();
  c.rank = cs->rank.load();
  c.device = cs->device.load();
  c.color = cs->color;
  c.key = cs->key;
  c.lineage = cs->lineage;
  c.name_id = cs->name_id;
  c.origin = cs->origin;
  c.blocking = cs->blocking;
  c.nccl_hash_known = cs->hash_known;
  Emit(r);
}

uint64_t Fingerprint(const int* ranks, int n) {
  std::vector<int> sorted(ranks, ranks + (n > 0 ? n : 0));
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  HashAccumulator acc;
  for (int r : sorted) acc.Eat(&r, sizeof r);
  return acc.Digest();
}

}  // namespace

CommState* NewRootComm(CommOrigin origin, const void* unique_id, int nranks, int rank,
                       const ncclConfig_t* config) {
  CommState* cs = NewState(origin, config, nullptr);
  const int v = Version();
  if (unique_id != nullptr) {
    cs->nccl_hash = RootCommHash(v, unique_id);
    cs->hash_known = HashFormulasKnown(v);
    cs->id = cs->nccl_hash;
  } else {  // ncclCommInitAll whose nested ncclGetUniqueId was not seen
    static std::atomic<uint64_t> counter{0};
    cs->id = StandInId(0x496e6974416c6cull, (uint64_t(getpid()) << 24) ^ ++counter);
    cs->nccl_hash = cs->id;
  }
  cs->rank.store(rank);
  cs->SetSize(nranks);
  RememberNcclHash(cs->nccl_hash);  // before NCCL creates it: the profiler plugin may ask
  return cs;
}

CommState* NewSplitComm(CommState* parent, int color, int key, const ncclConfig_t* config) {
  CommState* cs = NewState(CommOrigin::kSplit, config, parent);
  cs->color = color;
  cs->key = key;
  if (parent == nullptr) {
    static std::atomic<uint64_t> counter{0};
    cs->id = cs->nccl_hash = StandInId(0x53706c6974ull, ++counter);
    return cs;
  }
  int ordinal;
  {
    std::lock_guard<std::mutex> lock(parent->children_mu);
    ordinal = ++parent->split_count;  // NCCL counts every split, NOCOLOR included
  }
  const int v = Version();
  cs->parent_id = parent->id;
  cs->nccl_hash = SplitCommHash(v, parent->nccl_hash, ordinal, color);
  if (SplitHashIgnoresOrdinal(v)) {  // NCCL < 2.24: two splits with one color collide
    cs->id = StandInId(cs->nccl_hash, static_cast<uint64_t>(ordinal));
    cs->lineage = static_cast<uint32_t>(ordinal);
  } else {
    cs->id = cs->nccl_hash;
    cs->hash_known = parent->hash_known && HashFormulasKnown(v);
  }
  RememberNcclHash(cs->nccl_hash);
  return cs;
}

CommState* NewShrinkComm(CommState* parent, const int* exclude, int exclude_count,
                         const ncclConfig_t* config) {
  if (exclude == nullptr) {  // NCCL then treats the shrink as a split with color 0
    CommState* cs = NewSplitComm(parent, 0, -1, config);
    cs->origin = static_cast<uint8_t>(CommOrigin::kShrink);
    return cs;
  }
  CommState* cs = NewState(CommOrigin::kShrink, config, parent);
  const uint64_t fp = Fingerprint(exclude, exclude_count);
  if (parent == nullptr) {
    cs->id = cs->nccl_hash = StandInId(0x536872696e6bull, fp);
    return cs;
  }
  uint32_t occurrence;
  {
    std::lock_guard<std::mutex> lock(parent->children_mu);
    occurrence = ++parent->shrink_repeats[fp];
  }
  // Every shrink of one parent has NCCL hash mix(P, 0, 0). The members of one shrink all pass
  // the same exclude list and saw the same earlier shrinks with it: that names the child alike
  // on every rank.
  cs->parent_id = parent->id;
  cs->nccl_hash = ShrinkCommHash(Version(), parent->nccl_hash);
  cs->id = StandInId(cs->nccl_hash, fp ^ (uint64_t{occurrence} * 0x9e3779b97f4a7c15ull));
  cs->lineage = occurrence;
  RememberNcclHash(cs->nccl_hash);
  return cs;
}

void FinalizeComm(CommState* cs) {
  if (cs->ready.load(std::memory_order_acquire)) return;
  bool expected = false;
  if (!cs->finalizing.compare_exchange_strong(expected, true)) return;
  const RealNccl& fn = g_runtime.lib->fn;
  int rank = -1, nranks = 0, device = -1;
  const bool ok = cs->handle != nullptr && fn.ncclCommUserRank != nullptr &&
                  fn.ncclCommCount != nullptr && fn.ncclCommCuDevice != nullptr &&
                  fn.ncclCommUserRank(cs->handle, &rank) == ncclSuccess &&
                  fn.ncclCommCount(cs->handle, &nranks) == ncclSuccess &&
                  fn.ncclCommCuDevice(cs->handle, &device) == ncclSuccess;
  if (!ok) {
    cs->finalizing.store(false);
    return;
  }
  cs->rank.store(rank);
  cs->SetSize(nranks);
  cs->device.store(device);
  EmitCommRecord(cs);
  cs->ready.store(true, std::memory_order_release);
  std::lock_guard<std::mutex> lock(g_mu);
  std::erase(Unready(), cs);
}

void PublishCreated(CommState* cs, ncclComm_t* slot, ncclResult_t result) {
  if (result != ncclSuccess && result != ncclInProgress) return;  // nothing was created
  RetryCudaGraphs();
  RetryGpuTiming();
  const ncclComm_t handle = slot != nullptr ? *slot : nullptr;
  if (t_state.group_depth > 0) t_state.created_in_group = true;
  if (handle == nullptr) {  // NCCL writes it later (split in a group, nonblocking split)
    std::lock_guard<std::mutex> lock(g_mu);
    PendingList().push_back({cs, slot});
    return;
  }
  cs->handle = handle;
  Comms().Insert(cs);
  if (result == ncclSuccess && cs->blocking && t_state.group_depth == 0) {
    FinalizeComm(cs);
    if (cs->ready.load()) return;
  }
  std::lock_guard<std::mutex> lock(g_mu);
  Unready().push_back(cs);
}

void FinalizeGroupCreations() {
  t_state.created_in_group = false;
  const uint32_t tid = CurrentTid();
  std::vector<CommState*> todo;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    for (auto it = PendingList().begin(); it != PendingList().end();) {
      if (it->state->creator_tid != tid) {
        ++it;
        continue;
      }
      const ncclComm_t handle = *it->slot;  // this thread's own group has just completed
      if (handle != nullptr) {
        it->state->handle = handle;
        Comms().Insert(it->state);
        Unready().push_back(it->state);
      }
      it = PendingList().erase(it);  // null after a completed group: the split made no comm
    }
    for (CommState* cs : Unready())
      if (cs->creator_tid == tid && cs->blocking) todo.push_back(cs);
  }
  for (CommState* cs : todo) FinalizeComm(cs);
}

CommState* LookupCommSlow(ncclComm_t handle) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (CommState* cs = Comms().Find(handle)) return cs;
  for (auto it = PendingList().begin(); it != PendingList().end(); ++it) {
    if (*it->slot != handle) continue;  // NCCL has filled in this creation's handle by now
    CommState* cs = it->state;
    PendingList().erase(it);
    cs->handle = handle;
    Comms().Insert(cs);
    Unready().push_back(cs);
    return cs;
  }
  // A communicator ncclrr did not see being created: give it a stand-in id.
  auto* cs = new CommState();
  cs->handle = handle;
  cs->create_ns = MonotonicNs();
  cs->creator_tid = CurrentTid();
  cs->id = cs->nccl_hash =
      StandInId(reinterpret_cast<uint64_t>(handle), (uint64_t(getpid()) << 24) ^ ++g_unknown_count);
  Comms().Insert(cs);
  Unready().push_back(cs);
  char text[160];
  std::snprintf(text, sizeof text,
                "communicator %p was not created through a call ncclrr saw; it is recorded as "
                "comm 0x%016llx with a stand-in id",
                static_cast<void*>(handle), static_cast<unsigned long long>(cs->id));
  Note(NoteLevel::kWarning, text);
  return cs;
}

std::mutex& LifecycleMutex() { return g_mu; }

void ForgetComm(ncclComm_t handle) {
  if (CommState* cs = Comms().Find(handle)) EmitQueryCountsOf(cs);
  Comms().Remove(handle);
  std::lock_guard<std::mutex> lock(g_mu);
  std::erase_if(Unready(), [handle](CommState* cs) { return cs->handle == handle; });
}

}  // namespace ncclrr::interpose
