// ncclrr declares the CUPTI records it reads by hand (gputiming/src/cupti_api.h) so that nothing
// includes CUPTI; this test holds those declarations to CUPTI's own headers where installed.
#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_result.h>
#include <cupti_runtime_cbid.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <iterator>

#include "cupti_api.h"

namespace ncclrr::gputiming {
namespace {

using cupti::ExternalCorrelationRecord;
using cupti::KernelRecordPrefix;

template <typename Kernel>
void ExpectPrefixMatches() {
  EXPECT_EQ(offsetof(KernelRecordPrefix, kind), offsetof(Kernel, kind));
  EXPECT_EQ(offsetof(KernelRecordPrefix, start), offsetof(Kernel, start));
  EXPECT_EQ(offsetof(KernelRecordPrefix, end), offsetof(Kernel, end));
  EXPECT_EQ(offsetof(KernelRecordPrefix, device_id), offsetof(Kernel, deviceId));
  EXPECT_EQ(offsetof(KernelRecordPrefix, context_id), offsetof(Kernel, contextId));
  EXPECT_EQ(offsetof(KernelRecordPrefix, stream_id), offsetof(Kernel, streamId));
  EXPECT_EQ(offsetof(KernelRecordPrefix, correlation_id), offsetof(Kernel, correlationId));
  EXPECT_EQ(offsetof(KernelRecordPrefix, name), offsetof(Kernel, name));
}

TEST(CuptiLayout, KernelRecordPrefixMatchesCupti) {
  ExpectPrefixMatches<CUpti_ActivityKernel10>();
  // Older CUPTI delivers older versions; ncclrr reads only the prefix they share.
  ExpectPrefixMatches<CUpti_ActivityKernel4>();
  ExpectPrefixMatches<CUpti_ActivityKernel9>();
}

TEST(CuptiLayout, ExternalCorrelationRecordMatchesCupti) {
  EXPECT_EQ(sizeof(ExternalCorrelationRecord), sizeof(CUpti_ActivityExternalCorrelation));
  EXPECT_EQ(offsetof(ExternalCorrelationRecord, external_kind),
            offsetof(CUpti_ActivityExternalCorrelation, externalKind));
  EXPECT_EQ(offsetof(ExternalCorrelationRecord, external_id),
            offsetof(CUpti_ActivityExternalCorrelation, externalId));
  EXPECT_EQ(offsetof(ExternalCorrelationRecord, correlation_id),
            offsetof(CUpti_ActivityExternalCorrelation, correlationId));
}

TEST(CuptiLayout, ConstantsMatchCupti) {
  EXPECT_EQ(cupti::kKindDriver, CUPTI_ACTIVITY_KIND_DRIVER);
  EXPECT_EQ(cupti::kKindConcurrentKernel, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  EXPECT_EQ(cupti::kKindExternalCorrelation, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  EXPECT_EQ(cupti::kExternalKindCustom2, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2);
  EXPECT_EQ(cupti::kErrorMaxLimitReached, CUPTI_ERROR_MAX_LIMIT_REACHED);
  EXPECT_EQ(cupti::kErrorMultipleSubscribers, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  EXPECT_EQ(cupti::kFlushForced, static_cast<uint32_t>(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  EXPECT_EQ(cupti::kLaunchDriverCallbacks[0], CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
  EXPECT_EQ(cupti::kLaunchDriverCallbacks[1], CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz);
  EXPECT_EQ(cupti::kLaunchDriverCallbacks[2], CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel);
  EXPECT_EQ(cupti::kLaunchDriverCallbacks[3],
            CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz);
  EXPECT_EQ(cupti::kLaunchDriverCallbacks[4], CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch);
  EXPECT_EQ(cupti::kLaunchDriverCallbacks[5], CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz);
  EXPECT_EQ(cupti::kLaunchDriverCallbacks[6], CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx);
  EXPECT_EQ(cupti::kLaunchDriverCallbacks[7], CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz);
  EXPECT_EQ(cupti::kKindRuntime, CUPTI_ACTIVITY_KIND_RUNTIME);
  const uint32_t runtime[] = {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
                              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
                              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
                              CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
                              CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
                              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
                              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
                              CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
                              CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000};
  ASSERT_EQ(std::size(runtime), std::size(cupti::kLaunchRuntimeCallbacks));
  for (size_t i = 0; i < std::size(runtime); ++i)
    EXPECT_EQ(cupti::kLaunchRuntimeCallbacks[i], runtime[i]) << i;
}

TEST(CuptiLayout, CallbackDataMatchesCupti) {
  EXPECT_EQ(cupti::kDomainDriverApi, CUPTI_CB_DOMAIN_DRIVER_API);
  EXPECT_EQ(cupti::kDomainRuntimeApi, CUPTI_CB_DOMAIN_RUNTIME_API);
  EXPECT_EQ(cupti::kApiEnter, static_cast<uint32_t>(CUPTI_API_ENTER));
  EXPECT_EQ(sizeof(CUpti_ApiCallbackSite), sizeof(uint32_t));
  EXPECT_EQ(offsetof(cupti::CallbackData, callback_site),
            offsetof(CUpti_CallbackData, callbackSite));
  EXPECT_EQ(offsetof(cupti::CallbackData, context), offsetof(CUpti_CallbackData, context));
  EXPECT_EQ(offsetof(cupti::CallbackData, correlation_id),
            offsetof(CUpti_CallbackData, correlationId));
}

TEST(CuptiLayout, NcclKernelNames) {
  EXPECT_TRUE(cupti::IsNcclKernelName("ncclDevKernel_AllReduce_Sum_f32_RING_LL(...)"));
  EXPECT_TRUE(cupti::IsNcclKernelName("ncclKernel_AllGather_RING_LL_Sum_int8_t"));
  EXPECT_TRUE(cupti::IsNcclKernelName("_Z25ncclDevKernel_SendRecv_1P19ncclDevKernelArgs"));
  EXPECT_FALSE(cupti::IsNcclKernelName("void at::native::vectorized_elementwise_kernel"));
  EXPECT_FALSE(cupti::IsNcclKernelName(nullptr));
}

}  // namespace
}  // namespace ncclrr::gputiming
