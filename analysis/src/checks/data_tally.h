#pragma once
// What the data checks could not check, counted per reason and turned into notes: max/min/prod
// and integer avg are not linear (checked from captured data only), outputs holding NaN/Inf
// consistent with the inputs (AMP overflow steps) have no comparable projections, overflowed
// sketches, and calls some rank has no sketch of.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "ncclrr/analysis/check.h"
#include "ncclrr/sketch/identity.h"

namespace ncclrr::analysis {

class DataTally {
 public:
  // One call (collective position or p2p pair) with `v` as the verdict of rank `rank` of comm
  // `comm`; `what` names the call ("AllReduce max float32"). A call counts once per reason.
  void Add(sketch::Verdict v, uint64_t call_key, uint64_t comm, int rank, const std::string& what);
  void Checked() { ++checked_; }
  // A send whose buffer a receive of its own group writes: not race-checked (see CheckP2p).
  void SendIntoOwnReceive(uint64_t comm, int rank) {
    ++send_into_receive_;
    send_into_receive_ranks_.insert({comm, rank});
  }
  void EmitNotes(FindingSink& sink) const;

 private:
  struct Reason {
    std::set<uint64_t> calls;
    std::set<std::pair<uint64_t, int>> ranks;
    std::map<std::string, uint64_t> what;  // per call kind, for the message
  };
  std::map<sketch::Verdict, Reason> reasons_;
  uint64_t checked_ = 0;
  uint64_t send_into_receive_ = 0;
  std::set<std::pair<uint64_t, int>> send_into_receive_ranks_;
};

}  // namespace ncclrr::analysis
