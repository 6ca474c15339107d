// A user's own profiler plugin, for the chaining tests: it exports one interface version
// (FAKE_PLUGIN_VERSION: 4 or 5), asks for group, collective, p2p and proxy events, and logs
// every call it gets, with its own handle numbers, to the file named by FAKE_PLUGIN_LOG.
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "profiler_abi.h"

namespace abi = ncclrr::profiler::abi;

namespace {

std::mutex g_mu;
FILE* Log() {
  static FILE* f = std::fopen(std::getenv("FAKE_PLUGIN_LOG"), "a");
  return f;
}
struct Event {
  int id;
  int type;
};
int g_next = 1;
int g_contexts = 0;

int IdOf(void* h) { return h != nullptr ? static_cast<Event*>(h)->id : 0; }

template <typename Descr>
abi::Result Start(void* ctx, void** handle, Descr* d) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto* e = new Event{g_next++, static_cast<int>(d->type)};
  std::fprintf(Log(), "start ctx=%d id=%d type=%d parent=%d", *static_cast<int*>(ctx), e->id,
               e->type, IdOf(d->parentObj));
  if (static_cast<int>(d->type) == abi::kColl)
    std::fprintf(Log(), " func=%s count=%zu", d->coll.func, d->coll.count);
  std::fprintf(Log(), "\n");
  *handle = e;
  return 0;
}
abi::Result Stop(void* handle) {
  std::lock_guard<std::mutex> lock(g_mu);
  std::fprintf(Log(), "stop id=%d\n", IdOf(handle));
  return 0;
}
abi::Result State(void* handle, int state, void*) {
  std::lock_guard<std::mutex> lock(g_mu);
  std::fprintf(Log(), "state id=%d state=%d\n", IdOf(handle), state);
  return 0;
}
abi::Result Finalize(void* ctx) {
  std::lock_guard<std::mutex> lock(g_mu);
  std::fprintf(Log(), "finalize ctx=%d\n", *static_cast<int*>(ctx));
  std::fflush(Log());
  return 0;
}
constexpr int kMask = abi::kGroup | abi::kColl | abi::kP2p | abi::kProxyOp;

}  // namespace

extern "C" {
#if FAKE_PLUGIN_VERSION == 5
abi::Result InitV5(void** ctx, uint64_t id, int* mask, const char* name, int, int nranks, int rank,
                   abi::Logger) {
  std::lock_guard<std::mutex> lock(g_mu);
  *ctx = new int(++g_contexts);
  *mask = kMask;
  std::fprintf(Log(), "init v5 hash=%llx name=%s nranks=%d rank=%d\n",
               static_cast<unsigned long long>(id), name, nranks, rank);
  return 0;
}
__attribute__((visibility("default"))) abi::ProfilerV5 ncclProfiler_v5 = {
    "fake",
    InitV5,
    Start<abi::DescrV5>,
    Stop,
    reinterpret_cast<abi::Result (*)(void*, int, abi::StateArgsV5*)>(State),
    Finalize};
#else
abi::Result InitV4(void** ctx, int* mask, const char* name, uint64_t hash, int, int nranks,
                   int rank, abi::Logger) {
  std::lock_guard<std::mutex> lock(g_mu);
  *ctx = new int(++g_contexts);
  *mask = kMask;
  std::fprintf(Log(), "init v4 hash=%llx name=%s nranks=%d rank=%d\n",
               static_cast<unsigned long long>(hash), name, nranks, rank);
  return 0;
}
__attribute__((visibility("default"))) abi::ProfilerV4 ncclProfiler_v4 = {
    "fake",
    InitV4,
    Start<abi::DescrV4>,
    Stop,
    reinterpret_cast<abi::Result (*)(void*, int, abi::StateArgsV4*)>(State),
    Finalize};
#endif
}
