// The `sweep` scenario: nccl-tests' sweep on verifiable data, every collective (AllReduce,
// Reduce and ReduceScatter with every reduction op, Broadcast, AllGather, AlltoAll, Gather,
// Scatter), AlltoAll and a ring built from grouped Send/Recv, every datatype, in place and out of
// place, then AMP-style half/bfloat16/float reductions whose data holds Inf and NaN and overflows.
// Step k runs the whole sweep at the k-th element count of 1, 1000, 4097, 65537, 1048579 (over
// 65537 elements: float, half and bfloat16 with sum and avg only, to stay quick). A correct
// program: `ncclrr record --sketch` of it must give no finding in `ncclrr check`.
#pragma once

#include "backend.h"
#include "runner.h"

namespace ncclrr::example {

// The scenario entry (its `run` is the sweep), found by name by ncclrr-example's main.
const Scenario& SweepScenario();

}  // namespace ncclrr::example
