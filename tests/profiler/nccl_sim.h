// Drives ncclrr's profiler plugin the way NCCL does (the host NCCL loads no profiler plugin): it
// dlopens the plugin, takes the table of the interface version that NCCL 2.28 (v5), 2.27 (v4),
// 2.26 (v3), 2.24 (v2) or 2.23 (v1) would use, and raises events in NCCL's order (read from
// NCCL's enqueue.cc / group.cc / plugin/profiler.cc): API events inside the call, task events at
// launch under a group event, stops after the launch.
#pragma once
#include <dlfcn.h>

#include <string>
#include <vector>

#include "profiler_abi.h"

namespace ncclrr::profiler::test {

struct Task {
  bool coll = true;
  const char* func = "AllReduce";
  size_t count = 0;  // what NCCL puts in the task (bytes for AllGather/Broadcast)
  const char* datatype = "ncclFloat32";
  int root_or_peer = -1;
  const void* send = nullptr;
  void* recv = nullptr;
  void* api_handle = nullptr;  // v5: the call's API event (the task's parentObj)
  uint64_t seq_number = 0;     // v1-v4 coll: NCCL's per-function counter
};

class SimNccl {
 public:
  SimNccl(const std::string& plugin, int version) : version_(version) {
    lib_ = dlopen(plugin.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib_ != nullptr) table_ = dlsym(lib_, ("ncclProfiler_v" + std::to_string(version)).c_str());
  }
  bool ok() const { return table_ != nullptr; }
  int mask() const { return mask_; }

  void* Init(uint64_t hash, const char* name, int nranks, int rank) {
    void* ctx = nullptr;
    if (version_ == 5) {
      V5()->init(&ctx, hash, &mask_, name, 1, nranks, rank, nullptr);
    } else if (version_ == 4) {
      V4()->init(&ctx, &mask_, name, hash, 1, nranks, rank, nullptr);
    } else {
      reinterpret_cast<abi::ProfilerV1*>(table_)->init(&ctx, &mask_);
    }
    return ctx;
  }
  void Finalize(void* ctx) { reinterpret_cast<abi::ProfilerV1*>(table_)->finalize(ctx); }
  void Stop(void* h) {
    if (h != nullptr) reinterpret_cast<abi::ProfilerV1*>(table_)->stopEvent(h);
  }

  // ---- v5 API events ----
  void* GroupApiStart(void* ctx, int depth, bool captured = false) {
    abi::DescrV5 d{};
    d.type = abi::kGroupApi;
    d.groupApi.graphCaptured = captured;
    d.groupApi.groupDepth = depth;
    return StartV5(ctx, d);
  }
  void* CollApi(void* ctx, void* group, const char* func, size_t count, const char* datatype,
                int root, void* stream, bool captured = false) {
    abi::DescrV5 d{};
    d.type = abi::kCollApi;
    d.parentObj = group;
    d.collApi = {func, count, datatype, root, stream, captured};
    void* h = StartV5(ctx, d);
    Stop(h);  // NCCL stops it at the end of collTaskAppend, before the launch
    return h;
  }
  void* P2pApi(void* ctx, void* group, const char* func, size_t count, const char* datatype,
               void* stream, bool captured = false) {
    abi::DescrV5 d{};
    d.type = abi::kP2pApi;
    d.parentObj = group;
    d.p2pApi = {func, count, datatype, stream, captured};
    void* h = StartV5(ctx, d);
    Stop(h);
    return h;
  }

  // ---- The launch: a group event and its tasks, as hostStreamPlanTask raises them ----
  void Launch(void* ctx, int rank, const std::vector<Task>& tasks) {
    void* group = StartGroup(ctx);
    std::vector<void*> handles;
    for (const Task& t : tasks) handles.push_back(StartTask(ctx, rank, group, t));
    for (void* h : handles) Stop(h);
    Stop(group);
  }

