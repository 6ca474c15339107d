#pragma once
// Synthetic traces: a training-like loop of collectives written through the real TraceWriter,
// one file per rank, with optional injected bugs. Used by the demo before real capture exists,
// by golden tests of the analysis, and by benchmarks that need millions of calls.
#include <cstdint>
#include <string>
#include <vector>

#include "ncclrr/base/status.h"
#include "ncclrr/trace/records.h"
#include "ncclrr/trace/trace_data.h"

namespace ncclrr {

struct SyntheticTraceOptions {
  std::string dir;
  int ranks = 2;
  // > 1: the ranks form this many communicators of ranks/groups consecutive ranks each (as the
  // tensor-parallel groups of a large job), each running the loop on its own; bugs still name
  // global ranks.
  int groups = 1;
  int steps = 4;
  std::vector<uint64_t> counts = {1728, 36864, 36864, 512};  // allreduces per step (floats)
  int swap_rank = -1;  // this rank issues calls swap_index and swap_index+1 swapped ...
  int swap_index = 1;
  std::vector<int> swap_steps;  // ... in these steps
  int missing_rank = -1;        // this rank stops issuing calls at missing_step/missing_index
  int missing_step = 0;
  int missing_index = 0;
  int count_delta_rank = -1;  // this rank's call count_delta_index has count + count_delta ...
  int count_delta_index = 0;
  int64_t count_delta = 0;
  int count_delta_step = 0;  // ... in this step
  uint64_t base_comm_id = 0x5a17c0de00000000ull;
  bool compress = true;
  bool close_files = true;   // false: leave files without footer (as a killed job would)
  uint32_t flush_every = 0;  // > 0: a frame after every N calls (a running job's periodic flushes)
};

struct SyntheticTraceResult {
  std::vector<std::string> files;
  uint64_t calls = 0;
};

StatusOr<SyntheticTraceResult> WriteSyntheticTrace(const SyntheticTraceOptions& options);

// Scripted traces: every call of every process spelled out, for golden tests of the analysis
// (p2p, several communicators, splits, mismatches of every kind, graphs, flight-recorder and torn
// files). Sequence numbers are assigned as the interposer does: per communicator for
// collectives (graph launches advance them by the graph's captured collectives), per (peer,
// direction) for Send/Recv, per graph for captured templates.
struct ScriptComm {
  uint64_t id = 0;
  std::string name;
  std::vector<int> members;  // process indices in communicator-rank order
  uint64_t parent = 0;
  int color = 0;
  CommOrigin origin = CommOrigin::kInitRank;
  int nranks_override = 0;  // > 0: the CommRecords claim this many ranks
};

struct ScriptCall {
  Api api = Api::kAllReduce;
  int comm = 0;  // index into SyntheticScript::comms
  uint64_t count = 1024;
  Dtype dtype = Dtype::kFloat32;
  int32_t op = 0;             // ncclRedOp_t
  int root_peer = -1;         // root of rooted collectives, peer (comm rank) of Send/Recv
  int tensor = 0;             // logical tensor: the buffer address derives from it
  int8_t result = 0;          // ncclResult_t returned
  uint64_t group = 0;         // nonzero: issued inside this group scope
  uint64_t graph = 0;         // with capture = 1: captured into this graph
  uint8_t capture = 0;        // 1 captured, 2 capture invalidated
  uint64_t stream = 0;        // 0: the process's default stream
  uint32_t callsite = 0;      // nonzero: recorded call site "site<N>"
  uint32_t caller = 0;        // nonzero: the site is a stack, "site<N>" called from "caller<M>"
  int64_t gap_ns = 20'000;    // time since the process's previous event
  uint64_t launch_graph = 0;  // nonzero: not a call but a launch of this graph
  bool out_of_place = false;  // AllReduce: recvbuff != sendbuff (others always are)
  double scalar = 0;          // op >= 5 (a PreMulSum handle): the host scalar it was made with
  bool in_flight = false;     // the call never returned: written as an in-flight record
  // GPU progress (with ScriptProcess::gpu_progress): 0 nothing, 1 a start mark (seen running,
  // started gpu_after_ns after its issue), 2 a complete GPU time.
  uint8_t gpu = 0;
  int64_t gpu_after_ns = 10'000;
  int64_t gpu_ns = 5'000;  // duration of a complete GPU time (gpu == 2)
  // Sketches recorded for this call (call_uid is filled in): data-check tests compute them
  // from real buffers with the sketch library.
  std::vector<SketchData> sketches;
  // Capture references for this call (call_uid is filled in): crafted-input tests.
  std::vector<CaptureRefData> captures;
};

struct ScriptProcess {
  std::vector<ScriptCall> calls;  // issue order
  bool close = true;              // false: no footer, as if killed
  uint64_t truncate_bytes = 0;    // > 0: cut this many bytes off the end (a torn tail)
  uint32_t ring_keep = 0;         // > 0: flight-recorder file holding only the last N calls
  int64_t alive_until_ns = 0;     // > 0: a clock pair this long after the first call (alive)
  uint64_t max_file_bytes = 0;    // > 0: the writer drops (and counts) records past this size
  uint32_t flush_every = 0;       // > 0: flush a frame after every N records (torn-tail tests)
  std::string host = "synthetic";
  bool gpu_progress = false;  // the note of GPU timing with progress marks
};

struct SyntheticScript {
  std::string dir;
  std::vector<ScriptComm> comms;
  std::vector<ScriptProcess> processes;  // file i is "synthetic-rank<i>.ncclrr"
  bool compress = true;
  // Every process puts tensor t at the same address, as ranks of one SPMD program whose
  // allocators run alike do (default: addresses differ per process).
  bool same_addresses = false;
  // Added to every buffer address: another run of the same program (its allocator placed the
  // buffers elsewhere).
  uint64_t address_salt = 0;
};

StatusOr<SyntheticTraceResult> WriteSyntheticScript(const SyntheticScript& script);

}  // namespace ncclrr
