#pragma once
// CHECK_CUDA / CHECK_NCCL for the GPU benchmarks: a failed call prints itself and its error and
// exits 2 ("could not run"), which the tests/gpu scripts report.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>

#define CHECK_CUDA(x)                                               \
  do {                                                              \
    cudaError_t e_ = (x);                                           \
    if (e_ != cudaSuccess) {                                        \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); \
      std::exit(2);                                                 \
    }                                                               \
  } while (0)
#define CHECK_NCCL(x)                                               \
  do {                                                              \
    ncclResult_t r_ = (x);                                          \
    if (r_ != ncclSuccess) {                                        \
      std::fprintf(stderr, "%s: %s\n", #x, ncclGetErrorString(r_)); \
      std::exit(2);                                                 \
    }                                                               \
  } while (0)
