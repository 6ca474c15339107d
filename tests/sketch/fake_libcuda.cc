// A stand-in libcuda for CI: the driver entry points SketchDevice resolves, implemented on the
// host. Device memory is host memory; cuLaunchKernel runs the real kernel body on the host
// emulator (kernel_emulator.h). Controls for the tests (extern "C", found with dlsym):
//   fake_cuda_set_deferred(1): launches wait until fake_cuda_run_pending() (results not ready;
//   FAKE_CUDA_DEFERRED=1 sets it for a whole process, whose launches then never run);
//   launches into the stream kCapturingStream are recorded as a graph, run by
//   fake_cuda_replay_graph(); fake_cuda_launches() counts kernel launches;
//   fake_cuda_set_gate(1 launches, 2 module loads) holds those calls (as a full launch queue or a
//   set-up waiting for the GPU would) until fake_cuda_set_gate(0), and fake_cuda_gate_waiters()
//   says how many are held. The stream kOtherContextStream belongs to a second context.
//   fake_cuda_fail_pushes(n): the next n cuCtxPushCurrent calls fail.
//   fake_cuda_take_ops(buf, size): the stream operations since the last take, "launch S",
//   "record E S" and "wait S E" joined by ';' (streams and events as hex handles).
//   fake_cuda_set_sms(n): the SM count that contexts set up from now on see (0: unknown);
//   fake_cuda_last_grid() is the CTA count of the last launch.
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "kernel_abi.h"
#include "kernel_emulator.h"

namespace {

using CUresult = int;
constexpr uintptr_t kContext = 0x1000;
constexpr uintptr_t kCapturingStream = 0xcafe;
constexpr uintptr_t kBrokenStream = 0xdead;
constexpr uintptr_t kOtherContextStream = 0xc2c2;
constexpr int kGateLaunch = 1, kGateModuleLoad = 2;

struct State {
  std::mutex mu;
  bool deferred = std::getenv("FAKE_CUDA_DEFERRED") != nullptr;
  int launches = 0;
  int module_loads = 0;
  std::vector<ncclrr::sketch::kabi::Launch> pending, graph;
  int capture_mode = 0;
  std::condition_variable gate_cv;
  int gate = 0;            // under mu
  int gate_waiters = 0;    // under mu
  int fail_pushes = 0;     // under mu
  std::string ops;         // under mu
  int sms = 0;             // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
  unsigned last_grid = 0;  // under mu
  // Handles of the next stream and event made (under mu).
  uintptr_t next_stream = 0x3000, next_event = 0x4000;
};
State& S() {
  static State s;
  return s;
}

// Holds the calling thread while `which` is the gate.
void PassGate(int which) {
  State& s = S();
  std::unique_lock<std::mutex> lock(s.mu);
  ++s.gate_waiters;
  s.gate_cv.wait(lock, [&] { return s.gate != which; });
  --s.gate_waiters;
}

// Under mu.
void Op(const std::string& what, const void* a, const void* b = nullptr) {
  char text[96];
  if (b)
    std::snprintf(text, sizeof(text), "%s %p %p", what.c_str(), a, b);
  else
    std::snprintf(text, sizeof(text), "%s %p", what.c_str(), a);
  S().ops += (S().ops.empty() ? "" : ";") + std::string(text);
}

}  // namespace

