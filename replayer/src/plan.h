#pragma once
// ReplayPlan: a trace turned into what a replay issues. Every call gets the actor that issues it
// (one per recorded (process file, device): one thread, one GPU), its logical identity (which
// tensor and which step the rank meant, from analysis::LogicalIdentity), and its issue unit (a
// single call, or every call of one group or one graph launch). The plan is immutable and shared
// by every ordering, backend and verification of one replay.
#include <cstdint>
#include <string>
#include <vector>

#include "ncclrr/analysis/model.h"
#include "ncclrr/base/status.h"
#include "ncclrr/trace/records.h"

namespace ncclrr::replay {

inline constexpr uint32_t kNone = ~uint32_t{0};

struct PlanCall {
  analysis::CallRef ref;  // the record (for a graph launch: the captured template)
  uint32_t comm = 0;      // index into ReplayPlan::comms (== TraceModel::comms index)
  int rank = 0;           // communicator rank
  uint32_t actor = 0;
  uint32_t unit = 0;
  Api api = Api::kUnknown;  // kBcast is replayed as an in-place kBroadcast
  uint8_t dtype = 0;
  uint8_t flags = 0;
  int32_t op = 0;
  int root_peer = -1;  // root of rooted collectives, peer of send/recv
  uint64_t count = 0;
  uint64_t send_elems = 0, recv_elems = 0;  // what this rank's buffers hold
  bool in_place = false;
  double scalar = 1.0;        // PreMulSum scalar (1 when device-resident: unknown)
  uint64_t recorded_seq = 0;  // collective position, or per-peer index for send/recv
  int64_t time_ns = 0;        // common timeline
  uint64_t stream = 0;        // recorded cudaStream_t value (per file)
  uint32_t tid = 0;
  // Logical identity. Collectives: index into PlanComm::logical. Send/recv: the matching call of
  // the peer (kNone when the peer has none).
  uint32_t logical = kNone;
  uint32_t partner = kNone;
  uint32_t step = 0;    // which occurrence of its tensor (collectives) or per-peer index (p2p)
  uint32_t launch = 0;  // > 0: issued by the launch-th launch of a CUDA graph
  bool collective() const { return IsCollective(api); }
};

// One logical collective: the calls that every rank of the communicator meant as "the same".
struct LogicalColl {
  uint32_t tensor = kNone;  // kNone: identity unknown, paired by recorded position
  uint32_t step = 0;        // occurrence of the tensor (or the recorded seq when unknown)
  std::vector<uint32_t> call_of_rank;  // PlanCall index per communicator rank, or kNone
  uint32_t args = kNone;  // the call whose arguments define the reference (majority, then ref rank)
  uint64_t data_key = 0;  // seeds the synthetic data of every rank's input
  bool args_differ = false;  // participants disagree on api, count, dtype, op or root
  double canonical_key = 0;  // order of logical calls that every rank follows under `canonical`
  // Where the reference rank issued it in the communicator's loop (loop_steps.h): step and call
  // within the step; kNone when no loop was found or the call came before it.
  uint32_t loop_step = kNone;
  uint32_t loop_call = kNone;
};

struct PlanComm {
  bool used = false;  // holds calls to replay (comms without calls are not rebuilt)
  uint64_t id = 0;
  uint32_t lineage = 0;
  std::string name;
  int nranks = 0;
  std::vector<uint32_t> actor_of_rank;
  std::vector<int> device_of_rank;
  std::vector<LogicalColl> logical;  // in canonical order
  uint32_t loop_period = 0;          // calls per step of the loop found; 0: none
  uint32_t loop_steps = 0;           // steps of that loop
  std::string Label() const;         // "comm 0x... (name)"
};

struct PlanUnit {
  std::vector<uint32_t> calls;  // PlanCall indices, in recorded issue order
  bool group = false;           // issue inside ncclGroupStart/End
  uint32_t actor = 0;
  int64_t time_ns = 0;  // when the unit was issued (its first call)
  uint32_t tid = 0;
  uint64_t stream = 0;  // stream of its first call
};

struct PlanActor {
  uint32_t file = 0;
  int device = 0;
  std::string label;              // "host-1234.ncclrr device 1"
  std::vector<uint32_t> units;    // recorded order
  std::vector<uint64_t> streams;  // distinct recorded stream values, first-use order
};

struct ReplayPlan {
  const analysis::TraceModel* model = nullptr;  // outlives the plan
  std::vector<PlanCall> calls;
  std::vector<PlanUnit> units;
  std::vector<PlanComm> comms;
  std::vector<PlanActor> actors;
  uint32_t steps = 0;  // of the longest loop found on any communicator (loop_steps.h); 0: none
  int32_t recorded_nccl_version = 0;
  std::vector<std::string> notes;  // what the replay cannot reproduce exactly
  // Calls left out because some rank's file may lack their counterparts (an incomplete trace:
  // flight-recorder windows, torn or unclosed files, dropped records; analysis/coverage.h).
  uint64_t left_out_calls = 0;
};

// Fails (with what to do) when the trace cannot be replayed: no calls, a communicator rank whose
// process file is missing, inconsistent communicator records, no call every rank's file holds.
StatusOr<ReplayPlan> BuildPlan(const analysis::TraceModel& model);

// "AllReduce(1024 float32, sum)"
std::string DescribeCall(const ReplayPlan& plan, const PlanCall& c);
// "step 5, call 2" (the communicator's loop, loop_steps.h), "tensor 1, occurrence 3" (where no
// loop was found), "message 2 from rank 0 to rank 1" (send/recv).
std::string DescribeLogical(const ReplayPlan& plan, const PlanCall& c);
std::string DescribeLogical(const ReplayPlan& plan, uint32_t comm, uint32_t logical);
// The loop step a collective belongs to, as DescribeLogical names it; kNone when unknown.
uint32_t StepOf(const ReplayPlan& plan, const PlanCall& c);

}  // namespace ncclrr::replay
