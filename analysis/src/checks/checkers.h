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
std::shared_ptr<Checker> MakeStragglerChecker();    // stragglers (notes, from GPU times)
std::shared_ptr<Checker> MakeCaptureChecker();      // wrong_sum, data_unchecked (captured buffers)
std::shared_ptr<Checker> MakeDataChecker();  // wrong_sum, buffer_race, data_unchecked (sketches)
std::shared_ptr<Checker> MakeDataOrderChecker();  // suspected_swap told by the data alone
// The pattern prefix of the data-order checker's findings; their calls are the reference's at
// seq and other, then the rank's at seq and other.
inline constexpr std::string_view kDataSwapPattern = "data-swap:";

}  // namespace ncclrr::analysis

namespace ncclrr::analysis {

// A finding about communicator `ci` (kind, comm id and name filled in).
inline Finding FindingOn(FindingKind kind, const TraceModel& m, size_t ci) {
  Finding f;
  f.kind = kind;
  f.comm_index = ci;
  f.comm = m.comms()[ci].id;
  f.comm_name = m.comms()[ci].name;
  return f;
}

// Remembers finding `f` as a mismatch on its communicator (for the errors that follow it).
inline void NoteMismatch(CheckContext& ctx, const Finding& f) {
  ctx.NoteMismatch(f.comm_index, f.first_time,
                   std::string(FindingKindName(f.kind)) +
                       (f.seq ? " at seq " + std::to_string(*f.seq) : std::string()));
}

}  // namespace ncclrr::analysis