extern "C" {

CUresult cuInit(unsigned) { return 0; }
CUresult cuDriverGetVersion(int* v) { return *v = 13000, 0; }
CUresult cuDeviceGetCount(int* n) { return *n = 1, 0; }
CUresult cuDeviceGetAttribute(int* v, int attr, int) {
  *v = attr == 75 ? 9 : attr == 16 ? S().sms : 0;  // compute capability major, SM count
  return 0;
}
CUresult cuStreamGetCtx(void* stream, void** ctx) {
  if (uintptr_t(stream) == kBrokenStream) return 400;  // CUDA_ERROR_INVALID_HANDLE
  *ctx =
      reinterpret_cast<void*>(uintptr_t(stream) == kOtherContextStream ? kContext + 1 : kContext);
  return 0;
}
CUresult cuStreamIsCapturing(void* stream, int* status) {
  *status = uintptr_t(stream) == kCapturingStream ? 1 : 0;
  return 0;
}
CUresult cuCtxPushCurrent_v2(void*) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.fail_pushes == 0) return 0;
  --s.fail_pushes;
  return 201;  // CUDA_ERROR_INVALID_CONTEXT
}
CUresult cuCtxPopCurrent_v2(void** ctx) { return *ctx = reinterpret_cast<void*>(kContext), 0; }
CUresult cuCtxGetDevice(int* d) { return *d = 0, 0; }
CUresult cuModuleLoadData(void** module, const void* image) {
  uint32_t magic = 0;
  std::memcpy(&magic, image, 4);
  if (magic != 0xBA55ED50u) return 200;  // CUDA_ERROR_INVALID_IMAGE: not a fatbin
  PassGate(kGateModuleLoad);
  ++S().module_loads;
  *module = reinterpret_cast<void*>(0x2000);
  return 0;
}
CUresult cuModuleUnload(void*) { return 0; }
CUresult cuModuleGetFunction(void** fn, void*, const char* name) {
  const std::string n = name;
  const std::string prefix = "ncclrr_sketch_";
  if (n.compare(0, prefix.size(), prefix) != 0) return 500;  // CUDA_ERROR_NOT_FOUND
  *fn = reinterpret_cast<void*>(uintptr_t(std::atoi(n.c_str() + prefix.size()) + 1));
  return 0;
}
CUresult cuLaunchKernel(void* fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned smem, void* stream, void** params, void** extra) {
  const auto& launch = *static_cast<const ncclrr::sketch::kabi::Launch*>(params[0]);
  if (gx != launch.total_ctas || gy != 1 || gz != 1 ||
      bx != unsigned(ncclrr::sketch::kabi::kThreadsPerCta) || by != 1 || bz != 1 || smem != 0 ||
      extra != nullptr)
    return 1;  // CUDA_ERROR_INVALID_VALUE
  for (uint32_t j = 0; j < launch.njobs; ++j)
    if (launch.jobs[j].dtype + 1 != uintptr_t(fn)) return 1;  // wrong kernel for the dtype
  PassGate(kGateLaunch);
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  ++s.launches;
  s.last_grid = gx;
  Op("launch", stream);
  if (uintptr_t(stream) == kCapturingStream)
    s.graph.push_back(launch);
  else if (s.deferred)
    s.pending.push_back(launch);
  else
    ncclrr::sketch::test::EmulateLaunch(launch, false);
  return 0;
}
CUresult cuMemAlloc_v2(unsigned long long* p, size_t n) {
  *p = reinterpret_cast<uintptr_t>(std::aligned_alloc(256, (n + 255) / 256 * 256));
  return 0;
}
CUresult cuMemFree_v2(unsigned long long p) { return std::free(reinterpret_cast<void*>(p)), 0; }
CUresult cuMemsetD8Async(unsigned long long p, unsigned char v, size_t n, void*) {
  std::memset(reinterpret_cast<void*>(p), v, n);
  return 0;
}
CUresult cuStreamCreate(void** s, unsigned) {
  std::lock_guard<std::mutex> lock(S().mu);
  *s = reinterpret_cast<void*>(S().next_stream++);
  return 0;
}
CUresult cuStreamSynchronize(void*) { return 0; }
CUresult cuStreamDestroy_v2(void*) { return 0; }
CUresult cuEventCreate(void** e, unsigned) {
  std::lock_guard<std::mutex> lock(S().mu);
  *e = reinterpret_cast<void*>(S().next_event++);
  return 0;
}
CUresult cuEventRecord(void* e, void* stream) {
  std::lock_guard<std::mutex> lock(S().mu);
  Op("record", e, stream);
  return 0;
}
CUresult cuEventDestroy_v2(void*) { return 0; }
CUresult cuStreamWaitEvent(void* stream, void* e, unsigned) {
  std::lock_guard<std::mutex> lock(S().mu);
  Op("wait", stream, e);
  return 0;
}
CUresult cuMemHostAlloc(void** p, size_t n, unsigned) {
  *p = std::aligned_alloc(4096, (n + 4095) / 4096 * 4096);
  return 0;
}
CUresult cuMemFreeHost(void* p) { return std::free(p), 0; }
CUresult cuMemHostGetDevicePointer_v2(unsigned long long* d, void* p, unsigned) {
  *d = reinterpret_cast<uintptr_t>(p);
  return 0;
}
CUresult cuThreadExchangeStreamCaptureMode(int* mode) {
  std::swap(*mode, S().capture_mode);
  return 0;
}
CUresult cuGetErrorString(CUresult, const char** s) { return *s = "fake driver error", 0; }

void fake_cuda_set_deferred(int on) { S().deferred = on != 0; }
void fake_cuda_run_pending() {
  std::lock_guard<std::mutex> lock(S().mu);
  for (const auto& l : S().pending) ncclrr::sketch::test::EmulateLaunch(l, true);
  S().pending.clear();
}
void fake_cuda_replay_graph() {
  std::lock_guard<std::mutex> lock(S().mu);
  for (const auto& l : S().graph) ncclrr::sketch::test::EmulateLaunch(l, false);
}
void fake_cuda_forget_graph() {  // the graph was destroyed: its launches are gone
  std::lock_guard<std::mutex> lock(S().mu);
  S().graph.clear();
}
void fake_cuda_set_gate(int which) {
  {
    std::lock_guard<std::mutex> lock(S().mu);
    S().gate = which;
  }
  S().gate_cv.notify_all();
}
int fake_cuda_gate_waiters() {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().gate_waiters;
}
void fake_cuda_fail_pushes(int n) {
  std::lock_guard<std::mutex> lock(S().mu);
  S().fail_pushes = n;
}
void fake_cuda_take_ops(char* buf, int size) {
  std::lock_guard<std::mutex> lock(S().mu);
  std::snprintf(buf, size_t(size), "%s", S().ops.c_str());
  S().ops.clear();
}
int fake_cuda_launches() { return S().launches; }
void fake_cuda_set_sms(int n) { S().sms = n; }
unsigned fake_cuda_last_grid() {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().last_grid;
}
int fake_cuda_module_loads() { return S().module_loads; }
int fake_cuda_capture_mode() { return S().capture_mode; }

}  // extern "C"
