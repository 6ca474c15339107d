// The scenarios: small training-like loops, each with one of the bug classes ncclrr explains.
// A scenario is a per-step, per-rank list of calls; the correct result of every tensor is fixed by
// its role, so the runner can count what the buggy call order got wrong.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include <nccl.h>

namespace ncclrr::example {

class Backend;
struct Options;

enum class Role {
  kReduce,  // gradient: allreduce(sum) of every rank's tensor
  kBcast,   // parameters: broadcast from rank 0
  kRing,    // activations: rank r receives rank r-1's tensor
};

struct TensorSpec {
  Role role;
  size_t count;  // floats
};

struct Call {
  enum Op { kAllReduce, kBroadcast, kSend, kRecv } op;
  int tensor;
  size_t count;
  ncclDataType_t dtype = ncclFloat;
  int root = 0;  // broadcast root, or peer for send/recv
  int comm = 0;
};

struct Scenario {
  const char* name;
  const char* what;
  std::vector<TensorSpec> tensors;
  int comms = 1;
  int race_rank = -1;  // writes tensor 0's send buffer from a second stream after issuing
  std::vector<Call> (*plan)(int step, int rank, int nranks);
  // A scenario with its own loop (sweep) instead of `tensors` and `plan`: the exit code.
  int (*run)(const Options& opt, Backend& be) = nullptr;
  // A fault the host NCCL injects (NCCLRR_HOST_FLIP_OUTPUT, unless already set): "RANK:SEQ".
  // Real NCCL has no such knob: there the scenario runs clean.
  const char* host_flip_output = nullptr;
};

const Scenario* FindScenario(const std::string& name);
std::string ScenarioNames();

// Every rank's data: a signal shared by all ranks plus per-rank noise (like data-parallel
// gradients), small integers so every correct sum is exact in float.
float InputValue(int tensor, int step, int rank, size_t i);
// What a correct program leaves in tensor t's receive buffer on `rank`.
float ExpectedValue(const TensorSpec& t, int tensor, int step, int rank, int nranks, size_t i);

}  // namespace ncclrr::example