 private:
  abi::ProfilerV5* V5() { return static_cast<abi::ProfilerV5*>(table_); }
  abi::ProfilerV4* V4() { return static_cast<abi::ProfilerV4*>(table_); }
  void* StartV5(void* ctx, abi::DescrV5& d) {
    void* h = nullptr;
    V5()->startEvent(ctx, &h, &d);
    return h;
  }
  template <typename Table, typename Descr>
  void* StartAs(void* ctx, Descr& d) {
    void* h = nullptr;
    static_cast<Table*>(table_)->startEvent(ctx, &h, &d);
    return h;
  }
  void* StartGroup(void* ctx) {
    switch (version_) {
      case 5: {
        abi::DescrV5 d{};
        d.type = abi::kGroup;
        return StartV5(ctx, d);
      }
      case 4: {
        abi::DescrV4 d{};
        d.type = abi::kGroup;
        return StartAs<abi::ProfilerV4>(ctx, d);
      }
      case 3: {
        abi::DescrV3 d{};
        d.type = abi::kGroup;
        return StartAs<abi::ProfilerV3>(ctx, d);
      }
      case 2: {
        abi::DescrV2 d{};
        d.type = abi::kGroup;
        return StartAs<abi::ProfilerV2>(ctx, d);
      }
      default: {
        abi::DescrV1 d{};
        d.type = abi::kGroup;
        return StartAs<abi::ProfilerV1>(ctx, d);
      }
    }
  }
  static uint8_t FuncValue(const char* f) {
    const std::string s = f;
    return s == "Broadcast"       ? 0
           : s == "Reduce"        ? 1
           : s == "AllGather"     ? 2
           : s == "ReduceScatter" ? 3
           : s == "AllReduce"     ? 4
           : s == "Send"          ? 6
                                  : 7;
  }
  static uint8_t DtypeValue(const char* d) { return std::string(d) == "ncclFloat32" ? 7 : 0; }

 public:
  uint64_t v1to3_hash = 0;  // what NCCL puts in v1-v3 descriptors
  const char* v1to3_name = "";
  uint32_t v1_op = 0;

 private:
  void* StartTask(void* ctx, int rank, void* group, const Task& t) {
    if (version_ == 5) {
      abi::DescrV5 d{};
      d.rank = rank;
      d.parentObj = t.api_handle;
      if (t.coll) {
        d.type = abi::kColl;
        d.coll.seqNumber = t.seq_number;
        d.coll.func = t.func;
        d.coll.sendBuff = t.send;
        d.coll.recvBuff = t.recv;
        d.coll.count = t.count;
        d.coll.root = t.root_or_peer;
        d.coll.datatype = t.datatype;
        d.coll.parentGroup = group;
      } else {
        d.type = abi::kP2p;
        d.p2p.func = t.func;
        d.p2p.buff = t.send != nullptr ? const_cast<void*>(t.send) : t.recv;
        d.p2p.datatype = t.datatype;
        d.p2p.count = t.count;
        d.p2p.peer = t.root_or_peer;
        d.p2p.parentGroup = group;
      }
      return StartV5(ctx, d);
    }
    if (version_ == 4) return StartTaskStringly<abi::ProfilerV4, abi::DescrV4>(ctx, rank, group, t);
    if (version_ == 3) return StartTaskStringly<abi::ProfilerV3, abi::DescrV3>(ctx, rank, group, t);
    if (version_ == 2) return StartTaskStringly<abi::ProfilerV2, abi::DescrV2>(ctx, rank, group, t);
    abi::DescrV1 d{};
    d.rank = rank;
    d.parentObj = group;
    if (t.coll) {
      d.type = abi::kColl;
      d.coll = {v1to3_name,
                v1to3_hash,
                t.seq_number,
                FuncValue(t.func),
                t.send,
                t.recv,
                t.count,
                t.root_or_peer,
                DtypeValue(t.datatype),
                v1_op,
                0,
                0,
                0,
                0,
                0,
                0,
                0};
    } else {
      d.type = abi::kP2p;
      d.p2p = {v1to3_name,
               v1to3_hash,
               FuncValue(t.func),
               t.send != nullptr ? const_cast<void*>(t.send) : t.recv,
               DtypeValue(t.datatype),
               t.count,
               t.root_or_peer};
    }
    return StartAs<abi::ProfilerV1>(ctx, d);
  }
  template <typename Table, typename Descr>
  void* StartTaskStringly(void* ctx, int rank, void* group, const Task& t) {
    Descr d{};
    d.rank = rank;
    d.parentObj = group;
    if (t.coll) {
      d.type = abi::kColl;
      if constexpr (requires { d.coll.commHash; }) {
        d.coll.name = v1to3_name;
        d.coll.commHash = v1to3_hash;
      }
      d.coll.seqNumber = t.seq_number;
      d.coll.func = t.func;
      d.coll.sendBuff = t.send;
      d.coll.recvBuff = t.recv;
      d.coll.count = t.count;
      d.coll.root = t.root_or_peer;
      d.coll.datatype = t.datatype;
    } else {
      d.type = abi::kP2p;
      if constexpr (requires { d.p2p.commHash; }) {
        d.p2p.name = v1to3_name;
        d.p2p.commHash = v1to3_hash;
      }
      d.p2p.func = t.func;
      d.p2p.buff = t.send != nullptr ? const_cast<void*>(t.send) : t.recv;
      d.p2p.datatype = t.datatype;
      d.p2p.count = t.count;
      d.p2p.peer = t.root_or_peer;
    }
    return StartAs<Table>(ctx, d);
  }

  int version_;
  void* lib_ = nullptr;
  void* table_ = nullptr;
  int mask_ = 0;
};

}  // namespace ncclrr::profiler::test
