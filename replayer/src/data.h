#pragma once
// Input data of a replay. Every rank's input of a logical call is a function of (seed, logical
// call, rank, element) -- like nccl-tests' verifiable data -- or, with --data captured, the bytes
// the recording captured. The same function fills the send buffers and feeds the reference, so
// the reference can combine any rank's input without reading another rank's memory.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "ncclrr/replay/options.h"
#include "plan.h"

namespace ncclrr::replay {

// Synthetic values: small integers, exact in every datatype and in sums over many ranks
// (ranges per datatype and op; products use {-2, -1, 1, 2}).
double SyntheticValue(uint64_t seed, uint64_t key, int rank, uint64_t index, uint8_t dtype,
                      bool product);

class DataSource {
 public:
  // Loads what --data captured needs; fails when the trace captured nothing.
  static StatusOr<std::unique_ptr<DataSource>> Create(const ReplayPlan& plan, DataMode mode,
                                                      uint64_t seed);

  // Key of the input a call contributes (its logical call's, or for a send its message's).
  uint64_t InputKey(const PlanCall& c) const;
  // Element `index` of rank `rank`'s input to the logical call keyed `key`, as `dtype` would hold
  // it. `call` is the rank's own call for it when it has one (captured data lives there).
  double Input(uint64_t key, int rank, uint64_t index, uint8_t dtype, bool product,
               const PlanCall* call) const;
  // Fills `send_elems` elements of `c`'s send buffer (host memory of c's dtype).
  void FillSend(const PlanCall& c, void* host) const;

  // Captured output of the call (RecvAfter), or null.
  const std::vector<char>* CapturedOutput(const PlanCall& c) const;
  bool captured() const { return mode_ == DataMode::kCaptured; }
  uint64_t captured_inputs() const { return captured_inputs_.size(); }
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  DataSource(const ReplayPlan& plan, DataMode mode, uint64_t seed)
      : plan_(plan), mode_(mode), seed_(seed) {}
  Status LoadCaptures();
  const std::vector<char>* Bytes(uint32_t call, uint8_t which) const;

  const ReplayPlan& plan_;
  DataMode mode_;
  uint64_t seed_;
  // (plan call index, which) -> captured bytes, loaded once.
  std::map<std::pair<uint32_t, uint8_t>, std::vector<char>> captures_;
  std::map<uint32_t, bool> captured_inputs_;  // plan call -> its input is captured
  std::vector<std::string> notes_;
};

}  // namespace ncclrr::replay
