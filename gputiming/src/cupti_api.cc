#include "cupti_api.h"

#include <cstring>
#include <vector>

#include "ncclrr/base/dl.h"

namespace ncclrr::gputiming::cupti {

using dl::LoadSymbol;
using dl::OpenedLibrary;
using dl::OpenFirst;

std::string Api::ErrorText(Result r) const {
  const char* text = nullptr;
  if (GetResultString != nullptr && GetResultString(r, &text) == kSuccess && text != nullptr)
    return std::string(text) + " (" + std::to_string(r) + ")";
  return "CUPTI error " + std::to_string(r);
}

StatusOr<Api> LoadApi(const std::string& explicit_path) {
  std::vector<std::string> names;
  if (!explicit_path.empty()) {
    names = {explicit_path};
  } else {
    names = {"libcupti.so.13",
             "libcupti.so.12",
             "libcupti.so",
             "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
             "/usr/local/cuda/lib64/libcupti.so.13",
             "/usr/local/cuda/targets/x86_64-linux/lib/libcupti.so.13",
             "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.12",
             "/usr/local/cuda/lib64/libcupti.so.12"};
  }
  std::string tried;
  const OpenedLibrary lib = OpenFirst(names, /*may_load=*/true, &tried);
  if (lib.handle == nullptr) {
    return NotFound("CUPTI (libcupti.so.13) was not found; " + tried +
                    "\nInstall the CUDA toolkit's CUPTI or put its directory on "
                    "LD_LIBRARY_PATH; GPU times then come from CUDA events instead");
  }
  Api api;
  api.path = lib.path;
  api.already_loaded = lib.already_loaded;
  void* h = lib.handle;
  const bool ok = LoadSymbol(h, "cuptiGetResultString", &api.GetResultString) &&
                  LoadSymbol(h, "cuptiGetVersion", &api.GetVersion) &&
                  LoadSymbol(h, "cuptiSubscribe", &api.Subscribe) &&
                  LoadSymbol(h, "cuptiUnsubscribe", &api.Unsubscribe) &&
                  LoadSymbol(h, "cuptiActivityRegisterCallbacks", &api.ActivityRegisterCallbacks) &&
                  LoadSymbol(h, "cuptiActivityEnable", &api.ActivityEnable) &&
                  LoadSymbol(h, "cuptiActivityDisable", &api.ActivityDisable) &&
                  LoadSymbol(h, "cuptiActivityPushExternalCorrelationId",
                             &api.ActivityPushExternalCorrelationId) &&
                  LoadSymbol(h, "cuptiActivityPopExternalCorrelationId",
                             &api.ActivityPopExternalCorrelationId) &&
                  LoadSymbol(h, "cuptiActivityFlushAll", &api.ActivityFlushAll) &&
                  LoadSymbol(h, "cuptiActivityGetNextRecord", &api.ActivityGetNextRecord) &&
                  LoadSymbol(h, "cuptiGetTimestamp", &api.GetTimestamp);
  if (!ok) {
    return Unsupported(api.path +
                       " lacks part of CUPTI's activity API (external correlation needs CUDA "
                       "8 or newer); GPU times then come from CUDA events instead");
  }
  LoadSymbol(h, "cuptiEnableCallback", &api.EnableCallback);
  LoadSymbol(h, "cuptiActivityEnableDriverApi", &api.ActivityEnableDriverApi);
  LoadSymbol(h, "cuptiActivityEnableRuntimeApi", &api.ActivityEnableRuntimeApi);
  LoadSymbol(h, "cuptiActivityGetNumDroppedRecords", &api.ActivityGetNumDroppedRecords);
  // The handle stays open for the life of the process: CUPTI keeps threads and callbacks.
  return api;
}

bool IsNcclKernelName(const char* name) {
  if (name == nullptr) return false;
  // Mangled or not, NCCL's kernels carry one of these prefixes somewhere near the start.
  return std::strstr(name, "ncclDevKernel") != nullptr ||
         std::strstr(name, "ncclKernel") != nullptr;
}

}  // namespace ncclrr::gputiming::cupti
