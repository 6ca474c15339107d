#pragma once
// The CUDA driver as SketchDevice uses it: base's one driver table (ncclrr/base/cuda_driver.h),
// under the names this folder's code was written with, and the checks sketches need before they
// can run (every entry point they call, cuInit, a device).
#include <string>

#include "ncclrr/base/cuda_driver.h"
#include "ncclrr/base/status.h"

namespace ncclrr::sketch::cu {

using CUresult = cuda::Result;
using CUdevice = cuda::Device;
using CUdeviceptr = cuda::DevicePtr;
using CUcontext = cuda::Context;
using CUmodule = cuda::Module;
using CUfunction = cuda::Function;
using CUstream = cuda::Stream;
using CUevent = cuda::Event;
using Driver = cuda::Driver;
using RelaxedCaptureScope = cuda::RelaxedCaptureScope;

using cuda::kAttrComputeCapabilityMajor;
using cuda::kAttrComputeCapabilityMinor;
using cuda::kAttrMultiprocessorCount;
using cuda::kCaptureModeRelaxed;
using cuda::kCaptureStatusActive;
using cuda::kCaptureStatusNone;
using cuda::kErrorNoBinaryForGpu;
using cuda::kErrorNoDevice;
using cuda::kEventDisableTiming;
using cuda::kHostAllocDeviceMap;
using cuda::kHostAllocPortable;
using cuda::kStreamNonBlocking;
using cuda::kSuccess;

// Opens `path` (loading it if the process has not), checks every entry point sketches call, then
// cuInit(0) and the device count. Unsupported, with what to do, when any of it is missing.
StatusOr<Driver> LoadDriver(const std::string& path);

}  // namespace ncclrr::sketch::cu
