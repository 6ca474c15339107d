// The symbols NCCL looks up in a profiler plugin: one table per interface version. NCCL uses the
// newest one it knows (2.23: v1 ... 2.28: v5); the version script exports only these.
#include "events.h"

namespace abi = ncclrr::profiler::abi;
namespace p = ncclrr::profiler;

extern "C" {

__attribute__((visibility("default"))) abi::ProfilerV5 ncclProfiler_v5 = {
    "ncclrr", p::InitV5, p::StartV5, p::StopEvent, p::RecordStateV4, p::Finalize};
__attribute__((visibility("default"))) abi::ProfilerV4 ncclProfiler_v4 = {
    "ncclrr", p::InitV4, p::StartV4, p::StopEvent, p::RecordStateV4, p::Finalize};
__attribute__((visibility("default"))) abi::ProfilerV3 ncclProfiler_v3 = {
    "ncclrr", p::InitV3, p::StartV3, p::StopEvent, p::RecordStateV1, p::Finalize};
__attribute__((visibility("default"))) abi::ProfilerV2 ncclProfiler_v2 = {
    "ncclrr", p::InitV2, p::StartV2, p::StopEvent, p::RecordStateV1, p::Finalize};
__attribute__((visibility("default"))) abi::ProfilerV1 ncclProfiler_v1 = {
    "ncclrr", p::InitV1, p::StartV1, p::StopEvent, p::RecordStateV1, p::Finalize};

}  // extern "C"
