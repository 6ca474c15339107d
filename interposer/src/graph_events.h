// What graph_wrappers.cc tells cuda_graphs.cc. Free of CUDA and NCCL headers: the wrappers
// define cudaGraph*/cuGraph* with their own (register-compatible) signatures.
#pragma once
#include <atomic>
#include <cstdint>

namespace ncclrr::interpose {

extern std::atomic<bool> g_graphs_active;
inline bool GraphsActive() { return g_graphs_active.load(std::memory_order_relaxed); }

// Brackets a forwarded graph call; false when it is nested in another wrapped call (the CUDA
// runtime calling the driver), which is then not recorded.
bool EnterGraphCall();
void LeaveGraphCall();

// Graph lifecycle (graph and exec handles as opaque values), after a successful call.
void OnGraphInstantiated(uint64_t graph, uint64_t exec);
void OnGraphLaunched(uint64_t exec, uint64_t stream);
void OnGraphExecDestroyed(uint64_t exec);
void OnGraphDestroyed(uint64_t graph);
// GPU timing's id of the template set an executable runs, 0 when it holds no NCCL call.
uint64_t TimedGraphOfExec(uint64_t exec);

}  // namespace ncclrr::interpose
