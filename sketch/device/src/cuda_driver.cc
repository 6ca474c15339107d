#include "cuda_driver.h"

#include <dlfcn.h>

namespace ncclrr::sketch::cu {
namespace {

template <typename F>
bool Resolve(void* handle, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(handle, name));
  return out != nullptr;
}

}  // namespace

std::string Driver::Error(CUresult r, const std::string& what) const {
  const char* text = nullptr;
  if (GetErrorString) GetErrorString(r, &text);
  return what + ": CUDA error " + std::to_string(r) + " (" + (text ? text : "unknown") + ")";
}

StatusOr<Driver> LoadDriver(const std::string& path) {
  Driver d;
  d.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!d.handle) {
    const char* err = dlerror();
    return Unsupported("sketch: no CUDA driver (" + std::string(err ? err : path) +
                       "); GPU sketches need libcuda.so.1 from the NVIDIA driver. Host "
                       "buffers can still be sketched (SketchHost)");
  }
  // Versioned names where the driver has them: the plain ones are the pre-3.2 ABI.
  const bool ok =
      Resolve(d.handle, "cuInit", d.Init) &&
      Resolve(d.handle, "cuDriverGetVersion", d.DriverGetVersion) &&
      Resolve(d.handle, "cuDeviceGetCount", d.DeviceGetCount) &&
      Resolve(d.handle, "cuDeviceGetAttribute", d.DeviceGetAttribute) &&
      Resolve(d.handle, "cuStreamGetCtx", d.StreamGetCtx) &&
      Resolve(d.handle, "cuStreamIsCapturing", d.StreamIsCapturing) &&
      Resolve(d.handle, "cuCtxPushCurrent_v2", d.CtxPushCurrent) &&
      Resolve(d.handle, "cuCtxPopCurrent_v2", d.CtxPopCurrent) &&
      Resolve(d.handle, "cuCtxGetDevice", d.CtxGetDevice) &&
      Resolve(d.handle, "cuModuleLoadData", d.ModuleLoadData) &&
      Resolve(d.handle, "cuModuleUnload", d.ModuleUnload) &&
      Resolve(d.handle, "cuModuleGetFunction", d.ModuleGetFunction) &&
      Resolve(d.handle, "cuLaunchKernel", d.LaunchKernel) &&
      Resolve(d.handle, "cuMemAlloc_v2", d.MemAlloc) &&
      Resolve(d.handle, "cuMemFree_v2", d.MemFree) &&
      Resolve(d.handle, "cuMemsetD8Async", d.MemsetD8Async) &&
      Resolve(d.handle, "cuStreamCreate", d.StreamCreate) &&
      Resolve(d.handle, "cuStreamSynchronize", d.StreamSynchronize) &&
      Resolve(d.handle, "cuStreamDestroy_v2", d.StreamDestroy) &&
      Resolve(d.handle, "cuEventCreate", d.EventCreate) &&
      Resolve(d.handle, "cuEventRecord", d.EventRecord) &&
      Resolve(d.handle, "cuStreamWaitEvent", d.StreamWaitEvent) &&
      Resolve(d.handle, "cuEventDestroy_v2", d.EventDestroy) &&
      Resolve(d.handle, "cuMemHostAlloc", d.MemHostAlloc) &&
      Resolve(d.handle, "cuMemFreeHost", d.MemFreeHost) &&
      Resolve(d.handle, "cuMemHostGetDevicePointer_v2", d.MemHostGetDevicePointer) &&
      Resolve(d.handle, "cuThreadExchangeStreamCaptureMode", d.ThreadExchangeStreamCaptureMode) &&
      Resolve(d.handle, "cuGetErrorString", d.GetErrorString);
  if (!ok) {
    const char* err = dlerror();
    return Unsupported("sketch: " + path + " lacks a driver entry point sketches need (" +
                       std::string(err ? err : "?") + "); a CUDA 11.4 or newer driver is required");
  }
  CUresult r = d.Init(0);
  if (r != kSuccess)
    return Unsupported(d.Error(r, "sketch: cuInit failed (no usable GPU or driver)") +
                       "; GPU sketches are off");
  int devices = 0;
  r = d.DeviceGetCount(&devices);
  if (r != kSuccess || devices == 0)
    return Unsupported("sketch: the CUDA driver sees no device; GPU sketches are off");
  return d;
}

RelaxedCaptureScope::RelaxedCaptureScope(const Driver& d) : d_(d) {
  saved_ = kCaptureModeRelaxed;
  swapped_ = d_.ThreadExchangeStreamCaptureMode(&saved_) == kSuccess;
}

RelaxedCaptureScope::~RelaxedCaptureScope() {
  if (swapped_) d_.ThreadExchangeStreamCaptureMode(&saved_);
}

}  // namespace ncclrr::sketch::cu
