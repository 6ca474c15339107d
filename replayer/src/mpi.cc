#include "mpi.h"

namespace ncclrr::replay {

StatusOr<ReplayReport> ReplayUnderMpi(const analysis::TraceModel&, const ReplayOptions&) {
  return Unsupported("--mpi is not implemented yet");
}

}  // namespace ncclrr::replay
