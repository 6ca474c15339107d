#pragma once
// Verification of one replayed call against an fp64 host reference of what its LOGICAL call
// should produce: every rank's input to the same logical call (by logical identity, not by the
// position NCCL paired), combined with the arguments most ranks gave it. A call NCCL paired with
// another rank's different tensor therefore shows up as wrong elements, and so does the tail of
// a count mismatch or the bytes of a datatype mismatch.
//
// Floats compare with a rounding tolerance, (N + 2) * u * sum|inputs| + 2u|reference| with u the
// type's unit roundoff (synthetic inputs are small integers, so sums are exact in most types);
// integers compare exactly in the type's wrapping width (integer avg: +-1).
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "data.h"
#include "plan.h"

namespace ncclrr::replay {

struct CallCheck {
  uint64_t checked = 0;  // output elements compared
  uint64_t wrong = 0;
  uint64_t first_wrong = 0;
  double got = 0, expected = 0;
  int reproduced = -1;  // captured data: 1 output equals the recorded one, 0 differs, -1 unknown
};

// The expected output of a logical allreduce is the same on every rank and costs one term per
// rank per element. When every rank is replayed in this process it is computed once, by the
// first rank to verify, and shared: verifying an n-rank allreduce then costs n terms per element
// instead of n² (64 ranks spent ~90 % of a replay recomputing it). An entry goes when the last
// of its ranks has verified; one larger than kMaxBytes is computed by each rank instead.
class SharedReferences {
 public:
  struct Entry {
    std::once_flag once;
    std::vector<double> value, tol;
    int left = 0;  // ranks of the logical call still to verify
  };
  static constexpr uint64_t kMaxBytes = 256ull << 20;

  explicit SharedReferences(bool enabled) : enabled_(enabled) {}
  // The entry of c's logical call, or null where c's reference is computed on its own.
  std::shared_ptr<Entry> Acquire(const ReplayPlan& plan, const PlanCall& c);
  void Release(const PlanCall& c);

 private:
  const bool enabled_;
  std::mutex mu_;
  std::map<std::pair<uint32_t, uint32_t>, std::shared_ptr<Entry>> entries_;  // (comm, logical)
};

// `out`: a host copy of the call's receive buffer (c.recv_elems elements of c.dtype).
CallCheck CheckCall(const ReplayPlan& plan, const DataSource& data, const PlanCall& c,
                    const void* out, SharedReferences* shared = nullptr);

}  // namespace ncclrr::replay
