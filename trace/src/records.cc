#include "ncclrr/trace/records.h"

#include <time.h>

#include <array>
#include <utility>

namespace ncclrr {
namespace {

constexpr std::pair<Api, std::string_view> kApiNames[] = {
    {Api::kAllReduce, "AllReduce"},
    {Api::kBroadcast, "Broadcast"},
    {Api::kBcast, "Bcast"},
    {Api::kReduce, "Reduce"},
    {Api::kAllGather, "AllGather"},
    {Api::kReduceScatter, "ReduceScatter"},
    {Api::kAlltoAll, "AlltoAll"},
    {Api::kGather, "Gather"},
    {Api::kScatter, "Scatter"},
    {Api::kSend, "Send"},
    {Api::kRecv, "Recv"},
    {Api::kGroupStart, "GroupStart"},
    {Api::kGroupEnd, "GroupEnd"},
    {Api::kGroupSimulateEnd, "GroupSimulateEnd"},
    {Api::kGetUniqueId, "GetUniqueId"},
    {Api::kCommInitRank, "CommInitRank"},
    {Api::kCommInitRankConfig, "CommInitRankConfig"},
    {Api::kCommInitRankScalable, "CommInitRankScalable"},
    {Api::kCommInitAll, "CommInitAll"},
    {Api::kCommSplit, "CommSplit"},
    {Api::kCommShrink, "CommShrink"},
    {Api::kCommFinalize, "CommFinalize"},
    {Api::kCommDestroy, "CommDestroy"},
    {Api::kCommAbort, "CommAbort"},
    {Api::kCommRevoke, "CommRevoke"},
    {Api::kCommRegister, "CommRegister"},
    {Api::kCommDeregister, "CommDeregister"},
    {Api::kCommWindowRegister, "CommWindowRegister"},
    {Api::kCommWindowDeregister, "CommWindowDeregister"},
    {Api::kMemAlloc, "MemAlloc"},
    {Api::kMemFree, "MemFree"},
    {Api::kRedOpCreatePreMulSum, "RedOpCreatePreMulSum"},
    {Api::kRedOpDestroy, "RedOpDestroy"},
    {Api::kCommGetAsyncError, "CommGetAsyncError"},
    {Api::kCommCount, "CommCount"},
    {Api::kCommCuDevice, "CommCuDevice"},
    {Api::kCommUserRank, "CommUserRank"},
    {Api::kGetVersion, "GetVersion"},
    {Api::kGetErrorString, "GetErrorString"},
    {Api::kGetLastError, "GetLastError"},
    {Api::kAsyncErrorChange, "AsyncErrorChange"},
};

constexpr std::array<std::string_view, kNumDtypes> kDtypeNames = {
    "int8",    "uint8",   "int32",   "uint32",   "int64",   "uint64",
    "float16", "float32", "float64", "bfloat16", "fp8e4m3", "fp8e5m2"};
constexpr std::array<size_t, kNumDtypes> kDtypeSizes = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
constexpr std::array<std::string_view, kNumBuiltinOps> kOpNames = {"sum", "prod", "max", "min",
                                                                   "avg"};

}  // namespace

std::string_view ApiName(Api api) {
  for (const auto& [a, name] : kApiNames)
    if (a == api) return name;
  return "Unknown";
}

Api ApiFromName(std::string_view name) {
  for (const auto& [a, n] : kApiNames)
    if (n == name) return a;
  return Api::kUnknown;
}

std::string_view DtypeName(uint8_t dtype) {
  return dtype < kNumDtypes ? kDtypeNames[dtype] : std::string_view("dtype?");
}

size_t DtypeSize(uint8_t dtype) { return dtype < kNumDtypes ? kDtypeSizes[dtype] : 0; }

std::string_view RedOpName(int32_t op, uint8_t flags) {
  if (flags & call_flags::kPreMulSum) return "premulsum";
  if (op >= 0 && op < kNumBuiltinOps) return kOpNames[op];
  return "op?";
}

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

int64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace ncclrr
