#include "ncclrr/base/cuda_driver.h"

#include "ncclrr/base/dl.h"

namespace ncclrr::cuda {
namespace {

// The versioned name first: the unversioned symbol is the old ABI where both exist.
template <typename F>
void Resolve(void* h, const char* versioned, const char* plain, F* fn) {
  if (versioned == nullptr || !dl::LoadSymbol(h, versioned, fn)) dl::LoadSymbol(h, plain, fn);
}

}  // namespace

std::string Driver::Error(Result r, const std::string& what) const {
  const char* text = nullptr;
  if (GetErrorString) GetErrorString(r, &text);
  return what + ": CUDA error " + std::to_string(r) + " (" + (text ? text : "unknown") + ")";
}

StatusOr<Driver> OpenDriver(const std::string& path, bool may_load) {
  std::string tried;
  const dl::OpenedLibrary lib = path.empty() ? dl::OpenFirst({"libcuda.so.1"}, false, &tried)
                                             : dl::OpenFirst({path}, may_load, &tried);
  if (lib.handle == nullptr) return Unsupported(tried);
  Driver d;
  d.handle = lib.handle;
  d.path = lib.path;
  void* h = lib.handle;
  Resolve(h, nullptr, "cuInit", &d.Init);
  Resolve(h, nullptr, "cuDriverGetVersion", &d.DriverGetVersion);
  Resolve(h, nullptr, "cuDeviceGetCount", &d.DeviceGetCount);
  Resolve(h, nullptr, "cuDeviceGetAttribute", &d.DeviceGetAttribute);
  Resolve(h, nullptr, "cuCtxGetCurrent", &d.CtxGetCurrent);
  Resolve(h, nullptr, "cuCtxGetDevice", &d.CtxGetDevice);
  Resolve(h, "cuCtxPushCurrent_v2", "cuCtxPushCurrent", &d.CtxPushCurrent);
  Resolve(h, "cuCtxPopCurrent_v2", "cuCtxPopCurrent", &d.CtxPopCurrent);
  Resolve(h, nullptr, "cuStreamGetCtx", &d.StreamGetCtx);
  Resolve(h, nullptr, "cuStreamIsCapturing", &d.StreamIsCapturing);
  Resolve(h, nullptr, "cuStreamCreate", &d.StreamCreate);
  Resolve(h, nullptr, "cuStreamSynchronize", &d.StreamSynchronize);
  Resolve(h, "cuStreamDestroy_v2", "cuStreamDestroy", &d.StreamDestroy);
  Resolve(h, nullptr, "cuStreamWaitEvent", &d.StreamWaitEvent);
  Resolve(h, nullptr, "cuEventCreate", &d.EventCreate);
  Resolve(h, nullptr, "cuEventRecord", &d.EventRecord);
  Resolve(h, nullptr, "cuEventQuery", &d.EventQuery);
  Resolve(h, nullptr, "cuEventSynchronize", &d.EventSynchronize);
  Resolve(h, "cuEventElapsedTime_v2", "cuEventElapsedTime", &d.EventElapsedTime);
  Resolve(h, "cuEventDestroy_v2", "cuEventDestroy", &d.EventDestroy);
  Resolve(h, nullptr, "cuModuleLoadData", &d.ModuleLoadData);
  Resolve(h, nullptr, "cuModuleUnload", &d.ModuleUnload);
  Resolve(h, nullptr, "cuModuleGetFunction", &d.ModuleGetFunction);
  Resolve(h, nullptr, "cuLaunchKernel", &d.LaunchKernel);
  Resolve(h, "cuMemAlloc_v2", "cuMemAlloc", &d.MemAlloc);
  Resolve(h, "cuMemFree_v2", "cuMemFree", &d.MemFree);
  Resolve(h, nullptr, "cuMemsetD8Async", &d.MemsetD8Async);
  Resolve(h, nullptr, "cuMemcpyAsync", &d.MemcpyAsync);
  Resolve(h, "cuStreamWriteValue32_v2", "cuStreamWriteValue32", &d.StreamWriteValue32);
  Resolve(h, nullptr, "cuMemHostAlloc", &d.MemHostAlloc);
  Resolve(h, nullptr, "cuMemFreeHost", &d.MemFreeHost);
  Resolve(h, "cuMemHostGetDevicePointer_v2", "cuMemHostGetDevicePointer",
          &d.MemHostGetDevicePointer);
  Resolve(h, nullptr, "cuThreadExchangeStreamCaptureMode", &d.ThreadExchangeStreamCaptureMode);
  Resolve(h, nullptr, "cuGetErrorString", &d.GetErrorString);
  return d;
}

std::string MissingOf(std::initializer_list<Wanted> wanted) {
  std::string missing;
  for (const Wanted& w : wanted)
    if (w.fn == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(w.name);
  return missing;
}

RelaxedCaptureScope::RelaxedCaptureScope(const Driver& d) : d_(d) {
  if (d_.ThreadExchangeStreamCaptureMode != nullptr)
    swapped_ = d_.ThreadExchangeStreamCaptureMode(&saved_) == kSuccess;
}

RelaxedCaptureScope::~RelaxedCaptureScope() {
  if (swapped_) d_.ThreadExchangeStreamCaptureMode(&saved_);
}

}  // namespace ncclrr::cuda
