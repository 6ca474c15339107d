#pragma once
// Shared by the GPU acceptance program's translation units (sketch_gpu_check.cu, _bench.cu).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

#include "ncclrr/sketch/device.h"
#include "ncclrr/trace/records.h"

#define CUDA_OK(call)                                                                            \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(2);                                                                              \
    }                                                                                            \
  } while (0)

namespace ncclrr::sketch::gpucheck {

// printf to stdout and to the log written under --out.
void Log(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// A sketch of n float32 elements in one block.
inline SketchRequest FloatRequest(uint64_t n, SketchMode mode = SketchMode::kFull) {
  SketchRequest req;
  req.layout.dtype = uint8_t(Dtype::kFloat32);
  req.layout.block_count = n;
  req.mode = mode;
  return req;
}

// Polls until the slot publishes (10 s at most).
std::optional<DeviceSketchResult> Wait(SketchDevice& dev, SketchDevice::SlotId slot);

// Throughput of the sketch against a read-only kernel and a device copy, and the cost of small
// sketches against an empty kernel.
void Bandwidth(SketchDevice& dev, cudaStream_t stream, double mb, const cudaDeviceProp& prop);

}  // namespace ncclrr::sketch::gpucheck
