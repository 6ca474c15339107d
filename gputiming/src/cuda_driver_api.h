#pragma once
// The CUDA driver as the event-pair source uses it: base's one driver table
// (ncclrr/base/cuda_driver.h), taken from the libcuda.so.1 the process already loaded: a job
// that runs NCCL on a GPU has it; a process without it has no GPU work to time.
#include <string>

#include "ncclrr/base/cuda_driver.h"
#include "ncclrr/base/status.h"

namespace ncclrr::gputiming {

// `explicit_path` (tests use a stand-in driver) or the loaded libcuda.so.1; never loads a new
// one. Unsupported when there is none or it lacks what event timing calls.
StatusOr<cuda::Driver> LoadEventDriver(const std::string& explicit_path);

}  // namespace ncclrr::gputiming
