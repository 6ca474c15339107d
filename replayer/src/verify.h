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

// `out`: a host copy of the call's receive buffer (c.recv_elems elements of c.dtype).
CallCheck CheckCall(const ReplayPlan& plan, const DataSource& data, const PlanCall& c,
                    const void* out);

}  // namespace ncclrr::replay
