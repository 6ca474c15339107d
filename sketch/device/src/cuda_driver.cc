#include "cuda_driver.h"

namespace ncclrr::sketch::cu {

StatusOr<Driver> LoadDriver(const std::string& path) {
  auto opened = cuda::OpenDriver(path, /*may_load=*/true);
  if (!opened.ok())
    return Unsupported("sketch: no CUDA driver (" + opened.status().message() +
                       "); GPU sketches need libcuda.so.1 from the NVIDIA driver. Host buffers can "
                       "still be sketched (SketchHost)");
  Driver d = std::move(opened.value());
  const std::string missing = cuda::MissingOf({
      NCCLRR_CUDA_WANT(d, Init),
      NCCLRR_CUDA_WANT(d, DriverGetVersion),
      NCCLRR_CUDA_WANT(d, DeviceGetCount),
      NCCLRR_CUDA_WANT(d, DeviceGetAttribute),
      NCCLRR_CUDA_WANT(d, StreamGetCtx),
      NCCLRR_CUDA_WANT(d, StreamIsCapturing),
      NCCLRR_CUDA_WANT(d, CtxPushCurrent),
      NCCLRR_CUDA_WANT(d, CtxPopCurrent),
      NCCLRR_CUDA_WANT(d, CtxGetDevice),
      NCCLRR_CUDA_WANT(d, ModuleLoadData),
      NCCLRR_CUDA_WANT(d, ModuleUnload),
      NCCLRR_CUDA_WANT(d, ModuleGetFunction),
      NCCLRR_CUDA_WANT(d, LaunchKernel),
      NCCLRR_CUDA_WANT(d, MemAlloc),
      NCCLRR_CUDA_WANT(d, MemFree),
      NCCLRR_CUDA_WANT(d, MemsetD8Async),
      NCCLRR_CUDA_WANT(d, StreamCreate),
      NCCLRR_CUDA_WANT(d, StreamSynchronize),
      NCCLRR_CUDA_WANT(d, StreamDestroy),
      NCCLRR_CUDA_WANT(d, EventCreate),
      NCCLRR_CUDA_WANT(d, EventRecord),
      NCCLRR_CUDA_WANT(d, StreamWaitEvent),
      NCCLRR_CUDA_WANT(d, EventDestroy),
      NCCLRR_CUDA_WANT(d, MemHostAlloc),
      NCCLRR_CUDA_WANT(d, MemFreeHost),
      NCCLRR_CUDA_WANT(d, MemHostGetDevicePointer),
      NCCLRR_CUDA_WANT(d, ThreadExchangeStreamCaptureMode),
      NCCLRR_CUDA_WANT(d, GetErrorString),
  });
  if (!missing.empty())
    return Unsupported("sketch: " + d.path + " lacks driver entry points sketches need (" +
                       missing + "); a CUDA 11.4 or newer driver is required");
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

}  // namespace ncclrr::sketch::cu
