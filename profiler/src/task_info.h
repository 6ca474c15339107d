// What a task event says, read alike from every descriptor version.
#pragma once
#include <type_traits>

#include "name_maps.h"
#include "profiler_abi.h"

namespace ncclrr::profiler {

struct TaskInfo {
  bool is_coll = true;
  Api api = Api::kUnknown;
  uint8_t dtype = kUnknownDtype;
  uint64_t count = 0;
  int root_peer = -1;
  const void* send = nullptr;
  void* recv = nullptr;
  int32_t op = -1;
  uint64_t hash = 0;
  bool has_hash = false;
  const char* name = nullptr;
};

template <typename D>
TaskInfo CollTask(const D& d) {
  TaskInfo t;
  t.api = ApiFromFuncName(d.coll.func);
  t.dtype = DtypeFromName(d.coll.datatype);
  t.count = d.coll.count;
  t.root_peer = d.coll.root;
  t.send = d.coll.sendBuff;
  t.recv = d.coll.recvBuff;
  if constexpr (requires { d.coll.commHash; }) {
    t.hash = d.coll.commHash;
    t.has_hash = true;
    t.name = d.coll.name;
  }
  return t;
}
template <>
inline TaskInfo CollTask(const abi::DescrV1& d) {
  TaskInfo t;
  t.api = ApiFromFuncValue(d.coll.func);
  t.dtype = d.coll.datatype;
  t.count = d.coll.count;
  t.root_peer = d.coll.root;
  t.send = d.coll.sendBuff;
  t.recv = d.coll.recvBuff;
  t.op = static_cast<int32_t>(d.coll.op);
  t.hash = d.coll.commHash;
  t.has_hash = true;
  t.name = d.coll.name;
  return t;
}

template <typename D>
TaskInfo P2pTask(const D& d) {
  TaskInfo t;
  t.is_coll = false;
  if constexpr (std::is_same_v<D, abi::DescrV1>) {
    t.api = ApiFromFuncValue(d.p2p.func);
    t.dtype = d.p2p.datatype;
  } else {
    t.api = ApiFromFuncName(d.p2p.func);
    t.dtype = DtypeFromName(d.p2p.datatype);
  }
  t.count = d.p2p.count;
  t.root_peer = d.p2p.peer;
  if (t.api == Api::kSend) {
    t.send = d.p2p.buff;
  } else {
    t.recv = d.p2p.buff;
  }
  if constexpr (requires { d.p2p.commHash; }) {
    t.hash = d.p2p.commHash;
    t.has_hash = true;
    t.name = d.p2p.name;
  }
  return t;
}

}  // namespace ncclrr::profiler
