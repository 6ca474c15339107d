#pragma once
// The CUDA driver API as ncclrr uses it, reached through dlopen so that nothing links CUDA (the
// code that runs inside a job may be in a process without a GPU, or with a driver of another
// version). Types and constants are the driver's stable ABI, repeated here so that no CUDA header
// is needed to build. One table for every user: event timing (gputiming), GPU sketches
// (sketch/device) and the interposer's graph and device queries.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "ncclrr/base/status.h"

namespace ncclrr::cuda {

using Result = int;
using Device = int;
using DevicePtr = unsigned long long;
using Context = struct CUctx_st*;
using Module = struct CUmod_st*;
using Function = struct CUfunc_st*;
using Stream = struct CUstream_st*;
using Event = struct CUevent_st*;

inline constexpr Result kSuccess = 0;
inline constexpr Result kErrorNoDevice = 100;
inline constexpr Result kErrorNoBinaryForGpu = 209;
inline constexpr Result kNotReady = 600;
inline constexpr unsigned kHostAllocPortable = 0x01;
inline constexpr unsigned kHostAllocDeviceMap = 0x02;
inline constexpr unsigned kStreamNonBlocking = 0x1;
inline constexpr unsigned kEventDefault = 0;          // timing enabled
inline constexpr unsigned kEventDisableTiming = 0x2;  // cheaper to record
inline constexpr int kCaptureModeRelaxed = 2;         // CU_STREAM_CAPTURE_MODE_RELAXED
inline constexpr int kCaptureStatusNone = 0;          // CU_STREAM_CAPTURE_STATUS_*
inline constexpr int kCaptureStatusActive = 1;
inline constexpr int kAttrComputeCapabilityMajor = 75;  // CU_DEVICE_ATTRIBUTE_*
inline constexpr int kAttrComputeCapabilityMinor = 76;
inline constexpr int kAttrMultiprocessorCount = 16;

// Every entry point any part of ncclrr calls. A driver may lack some (old drivers): they stay
// null, and each user checks the ones it needs (MissingOf).
struct Driver {
  void* handle = nullptr;
  std::string path;  // where the library was found
  Result (*Init)(unsigned) = nullptr;
  Result (*DriverGetVersion)(int*) = nullptr;
  Result (*DeviceGetCount)(int*) = nullptr;
  Result (*DeviceGetAttribute)(int*, int, Device) = nullptr;
  Result (*CtxGetCurrent)(Context*) = nullptr;
  Result (*CtxGetDevice)(Device*) = nullptr;
  Result (*CtxPushCurrent)(Context) = nullptr;
  Result (*CtxPopCurrent)(Context*) = nullptr;
  Result (*StreamGetCtx)(Stream, Context*) = nullptr;
  Result (*StreamIsCapturing)(Stream, int*) = nullptr;
  Result (*StreamCreate)(Stream*, unsigned) = nullptr;
  Result (*StreamSynchronize)(Stream) = nullptr;
  Result (*StreamDestroy)(Stream) = nullptr;
  Result (*StreamWaitEvent)(Stream, Event, unsigned) = nullptr;
  Result (*EventCreate)(Event*, unsigned) = nullptr;
  Result (*EventRecord)(Event, Stream) = nullptr;
  Result (*EventQuery)(Event) = nullptr;
  Result (*EventSynchronize)(Event) = nullptr;
  Result (*EventElapsedTime)(float*, Event, Event) = nullptr;
  Result (*EventDestroy)(Event) = nullptr;
  Result (*ModuleLoadData)(Module*, const void*) = nullptr;
  Result (*ModuleUnload)(Module) = nullptr;
  Result (*ModuleGetFunction)(Function*, Module, const char*) = nullptr;
  Result (*LaunchKernel)(Function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                         unsigned, Stream, void**, void**) = nullptr;
  Result (*MemAlloc)(DevicePtr*, size_t) = nullptr;
  Result (*MemFree)(DevicePtr) = nullptr;
  Result (*MemsetD8Async)(DevicePtr, unsigned char, size_t, Stream) = nullptr;
  Result (*MemcpyAsync)(DevicePtr, DevicePtr, size_t, Stream) = nullptr;
  Result (*StreamWriteValue32)(Stream, DevicePtr, uint32_t, unsigned) = nullptr;
  Result (*MemHostAlloc)(void**, size_t, unsigned) = nullptr;
  Result (*MemFreeHost)(void*) = nullptr;
  Result (*MemHostGetDevicePointer)(DevicePtr*, void*, unsigned) = nullptr;
  Result (*ThreadExchangeStreamCaptureMode)(int*) = nullptr;
  Result (*GetErrorString)(Result, const char**) = nullptr;

  // "what: CUDA error 209 (no kernel image is available ...)".
  std::string Error(Result r, const std::string& what) const;
};

// Opens the driver and resolves every entry point it has (versioned names first: the plain ones
// are the old ABI where both exist). An empty `path` takes the libcuda.so.1 the process already
// loaded and never loads one (`may_load` is then ignored); otherwise `path` is opened, and
// loaded when `may_load`. Fails only when no library could be opened; the message says what was
// tried ("none of libcuda.so.1 is loaded in this process", "tried: PATH: why").
StatusOr<Driver> OpenDriver(const std::string& path, bool may_load);

// The names of the entry points among `wanted` (pointers of `d`, with their names) that are
// null, separated by ", "; empty when all are there.
struct Wanted {
  const void* fn;
  const char* name;
};
std::string MissingOf(std::initializer_list<Wanted> wanted);
#define NCCLRR_CUDA_WANT(d, field) \
  ::ncclrr::cuda::Wanted { reinterpret_cast<const void*>((d).field), "cu" #field }

// Swaps the calling thread to relaxed stream-capture mode for its lifetime, so that work ncclrr
// does while the user's stream is being captured (allocations, events, launches on its own
// streams) does not invalidate the user's capture. Does nothing without the entry point.
class RelaxedCaptureScope {
 public:
  explicit RelaxedCaptureScope(const Driver& d);
  ~RelaxedCaptureScope();
  RelaxedCaptureScope(const RelaxedCaptureScope&) = delete;
  RelaxedCaptureScope& operator=(const RelaxedCaptureScope&) = delete;

 private:
  const Driver& d_;
  int saved_ = kCaptureModeRelaxed;
  bool swapped_ = false;
};

}  // namespace ncclrr::cuda
