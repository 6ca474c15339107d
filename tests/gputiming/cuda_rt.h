// The CUDA runtime calls the GPU test programs need, reached through dlopen (as ncclrr-example
// does) so that they build without CUDA libraries; cudaError_t is an int, 0 is success.
#pragma once
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <type_traits>

namespace ncclrr::gpu_test {

struct CudaRt {
  int (*GetDeviceCount)(int*) = nullptr;
  int (*SetDevice)(int) = nullptr;
  int (*Malloc)(void**, size_t) = nullptr;
  int (*Memset)(void*, int, size_t) = nullptr;
  int (*StreamCreate)(void**) = nullptr;
  int (*StreamSynchronize)(void*) = nullptr;
  int (*StreamBeginCapture)(void*, int) = nullptr;
  int (*StreamEndCapture)(void*, void**) = nullptr;
  int (*GraphInstantiate)(void**, void*, unsigned long long) = nullptr;
  int (*GraphLaunch)(void*, void*) = nullptr;
  int (*GraphExecDestroy)(void*) = nullptr;
  int (*GraphDestroy)(void*) = nullptr;
  int (*DeviceSynchronize)() = nullptr;
  const char* (*GetErrorString)(int) = nullptr;

  // Loads libcudart; exits with a message when it is missing (these programs need a GPU).
  static CudaRt Load() {
    void* h = nullptr;
    for (const char* name : {"libcudart.so.13", "libcudart.so.12", "libcudart.so",
                             "/usr/local/cuda/lib64/libcudart.so.13"}) {
      if ((h = dlopen(name, RTLD_NOW | RTLD_GLOBAL)) != nullptr) break;
    }
    if (h == nullptr) {
      std::fprintf(stderr, "libcudart.so.13 not found: this program needs a GPU and CUDA\n");
      std::exit(2);
    }
    CudaRt rt;
    auto get = [&](const char* name, auto* fn) {
      *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(dlsym(h, name));
      if (*fn == nullptr) {
        std::fprintf(stderr, "libcudart lacks %s\n", name);
        std::exit(2);
      }
    };
    get("cudaGetDeviceCount", &rt.GetDeviceCount);
    get("cudaSetDevice", &rt.SetDevice);
    get("cudaMalloc", &rt.Malloc);
    get("cudaMemset", &rt.Memset);
    get("cudaStreamCreate", &rt.StreamCreate);
    get("cudaStreamSynchronize", &rt.StreamSynchronize);
    get("cudaStreamBeginCapture", &rt.StreamBeginCapture);
    get("cudaStreamEndCapture", &rt.StreamEndCapture);
    get("cudaGraphInstantiate", &rt.GraphInstantiate);
    get("cudaGraphLaunch", &rt.GraphLaunch);
    get("cudaGraphExecDestroy", &rt.GraphExecDestroy);
    get("cudaGraphDestroy", &rt.GraphDestroy);
    get("cudaDeviceSynchronize", &rt.DeviceSynchronize);
    get("cudaGetErrorString", &rt.GetErrorString);
    return rt;
  }
  void Check(int err, const char* what) const {
    if (err != 0) {
      std::fprintf(stderr, "%s failed: %s\n", what, GetErrorString(err));
      std::exit(2);
    }
  }
};

}  // namespace ncclrr::gpu_test
