#pragma once
// Factories of the built-in checkers (one file each). The data checks add theirs here.
#include <memory>

#include "ncclrr/analysis/check.h"

namespace ncclrr::analysis {

std::shared_ptr<Checker> MakeTraceNotesChecker();   // trace_incomplete, records_dropped
std::shared_ptr<Checker> MakeSequenceChecker();     // op/count/dtype/redop/root, order_swap,
                                                    // suspected_swap (metadata)
std::shared_ptr<Checker> MakeMissingCallChecker();  // missing_call
std::shared_ptr<Checker> MakeP2pChecker();          // p2p_mismatch
std::shared_ptr<Checker> MakeCrossCommChecker();    // cross_comm_order
std::shared_ptr<Checker> MakeGraphChecker();        // graph_capture_mismatch
std::shared_ptr<Checker> MakeLifecycleChecker();    // lifecycle_error
std::shared_ptr<Checker> MakeNcclErrorChecker();    // nccl_error

}  // namespace ncclrr::analysis
