// GPU timing through the preload without a GPU (gputiming_test.cc): the host NCCL, with stand-in
// libcupti and libcuda (tests/gputiming/fake_*.cc) named by NCCLRR_GPU_TIMING_CUPTI/_CUDA.
// Each round: one allreduce per rank from its own thread (calls outside a group), then a group
// of allreduces over both ranks and a send/recv pair. With `handover` the program then starts
// its own CUPTI client, as the PyTorch profiler would, through the exported cupti* entry points:
// its client must receive kernel records, and ncclrr must go on with event pairs.
// Prints "calls N" (collective and p2p calls issued) and "job_kernels N".
#include <cupti_activity.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ncclrr/hostnccl.h"

extern "C" uint32_t fakeCuptiLaunch(int device, const char* name, int64_t delay_ns,
                                    int64_t duration_ns);

namespace {

ncclComm_t g_comms[2];
cudaStream_t g_streams[2];
std::vector<float> g_buf[2] = {std::vector<float>(256, 1.0f), std::vector<float>(256, 2.0f)};
int g_calls = 0;
int g_job_kernels = 0;

void SyncBoth() {
  for (auto s : g_streams) ncclrrHostStreamSynchronize(s);
}

void Round() {
  std::thread t0([] {
    ncclAllReduce(g_buf[0].data(), g_buf[0].data(), 256, ncclFloat, ncclSum, g_comms[0],
                  g_streams[0]);
  });
  std::thread t1([] {
    ncclAllReduce(g_buf[1].data(), g_buf[1].data(), 256, ncclFloat, ncclSum, g_comms[1],
                  g_streams[1]);
  });
  t0.join();
  t1.join();
  SyncBoth();
  ncclGroupStart();
  for (int r = 0; r < 2; ++r)
    ncclAllReduce(g_buf[r].data(), g_buf[r].data(), 64, ncclFloat, ncclSum, g_comms[r],
                  g_streams[r]);
  ncclSend(g_buf[0].data(), 16, ncclFloat, 1, g_comms[0], g_streams[0]);
  ncclRecv(g_buf[1].data() + 128, 16, ncclFloat, 0, g_comms[1], g_streams[1]);
  ncclGroupEnd();
  SyncBoth();
  g_calls += 6;
}

// The job's own CUPTI client (what Kineto does first).
void OnRequest(uint8_t** buf, size_t* size, size_t* max) {
  *size = 1 << 16;
  *buf = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max = 0;
}
void OnComplete(CUcontext, uint32_t, uint8_t* buf, size_t, size_t valid) {
  CUpti_Activity* rec = nullptr;
  while (cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS)
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) ++g_job_kernels;
  std::free(buf);
}
void JobCallback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

bool StartJobsCupti() {
  CUpti_SubscriberHandle sub = nullptr;
  if (cuptiSubscribe(&sub, JobCallback, nullptr) != CUPTI_SUCCESS) return false;
  if (cuptiActivityRegisterCallbacks(OnRequest, OnComplete) != CUPTI_SUCCESS) return false;
  if (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) return false;
  fakeCuptiLaunch(0, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0, 1000);  // "the GPU" runs one
  return cuptiActivityFlushAll(0) == CUPTI_SUCCESS;
}

}  // namespace

int main(int argc, char** argv) {
  const bool handover = argc > 1 && std::strcmp(argv[1], "handover") == 0;
  if (ncclCommInitAll(g_comms, 2, nullptr) != ncclSuccess) return 2;
  for (auto& s : g_streams) s = ncclrrHostStreamCreate();
  Round();
  if (handover && !StartJobsCupti()) {
    std::fprintf(stderr, "the job's CUPTI client could not start\n");
    return 3;
  }
  Round();
  for (auto c : g_comms) ncclCommDestroy(c);
  const float expect = 24.0f;  // 1 + 2, then doubled by each of the three later allreduces
  std::printf("calls %d\njob_kernels %d\nresult %s\n", g_calls, g_job_kernels,
              g_buf[0][0] == expect ? "ok" : "wrong");
  return g_buf[0][0] == expect ? 0 : 1;
}
