// The preload interposer's side of the handshake (trace/include/ncclrr/trace/preload_handshake.h),
// steered by the test: which thread is "inside a recorded call" and which comm it records.
#include <atomic>
#include <cstdint>

namespace {
thread_local bool t_in_call = false;
std::atomic<uint64_t> g_comm{0};
}  // namespace

extern "C" {
__attribute__((visibility("default"))) int ncclrrPreloadInRecordedCall() { return t_in_call; }
__attribute__((visibility("default"))) int ncclrrPreloadRecordsComm(uint64_t hash) {
  return hash != 0 && hash == g_comm.load();
}
__attribute__((visibility("default"))) void fakePreloadSetInCall(int on) { t_in_call = on != 0; }
__attribute__((visibility("default"))) void fakePreloadSetComm(uint64_t hash) { g_comm = hash; }
}
