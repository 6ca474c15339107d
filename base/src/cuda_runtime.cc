#include "ncclrr/base/cuda_runtime.h"

#include <dlfcn.h>

#include <vector>

#include "ncclrr/base/dl.h"
#include "ncclrr/base/python_libs.h"

namespace ncclrr::cudart {

StatusOr<Runtime> OpenRuntime() {
  std::vector<std::string> names = {"libcudart.so.13", "libcudart.so.12", "libcudart.so",
                                    "/usr/local/cuda/lib64/libcudart.so.13"};
  for (const std::string& dir : PythonNvidiaLibDirs("cuda_runtime"))
    for (const char* so : {"/libcudart.so.13", "/libcudart.so.12"}) names.push_back(dir + so);
  void* h = nullptr;
  std::string opened;
  for (const std::string& name : names)
    if ((h = dlopen(name.c_str(), RTLD_NOW | RTLD_GLOBAL)) != nullptr) {
      opened = name;
      break;
    }
  if (h == nullptr)
    return NotFound(
        "the CUDA runtime (libcudart.so.13 or .12) was not found; add its folder to "
        "LD_LIBRARY_PATH");
  Runtime rt;
  rt.path = opened;
  std::string missing;
  auto need = [&](const char* name, auto* fn) {
    if (!dl::LoadSymbol(h, name, fn)) missing += (missing.empty() ? "" : ", ") + std::string(name);
  };
  need("cudaSetDevice", &rt.SetDevice);
  need("cudaGetDeviceCount", &rt.GetDeviceCount);
  need("cudaMalloc", &rt.Malloc);
  need("cudaFree", &rt.Free);
  need("cudaMemcpy", &rt.Memcpy);
  need("cudaMemcpyAsync", &rt.MemcpyAsync);
  need("cudaStreamCreate", &rt.StreamCreate);
  need("cudaStreamCreateWithFlags", &rt.StreamCreateWithFlags);
  need("cudaStreamDestroy", &rt.StreamDestroy);
  need("cudaStreamSynchronize", &rt.StreamSynchronize);
  need("cudaStreamQuery", &rt.StreamQuery);
  need("cudaStreamWaitEvent", &rt.StreamWaitEvent);
  need("cudaEventCreateWithFlags", &rt.EventCreateWithFlags);
  need("cudaEventRecord", &rt.EventRecord);
  need("cudaEventQuery", &rt.EventQuery);
  need("cudaEventDestroy", &rt.EventDestroy);
  need("cudaLaunchHostFunc", &rt.LaunchHostFunc);
  need("cudaGetErrorString", &rt.GetErrorString);
  if (!missing.empty()) return Unsupported(opened + " lacks " + missing);
  return rt;
}

}  // namespace ncclrr::cudart
