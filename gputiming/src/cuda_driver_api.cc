#include "cuda_driver_api.h"

namespace ncclrr::gputiming {

StatusOr<cuda::Driver> LoadEventDriver(const std::string& explicit_path) {
  auto opened = cuda::OpenDriver(explicit_path, /*may_load=*/!explicit_path.empty());
  if (!opened.ok())
    return Unsupported("no CUDA driver in this process (" + opened.status().message() +
                       "): there is no GPU work to time. Run the job on a machine with a GPU, or "
                       "record without --gpu-timing");
  const cuda::Driver& d = opened.value();
  const std::string missing = cuda::MissingOf({
      NCCLRR_CUDA_WANT(d, EventCreate),
      NCCLRR_CUDA_WANT(d, EventRecord),
      NCCLRR_CUDA_WANT(d, EventQuery),
      NCCLRR_CUDA_WANT(d, EventSynchronize),
      NCCLRR_CUDA_WANT(d, EventElapsedTime),
      NCCLRR_CUDA_WANT(d, EventDestroy),
      NCCLRR_CUDA_WANT(d, StreamGetCtx),
      NCCLRR_CUDA_WANT(d, StreamCreate),
      NCCLRR_CUDA_WANT(d, CtxPushCurrent),
      NCCLRR_CUDA_WANT(d, CtxPopCurrent),
      NCCLRR_CUDA_WANT(d, CtxGetCurrent),
  });
  if (!missing.empty())
    return Unsupported(d.path + " lacks CUDA driver functions ncclrr needs for event timing (" +
                       missing + "; a driver older than CUDA 9.2?)");
  return opened;
}

}  // namespace ncclrr::gputiming
