#include "nccl_api.h"

#include <dlfcn.h>

namespace ncclrr::replay {
namespace {

// Prefers the strong pncclX symbols (a preloaded interposer defines ncclX), falls back to ncclX.
template <typename F>
bool Resolve(void* h, const char* name, F* f) {
  *f = reinterpret_cast<F>(dlsym(h, (std::string("p") + name).c_str()));
  if (*f == nullptr) *f = reinterpret_cast<F>(dlsym(h, name));
  return *f != nullptr;
}

}  // namespace

StatusOr<NcclApi> NcclApi::Load(const std::string& path) {
  NcclApi api;
  api.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (api.handle == nullptr) {
    const char* err = dlerror();
    return NotFound("cannot load NCCL from '" + path + "': " + (err ? err : "unknown error"));
  }
  api.path = path;
  void* h = api.handle;
  const char* missing = nullptr;
#define NCCLRR_REQUIRE(field, name) \
  if (!missing && !Resolve(h, name, &api.field)) missing = name
  NCCLRR_REQUIRE(GetVersion, "ncclGetVersion");
  NCCLRR_REQUIRE(GetUniqueId, "ncclGetUniqueId");
  NCCLRR_REQUIRE(CommInitRankConfig, "ncclCommInitRankConfig");
  NCCLRR_REQUIRE(CommDestroy, "ncclCommDestroy");
  NCCLRR_REQUIRE(CommAbort, "ncclCommAbort");
  NCCLRR_REQUIRE(CommGetAsyncError, "ncclCommGetAsyncError");
  NCCLRR_REQUIRE(GetErrorString, "ncclGetErrorString");
  NCCLRR_REQUIRE(GroupStart, "ncclGroupStart");
  NCCLRR_REQUIRE(GroupEnd, "ncclGroupEnd");
  NCCLRR_REQUIRE(AllReduce, "ncclAllReduce");
  NCCLRR_REQUIRE(Broadcast, "ncclBroadcast");
  NCCLRR_REQUIRE(Reduce, "ncclReduce");
  NCCLRR_REQUIRE(AllGather, "ncclAllGather");
  NCCLRR_REQUIRE(ReduceScatter, "ncclReduceScatter");
  NCCLRR_REQUIRE(Send, "ncclSend");
  NCCLRR_REQUIRE(Recv, "ncclRecv");
  NCCLRR_REQUIRE(RedOpCreatePreMulSum, "ncclRedOpCreatePreMulSum");
  NCCLRR_REQUIRE(RedOpDestroy, "ncclRedOpDestroy");
#undef NCCLRR_REQUIRE
  if (missing != nullptr) {
    dlclose(h);
    return Unsupported("'" + path + "' lacks " + missing +
                       ": it is not an NCCL library of version 2.12 or newer");
  }
  Resolve(h, "ncclGetLastError", &api.GetLastError);  // optional
  Resolve(h, "ncclCommFinalize", &api.CommFinalize);
  Resolve(h, "ncclAlltoAll", &api.AlltoAll);  // NCCL 2.28 and newer
  Resolve(h, "ncclGather", &api.Gather);
  Resolve(h, "ncclScatter", &api.Scatter);
  api.GetVersion(&api.version);
  return api;
}

std::string NcclApi::ErrorText(ncclResult_t r, ncclComm_t comm) const {
  std::string s = GetErrorString ? GetErrorString(r) : "error " + std::to_string(r);
  if (GetLastError != nullptr) {
    const char* last = GetLastError(comm);
    if (last != nullptr && *last) s += ": " + std::string(last);
  }
  return s;
}

std::string NcclVersionString(int code) {
  if (code <= 0) return "unknown";
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? (code / 100) % 100 : (code / 100) % 10;
  const int patch = code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace ncclrr::replay
