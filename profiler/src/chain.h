// The user's own profiler plugin, chained behind ncclrr's: NCCL loads only one profiler plugin,
// so `ncclrr record` points NCCL_PROFILER_PLUGIN at ncclrr's and passes the user's setting on in
// NCCLRR_CHAIN_PROFILER_PLUGIN. Every event the user's plugin asked for (its activation mask) is
// forwarded with the same meaning; the handles NCCL holds are ncclrr's, each remembering the
// chained plugin's handle, so parents are translated on the way.
//
// Versions: NCCL calls ncclrr with the newest interface both know; the chained plugin is called
// with that same version when it exports it, and a v4 plugin is also served under NCCL 2.28 (v5
// descriptors translated to v4). Any other mismatch is refused with a clear message (stderr and a
// trace note) and the job runs on without the chained plugin.
#pragma once
#include <string>

#include "profiler_abi.h"

namespace ncclrr::profiler {

class ChainedPlugin {
 public:
  // The chained plugin for NCCL's interface `nccl_version`, loaded at the first call; null when
  // none is configured or it cannot be used.
  static ChainedPlugin* Get(int nccl_version);

  int version() const { return version_; }
  const std::string& path() const { return path_; }
  // The event types it asked for (the union over its inits).
  int mask() const { return mask_; }
  bool Wants(uint64_t type) const { return (mask_ & static_cast<int>(type)) != 0; }

  // Init in NCCL's v5 / v4 / v1-v3 form. Returns its activation mask (0 when its init failed:
  // it then gets no events of that communicator).
  int InitV5(void** ctx, uint64_t comm_id, const char* name, int nnodes, int nranks, int rank,
             abi::Logger log);
  int InitV4(void** ctx, const char* name, uint64_t comm_hash, int nnodes, int nranks, int rank,
             abi::Logger log);
  int InitV1to3(void** ctx);

  // Start in NCCL's descriptor version; parents are translated here. Returns its handle or null.
  void* Start(void* ctx, const abi::DescrV5& d);
  void* Start(void* ctx, const abi::DescrV4& d);
  void* Start(void* ctx, const abi::DescrV3& d);
  void* Start(void* ctx, const abi::DescrV2& d);
  void* Start(void* ctx, const abi::DescrV1& d);
  void Stop(void* handle);
  void RecordState(void* handle, int state, void* args);
  void Finalize(void* ctx);

 private:
  ChainedPlugin() = default;
  int version_ = 0;
  void* table_ = nullptr;  // abi::ProfilerV<version_>*
  std::string path_;
  int mask_ = 0;
};

// The chained plugin's handle for one of ncclrr's handles (a parentObj NCCL passes), or null.
void* ChainedParent(void* ours);

}  // namespace ncclrr::profiler
