#pragma once
// The CUDA driver entry points the event-pair source needs, declared by hand (handles are opaque
// pointers, results ints; 0 is CUDA_SUCCESS) and found with dlsym in the libcuda.so.1 the process
// already loaded: a job that runs NCCL on a GPU has it; a process without it has no GPU work to
// time.
#include <string>

#include "ncclrr/base/status.h"

namespace ncclrr::gputiming::cuda {

using Result = int;
using Context = void*;
using Stream = void*;
using Event = void*;
inline constexpr Result kSuccess = 0;
inline constexpr Result kNotReady = 600;            // CUDA_ERROR_NOT_READY
inline constexpr unsigned kEventDefault = 0;        // CU_EVENT_DEFAULT: timing enabled
inline constexpr unsigned kEventDisableTiming = 2;  // CU_EVENT_DISABLE_TIMING: cheaper to record
inline constexpr unsigned kStreamNonBlocking = 1;   // CU_STREAM_NON_BLOCKING
inline constexpr int kCaptureModeRelaxed = 2;       // CU_STREAM_CAPTURE_MODE_RELAXED

struct Api {
  Result (*EventCreate)(Event*, unsigned) = nullptr;
  Result (*EventRecord)(Event, Stream) = nullptr;
  Result (*EventQuery)(Event) = nullptr;
  Result (*EventSynchronize)(Event) = nullptr;
  Result (*EventElapsedTime)(float*, Event, Event) = nullptr;
  Result (*EventDestroy)(Event) = nullptr;
  Result (*StreamGetCtx)(Stream, Context*) = nullptr;
  Result (*StreamCreate)(Stream*, unsigned) = nullptr;
  Result (*CtxPushCurrent)(Context) = nullptr;
  Result (*CtxPopCurrent)(Context*) = nullptr;
  Result (*CtxGetCurrent)(Context*) = nullptr;
  Result (*ThreadExchangeStreamCaptureMode)(int*) = nullptr;
  std::string path;
};

// `explicit_path` (tests use a stand-in driver) or the loaded libcuda.so.1; never loads a new one.
StatusOr<Api> LoadApi(const std::string& explicit_path);

}  // namespace ncclrr::gputiming::cuda
