#pragma once
// The part of CUPTI's activity API that ncclrr uses, declared here from CUPTI's documentation
// (cupti_activity.h, cupti_callbacks.h, cupti_result.h of CUDA 12/13) so that nothing links or
// includes CUPTI. Values and layouts below are CUPTI's ABI; tests/gputiming checks them against
// the real headers when those are installed.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ncclrr/base/status.h"

namespace ncclrr::gputiming::cupti {

using Result = int;  // CUptiResult
inline constexpr Result kSuccess = 0;
inline constexpr Result kErrorMaxLimitReached = 12;      // no more records in a buffer
inline constexpr Result kErrorMultipleSubscribers = 39;  // another subscriber holds CUPTI

// CUpti_ActivityKind values.
inline constexpr int kKindDriver = 4;
inline constexpr int kKindRuntime = 5;
inline constexpr int kKindConcurrentKernel = 10;
inline constexpr int kKindExternalCorrelation = 39;

// CUpti_CallbackDomain and CUpti_ApiCallbackSite.
inline constexpr int kDomainDriverApi = 1;
inline constexpr int kDomainRuntimeApi = 2;
inline constexpr uint32_t kApiEnter = 0;

// CUpti_ExternalCorrelationKind: CUSTOM0 and CUSTOM1 are what the PyTorch profiler (Kineto)
// pushes; ncclrr uses CUSTOM2 so that its stack never interleaves with theirs.
inline constexpr int kExternalKindCustom2 = 5;

// CUPTI_ACTIVITY_FLAG_FLUSH_FORCED: also flush records of work still in flight.
inline constexpr uint32_t kFlushForced = 1u << 0;

// CUpti_CallbackId of the driver entry points that launch kernels or graphs (cupti_driver_cbid.h).
inline constexpr uint32_t kLaunchDriverCallbacks[] = {
    307,  // cuLaunchKernel
    442,  // cuLaunchKernel_ptsz
    477,  // cuLaunchCooperativeKernel
    478,  // cuLaunchCooperativeKernel_ptsz
    514,  // cuGraphLaunch
    515,  // cuGraphLaunch_ptsz
    652,  // cuLaunchKernelEx
    653,  // cuLaunchKernelEx_ptsz
};
// CUpti_CallbackId of the runtime entry points that launch kernels or graphs
// (cupti_runtime_cbid.h): a launch through a (static) CUDA runtime makes a runtime API record.
inline constexpr uint32_t kLaunchRuntimeCallbacks[] = {
    211,  // cudaLaunchKernel_v7000
    214,  // cudaLaunchKernel_ptsz_v7000
    269,  // cudaLaunchCooperativeKernel_v9000
    270,  // cudaLaunchCooperativeKernel_ptsz_v9000
    311,  // cudaGraphLaunch_v10000
    312,  // cudaGraphLaunch_ptsz_v10000
    430,  // cudaLaunchKernelExC_v11060
    431,  // cudaLaunchKernelExC_ptsz_v11060
    505,  // __cudaLaunchKernel_v13000
    506,  // __cudaLaunchKernel_ptsz_v13000
};

// The leading fields of every kernel record (CUpti_ActivityKernel4 to CUpti_ActivityKernel10 all
// start this way); CUPTI delivers its newest version, so only this prefix is read.
struct KernelRecordPrefix {
  uint32_t kind;
  uint8_t cache_config;
  uint8_t shared_memory_config;
  uint16_t registers_per_thread;
  uint32_t partitioned_cache_requested;
  uint32_t partitioned_cache_executed;
  uint64_t start;
  uint64_t end;
  uint64_t completed;
  uint32_t device_id;
  uint32_t context_id;
  uint32_t stream_id;
  int32_t grid[3];
  int32_t block[3];
  int32_t static_shared_memory;
  int32_t dynamic_shared_memory;
  uint32_t local_memory_per_thread;
  uint32_t local_memory_total;
  uint32_t correlation_id;
  int64_t grid_id;
  const char* name;
};
static_assert(offsetof(KernelRecordPrefix, start) == 16);
static_assert(offsetof(KernelRecordPrefix, device_id) == 40);
static_assert(offsetof(KernelRecordPrefix, correlation_id) == 92);
static_assert(offsetof(KernelRecordPrefix, name) == 104);

// CUpti_ActivityExternalCorrelation.
struct ExternalCorrelationRecord {
  uint32_t kind;
  uint32_t external_kind;
  uint64_t external_id;
  uint32_t correlation_id;
  uint32_t reserved;
};
static_assert(sizeof(ExternalCorrelationRecord) == 24);

// CUpti_CallbackData, what an API callback receives (the fields up to correlationId).
struct CallbackData {
  uint32_t callback_site;  // kApiEnter or exit
  const char* function_name;
  const void* function_params;
  void* function_return_value;
  const char* symbol_name;
  void* context;
  uint32_t context_uid;
  uint64_t* correlation_data;
  uint32_t correlation_id;  // the same as the kernel record's of the launch
};
static_assert(offsetof(CallbackData, correlation_id) == 64);

using BufferRequestedFn = void (*)(uint8_t** buffer, size_t* size, size_t* max_records);
using BufferCompletedFn = void (*)(void* context, uint32_t stream_id, uint8_t* buffer, size_t size,
                                   size_t valid_size);
using CallbackFn = void (*)(void* userdata, int domain, uint32_t cbid, const void* data);

// The functions, found with dlsym in the loaded libcupti. Optional ones may be null.
struct Api {
  Result (*GetResultString)(Result, const char**) = nullptr;
  Result (*GetVersion)(uint32_t*) = nullptr;
  Result (*Subscribe)(void** subscriber, CallbackFn callback, void* userdata) = nullptr;
  Result (*Unsubscribe)(void* subscriber) = nullptr;
  Result (*EnableCallback)(uint32_t enable, void* subscriber, int domain,
                           uint32_t cbid) = nullptr;  // optional
  Result (*ActivityRegisterCallbacks)(BufferRequestedFn, BufferCompletedFn) = nullptr;
  Result (*ActivityEnable)(int kind) = nullptr;
  Result (*ActivityDisable)(int kind) = nullptr;
  Result (*ActivityEnableDriverApi)(uint32_t cbid, uint8_t enable) = nullptr;   // optional
  Result (*ActivityEnableRuntimeApi)(uint32_t cbid, uint8_t enable) = nullptr;  // optional
  Result (*ActivityPushExternalCorrelationId)(int kind, uint64_t id) = nullptr;
  Result (*ActivityPopExternalCorrelationId)(int kind, uint64_t* last) = nullptr;
  Result (*ActivityFlushAll)(uint32_t flag) = nullptr;
  Result (*ActivityGetNextRecord)(uint8_t* buffer, size_t valid, void** record) = nullptr;
  Result (*ActivityGetNumDroppedRecords)(void* context, uint32_t stream_id,
                                         size_t* dropped) = nullptr;  // optional
  Result (*GetTimestamp)(uint64_t*) = nullptr;

  std::string path;             // the library these came from
  bool already_loaded = false;  // the process had loaded it before ncclrr

  // "CUPTI_ERROR_... (N)" for messages.
  std::string ErrorText(Result r) const;
};

// Finds libcupti: `explicit_path` if given; else a libcupti the process already loaded; else
// libcupti.so.13/.12 on the library path (the job's environment), then under /usr/local/cuda.
StatusOr<Api> LoadApi(const std::string& explicit_path);

// True for the kernels NCCL launches (ncclDevKernel_* since 2.19, ncclKernel_* before).
bool IsNcclKernelName(const char* name);

}  // namespace ncclrr::gputiming::cupti
