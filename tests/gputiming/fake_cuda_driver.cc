// A stand-in CUDA driver for the event-pair source on machines without a GPU. An event recorded
// on a stream completes at (now + that stream's queued delay) on CLOCK_MONOTONIC; queries and
// elapsed times follow from that, as on a GPU. Tests steer it through fakeCuda* functions.
#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

namespace {

struct Event {
  int64_t complete_ns = 0;
  bool recorded = false;
  void* stream = nullptr;  // where it was last recorded
};
struct State {
  std::mutex mu;
  std::map<void*, int64_t> stream_delay;
  int live_events = 0;
  int records = 0;
  int capture_mode_exchanges = 0;
  bool fail_record = false;
  std::atomic<void*> query_gate{nullptr};  // cuEventQuery of its events waits while it is set
  std::atomic<int> query_waiters{0};
  int64_t new_stream_delay = 0;  // of the streams cuStreamCreate makes from now on
};
State& S() {
  static State* s = new State();
  return *s;
}
int g_context_token;
void* const kContext = &g_context_token;
thread_local void* t_current = nullptr;

int64_t Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

extern "C" {

int cuEventCreate(void** e, unsigned) {
  std::lock_guard<std::mutex> lock(S().mu);
  *e = new Event();
  ++S().live_events;
  return 0;
}
int cuEventRecord(void* e, void* stream) {
  std::lock_guard<std::mutex> lock(S().mu);
  if (S().fail_record) return 1;
  auto* ev = static_cast<Event*>(e);
  ev->complete_ns = Now() + S().stream_delay[stream];
  ev->recorded = true;
  ev->stream = stream;
  ++S().records;
  return 0;
}
int cuEventQuery(void* e) {
  auto* ev = static_cast<Event*>(e);
  void* const stream = ev->stream;
  if (stream != nullptr && S().query_gate.load() == stream) {  // held, as a driver call can be
    ++S().query_waiters;
    while (S().query_gate.load() == stream)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    --S().query_waiters;
  }
  if (!ev->recorded) return 400;              // CUDA_ERROR_INVALID_HANDLE
  return Now() >= ev->complete_ns ? 0 : 600;  // CUDA_ERROR_NOT_READY
}
int cuEventSynchronize(void* e) {
  auto* ev = static_cast<Event*>(e);
  while (Now() < ev->complete_ns) {
  }
  return 0;
}
int cuEventElapsedTime_v2(float* ms, void* a, void* b) {
  if (cuEventQuery(a) != 0 || cuEventQuery(b) != 0) return 600;
  *ms = static_cast<float>(static_cast<double>(static_cast<Event*>(b)->complete_ns -
                                               static_cast<Event*>(a)->complete_ns) /
                           1e6);
  return 0;
}
int cuEventDestroy_v2(void* e) {
  std::lock_guard<std::mutex> lock(S().mu);
  delete static_cast<Event*>(e);
  --S().live_events;
  return 0;
}
int cuStreamGetCtx(void*, void** ctx) {
  *ctx = kContext;
  return 0;
}
int cuStreamCreate(void** stream, unsigned) {
  static int streams[64];
  static int next = 0;
  *stream = &streams[next++ % 64];
  std::lock_guard<std::mutex> lock(S().mu);
  S().stream_delay[*stream] = S().new_stream_delay;
  return 0;
}
int cuCtxPushCurrent_v2(void* ctx) {
  t_current = ctx;
  return 0;
}
int cuCtxPopCurrent_v2(void** ctx) {
  *ctx = t_current;
  t_current = nullptr;
  return 0;
}
int cuCtxGetCurrent(void** ctx) {
  *ctx = t_current;
  return 0;
}
int cuThreadExchangeStreamCaptureMode(int* mode) {
  std::lock_guard<std::mutex> lock(S().mu);
  ++S().capture_mode_exchanges;
  *mode = *mode == 2 ? 0 : 2;  // relaxed <-> global, as a thread's mode would swap
  return 0;
}

// ---- Test controls ----
void fakeCudaSetStreamDelay(void* stream, int64_t ns) {
  std::lock_guard<std::mutex> lock(S().mu);
  S().stream_delay[stream] = ns;
}
void fakeCudaSetNewStreamDelay(int64_t ns) {
  std::lock_guard<std::mutex> lock(S().mu);
  S().new_stream_delay = ns;
}
void fakeCudaClearStreamDelays() {  // every stream, the private ones ncclrr created included
  std::lock_guard<std::mutex> lock(S().mu);
  for (auto& [stream, delay] : S().stream_delay) delay = 0;
  S().new_stream_delay = 0;
}
void fakeCudaSetQueryGate(void* stream) { S().query_gate.store(stream); }
int fakeCudaQueryWaiters() { return S().query_waiters.load(); }
void fakeCudaSetFailRecord(int on) { S().fail_record = on != 0; }
int fakeCudaRecords() { return S().records; }
int fakeCudaLiveEvents() { return S().live_events; }
int fakeCudaCaptureModeExchanges() { return S().capture_mode_exchanges; }

}  // extern "C"
