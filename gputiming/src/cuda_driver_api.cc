#include "cuda_driver_api.h"

#include <vector>

#include "dl_util.h"

namespace ncclrr::gputiming::cuda {

StatusOr<Api> LoadApi(const std::string& explicit_path) {
  std::string tried;
  const OpenedLibrary lib = explicit_path.empty()
                                ? OpenFirst({"libcuda.so.1"}, /*may_load=*/false, &tried)
                                : OpenFirst({explicit_path}, /*may_load=*/true, &tried);
  if (lib.handle == nullptr) {
    return Unsupported("no CUDA driver in this process (" + tried +
                       "): there is no GPU work to time. Run the job on a machine with a GPU, or "
                       "record without --gpu-timing");
  }
  Api api;
  api.path = lib.path;
  void* h = lib.handle;
  // Versioned names first: the unversioned symbols are the old ABI where both exist.
  const bool ok = LoadSymbol(h, "cuEventCreate", &api.EventCreate) &&
                  LoadSymbol(h, "cuEventRecord", &api.EventRecord) &&
                  LoadSymbol(h, "cuEventQuery", &api.EventQuery) &&
                  LoadSymbol(h, "cuEventSynchronize", &api.EventSynchronize) &&
                  (LoadSymbol(h, "cuEventElapsedTime_v2", &api.EventElapsedTime) ||
                   LoadSymbol(h, "cuEventElapsedTime", &api.EventElapsedTime)) &&
                  (LoadSymbol(h, "cuEventDestroy_v2", &api.EventDestroy) ||
                   LoadSymbol(h, "cuEventDestroy", &api.EventDestroy)) &&
                  LoadSymbol(h, "cuStreamGetCtx", &api.StreamGetCtx) &&
                  LoadSymbol(h, "cuStreamCreate", &api.StreamCreate) &&
                  (LoadSymbol(h, "cuCtxPushCurrent_v2", &api.CtxPushCurrent) ||
                   LoadSymbol(h, "cuCtxPushCurrent", &api.CtxPushCurrent)) &&
                  (LoadSymbol(h, "cuCtxPopCurrent_v2", &api.CtxPopCurrent) ||
                   LoadSymbol(h, "cuCtxPopCurrent", &api.CtxPopCurrent)) &&
                  LoadSymbol(h, "cuCtxGetCurrent", &api.CtxGetCurrent);
  if (!ok) {
    return Unsupported(api.path +
                       " lacks a CUDA driver function ncclrr needs for event timing (a driver "
                       "older than CUDA 9.2?)");
  }
  LoadSymbol(h, "cuThreadExchangeStreamCaptureMode", &api.ThreadExchangeStreamCaptureMode);
  return api;
}

}  // namespace ncclrr::gputiming::cuda
