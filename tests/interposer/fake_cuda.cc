// A stand-in for the CUDA driver and runtime (SONAME libcuda.so.1), enough for the interposer's
// CUDA-graph bookkeeping to run without a GPU: per-stream capture state behind
// cuStreamGetCaptureInfo_v3, and graph instantiate/launch/destroy that only count. Streams are
// the host NCCL's stream handles.
#include <atomic>
#include <cstdint>

namespace {
constexpr int kStreams = 16;
std::atomic<uintptr_t> g_stream[kStreams];
std::atomic<uintptr_t> g_graph[kStreams];
std::atomic<int> g_launches{0};

int Find(uintptr_t stream) {
  for (int i = 0; i < kStreams; ++i)
    if (g_stream[i].load() == stream) return i;
  return -1;
}
}  // namespace

extern "C" {

int cuDriverGetVersion(int* v) {
  *v = 13000;
  return 0;
}

int cuStreamGetCaptureInfo_v3(void* stream, int* status, unsigned long long* id, void** graph,
                              const void**, const void**, size_t*) {
  const int i = Find(reinterpret_cast<uintptr_t>(stream));
  *status = i >= 0 ? 1 : 0;  // CU_STREAM_CAPTURE_STATUS_ACTIVE / NONE
  if (id != nullptr) *id = i >= 0 ? 100 + i : 0;
  if (graph != nullptr) *graph = i >= 0 ? reinterpret_cast<void*>(g_graph[i].load()) : nullptr;
  return 0;
}

void fakeBeginCapture(void* stream, void* graph) {
  for (int i = 0; i < kStreams; ++i) {
    uintptr_t free_slot = 0;
    if (g_stream[i].compare_exchange_strong(free_slot, reinterpret_cast<uintptr_t>(stream))) {
      g_graph[i].store(reinterpret_cast<uintptr_t>(graph));
      return;
    }
  }
}

void fakeEndCapture(void* stream) {
  const int i = Find(reinterpret_cast<uintptr_t>(stream));
  if (i >= 0) g_stream[i].store(0);
}

int fakeLaunches() { return g_launches.load(); }

int cudaGraphInstantiate(void** exec, void* graph, unsigned long long) {
  *exec = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(graph) + 1);
  return 0;
}

int cudaGraphLaunch(void*, void*) {
  g_launches.fetch_add(1);
  return 0;
}

int cudaGraphExecDestroy(void*) { return 0; }
int cudaGraphDestroy(void*) { return 0; }

}  // extern "C"
