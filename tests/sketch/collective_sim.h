#pragma once
// A host simulation of NCCL collectives for the identity tests: per-rank byte buffers laid out
// as nccl.h defines them (in place or not), reduced the way NCCL computes (inputs scaled by the
// dtype-rounded PreMulSum/avg scalar, then accumulated in rank order with rounding to the
// datatype after every step — or, for narrow floats, in fp32 with one final rounding), and
// sketched exactly as the interposer would: send before the call, recv after it (plan.h).
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "ncclrr/sketch/identity.h"
#include "ncclrr/trace/records.h"

namespace ncclrr::sketch::test {

struct SimOptions {
  Api api = Api::kAllReduce;
  uint8_t dtype = uint8_t(Dtype::kFloat32);
  int nranks = 2;
  int root = 0;
  int32_t op = int32_t(RedOp::kSum);  // >= 5: PreMulSum with `scalars`
  std::vector<double> scalars;        // per rank, PreMulSum only
  bool in_place = false;
  bool fp32_accumulate = false;  // narrow floats summed in fp32, rounded once
  uint64_t count = 1000;         // the count argument (per-rank count for gather-like APIs)
  // Rotate the order in which ranks are added per output element (ring-like orders).
  bool rotate_order = false;
};

// Inputs: values for rank r's send buffer (send_elems of them), in double (encoded into dtype).
using InputFn = std::function<void(int rank, std::vector<double>& values)>;
// Called between the collective and the recv sketch: may corrupt rank r's recv buffer.
using CorruptFn = std::function<void(int rank, uint8_t* recv, uint64_t recv_elems)>;

struct SimResult {
  CollectiveSketches sketches;
  std::vector<std::vector<uint8_t>> send_after;  // each rank's send view after the call
};

uint64_t SendElems(const SimOptions& o, int rank);
uint64_t RecvElems(const SimOptions& o, int rank);

SimResult Simulate(const SimOptions& o, const InputFn& inputs, const CorruptFn& corrupt = {});

// Normal(0, scale) values; integers: uniform over the type's full range.
InputFn RandomInputs(uint8_t dtype, uint64_t seed, double scale = 1.0);

bool IsRootedOutputOnly(Api api);  // Reduce, Gather: only the root receives

}  // namespace ncclrr::sketch::test
