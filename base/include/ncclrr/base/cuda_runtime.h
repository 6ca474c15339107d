#pragma once
// The CUDA runtime as ncclrr's offline programs use it (replay on real NCCL, ncclrr-example on a
// GPU), through dlopen: nothing links CUDA. One table for both. Not for code inside the user's
// job, which uses the driver (cuda_driver.h).
#include <cstddef>
#include <string>

#include "ncclrr/base/status.h"

namespace ncclrr::cudart {

using Error = int;                   // cudaError_t; 0 is cudaSuccess
using Stream = struct CUstream_st*;  // cudaStream_t
using Event = struct CUevent_st*;    // cudaEvent_t

inline constexpr Error kSuccess = 0;
inline constexpr Error kNotReady = 600;
inline constexpr int kHostToDevice = 1, kDeviceToHost = 2, kDeviceToDevice = 3;
inline constexpr unsigned kStreamNonBlocking = 1;
inline constexpr unsigned kEventDisableTiming = 2;

struct Runtime {
  std::string path;
  Error (*SetDevice)(int) = nullptr;
  Error (*GetDeviceCount)(int*) = nullptr;
  Error (*Malloc)(void**, size_t) = nullptr;
  Error (*Free)(void*) = nullptr;
  Error (*Memcpy)(void*, const void*, size_t, int) = nullptr;
  Error (*MemcpyAsync)(void*, const void*, size_t, int, Stream) = nullptr;
  Error (*StreamCreate)(Stream*) = nullptr;
  Error (*StreamCreateWithFlags)(Stream*, unsigned) = nullptr;
  Error (*StreamDestroy)(Stream) = nullptr;
  Error (*StreamSynchronize)(Stream) = nullptr;
  Error (*StreamQuery)(Stream) = nullptr;
  Error (*StreamWaitEvent)(Stream, Event, unsigned) = nullptr;
  Error (*EventCreateWithFlags)(Event*, unsigned) = nullptr;
  Error (*EventRecord)(Event, Stream) = nullptr;
  Error (*EventQuery)(Event) = nullptr;
  Error (*EventDestroy)(Event) = nullptr;
  Error (*LaunchHostFunc)(Stream, void (*)(void*), void*) = nullptr;
  const char* (*GetErrorString)(Error) = nullptr;
};

// Opens libcudart (.13, .12, the toolkit's, then the nvidia-cuda-runtime wheel of the active
// Python environment) with RTLD_GLOBAL (NCCL loaded later finds the same runtime) and resolves
// every entry point above. NotFound, saying where it looked, when there is none; Unsupported,
// naming what is missing, when it lacks an entry point.
StatusOr<Runtime> OpenRuntime();

}  // namespace ncclrr::cudart
