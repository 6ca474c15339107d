#pragma once
// Traces with data sketches for the data checks' tests (wrong_sum, buffer_race, data-based
// suspected_swap, notes). Every sketch is computed by the sketch library's host implementation
// from real float buffers, laid out as the interposer sketches them (plan.h): the send buffer
// before the call (with the race twin when out of place), its race sample re-read after the
// call, the recv buffer after it. The reductions are computed in float, rank by rank, as NCCL
// would.
#include <cstdint>
#include <functional>
#include <vector>

#include "scenarios.h"

namespace ncclrr::testing {

// Sketches of one rank's call from its buffers (empty vectors: that side is not sketched).
std::vector<SketchData> SketchCallBuffers(Api api, int nranks, int rank, bool in_place,
                                          const std::vector<float>& send,
                                          const std::vector<float>& send_after,
                                          const std::vector<float>& recv);

// Gradient-like data: one true gradient per (tensor, step) that every rank shares, plus the
// rank's own noise (data-parallel gradients of one tensor correlate across ranks).
std::vector<float> Gradient(int tensor, int step, int rank, size_t n, double noise = 0.5);

// One training step of allreduces with sketches: at position i, process p issues the buffer of
// tensor `tensor_at(p, i)` holding the data of tensor `data_at(p, i)` (default: the same).
struct DataStep {
  std::vector<uint64_t> counts;  // per tensor (tensor ids are 1-based: counts[t - 1])
  int positions = 0;             // calls per rank in the step; 0: one per tensor
  std::function<int(int p, int pos)> tensor_at;
  std::function<int(int p, int pos)> data_at;
  std::function<int32_t(int pos)> op;  // ncclRedOp_t per position (default sum; >= 5 PreMulSum)
  // PreMulSum: the scalar rank p's op multiplies by, and the one its call record states.
  std::function<double(int p)> scalar;
  std::function<double(int p)> recorded_scalar;
  // Change a rank's input before the call (NaN/Inf steps).
  std::function<void(int p, int pos, std::vector<float>& send)> input;
  // A racing writer: what NCCL reads instead of the sketched send buffer (return true when it
  // changed it), and `after`, what the buffer holds when the after-sample is taken.
  std::function<bool(int p, int pos, std::vector<float>& read, std::vector<float>& after)> race;
  // Corrupt a rank's output after the reduction.
  std::function<void(int p, int pos, std::vector<float>& recv)> corrupt;
  double noise = 0.5;
  bool independent = false;  // every rank's data unrelated to the others' (no correlation)
  bool sketched = true;      // false: the calls carry no sketches (plain `record`)
};
void AddDataStep(ScriptBuilder& b, int comm, int step, const DataStep& d);

// The golden scenarios of the data checks (tests/analysis/golden/sketch_*.{txt,json}).
const std::vector<Scenario>& SketchScenarios();

}  // namespace ncclrr::testing
