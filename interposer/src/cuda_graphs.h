// CUDA graphs (torch.compile / torch.cuda.graph, XLA command buffers): an NCCL call made while
// its stream is being captured does not run; it becomes a node of the graph and runs at every
// launch of that graph. Such a call is recorded as a template (capture = 1, graph_id = the
// CUgraph it is captured into) whose seq is its position among that graph's templates on its
// communicator; it does not take a live sequence number. The graph's instantiations and launches
// are recorded as GraphEvents, and each launch advances the live per-communicator (and per-peer)
// sequence numbers by the graph's templates, so later calls are numbered as NCCL pairs them.
//
// The capture state comes from the CUDA driver (cuStreamGetCaptureInfo, reached with dlopen of
// the libcuda.so.1 the process already loaded). Instantiations and launches are seen through the
// exported cudaGraph*/cuGraph* wrappers (graph_wrappers.cc) and the dlsym hook. Nothing of this
// runs without CUDA (the host NCCL, a CPU-only process) or with NCCLRR_GRAPHS=0. Launches made
// through entry points ncclrr cannot see (a statically linked CUDA runtime reaches the driver
// through cuGetProcAddress) are missing: the trace then says so in a note at exit.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>

#include "comm_registry.h"
#include "graph_events.h"
#include "ncclrr/trace/records.h"
#include "real_nccl.h"

namespace ncclrr::interpose {

struct CaptureInfo {
  uint8_t capture = 0;  // 0 not capturing, 1 captured into `graph`, 2 capture invalidated
  uint64_t graph = 0;
};

// At recording start: looks for the driver's capture query (unless the NCCL is the host one).
void InitCudaGraphs(const NcclLibrary& lib);
// After a communicator is created (NCCL has loaded the driver by then): looks again when the
// driver was not loaded at recording start. Cheap once resolved.
void RetryCudaGraphs();
// A handle to the libcuda.so.1 this process already loaded (dlclose it), or null: never loads it.
void* LoadedLibcuda();
// cuDriverGetVersion of a loaded libcuda, else 0.
int CudaDriverVersion();
CaptureInfo QueryCapture(const void* stream);
// A captured call: its position among the graph's templates on its communicator (its seq).
uint64_t AddGraphTemplate(const CallRecord& rec, CommState* cs);

// At exit: notes graphs that hold NCCL templates but were never seen launched.
void NoteGraphsAtExit();
// Guards the graph bookkeeping; taken around fork() (triggers.cc).
std::mutex& GraphMutex();

}  // namespace ncclrr::interpose
