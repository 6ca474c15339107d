// NCCL calls captured into a (stand-in) CUDA graph, then the graph launched: the trace must hold
// the captured calls as templates and the launches, with live sequence numbers moved past every
// launched template. Run with NCCLRR_GRAPHS=2 (fake_cuda.cc stands in for the driver).
#include <nccl.h>

#include <cstdio>
#include <vector>

#include "ncclrr/hostnccl.h"

extern "C" {
void fakeBeginCapture(void* stream, void* graph);
void fakeEndCapture(void* stream);
int fakeLaunches();
}

namespace {
ncclComm_t g_comms[2];
cudaStream_t g_streams[2];
std::vector<float> g_buf[2] = {std::vector<float>(64, 1.0f), std::vector<float>(64, 1.0f)};

void AllReduceBothRanks() {
  ncclGroupStart();
  for (int r = 0; r < 2; ++r)
    ncclAllReduce(g_buf[r].data(), g_buf[r].data(), 64, ncclFloat, ncclSum, g_comms[r],
                  g_streams[r]);
  ncclGroupEnd();
  for (auto s : g_streams) ncclrrHostStreamSynchronize(s);
}
}  // namespace

int main() {
  if (ncclCommInitAll(g_comms, 2, nullptr) != ncclSuccess) return 2;
  for (auto& s : g_streams) s = ncclrrHostStreamCreate();
  AllReduceBothRanks();  // live: seq 0
  auto graph = reinterpret_cast<cudaGraph_t>(0x6000);
  for (auto s : g_streams) fakeBeginCapture(s, static_cast<void*>(graph));
  AllReduceBothRanks();  // template 0
  AllReduceBothRanks();  // template 1
  for (auto s : g_streams) fakeEndCapture(s);
  cudaGraphExec_t exec = nullptr;
  cudaGraphInstantiate(&exec, graph, 0);
  for (int i = 0; i < 3; ++i) cudaGraphLaunch(exec, g_streams[0]);
  cudaGraphExec_t other = nullptr;  // a graph without NCCL calls leaves no trace
  cudaGraphInstantiate(&other, reinterpret_cast<cudaGraph_t>(0x7000), 0);
  cudaGraphLaunch(other, g_streams[0]);
  AllReduceBothRanks();  // live: 1 + 3 launches x 2 templates = seq 7
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  for (auto c : g_comms) ncclCommDestroy(c);
  std::printf("launches %d\n", fakeLaunches());
  return fakeLaunches() == 4 ? 0 : 1;
}
