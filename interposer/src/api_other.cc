// Wrappers of group scopes, registration, memory, reduction ops and queries.
//
// ncclGroupStart/ncclGroupEnd are the hottest calls after the collectives and touch only
// thread-local state: the calls inside a group carry its id and depth; a group's end is recorded
// only when it fails (or ends with ncclGroupSimulateEnd, which executes nothing).
// Queries (PyTorch's watchdog polls ncclCommGetAsyncError constantly) are counted per
// communicator; a change of the asynchronous error is recorded as an AsyncErrorChange call.
#include <nccl.h>

#include <cmath>
#include <cstring>
#include <type_traits>

#include "call_path.h"
#include "comm_lifecycle.h"
#include "gpu_timing_hooks.h"
#include "queries.h"
#include "sketch_hooks.h"

using namespace ncclrr;
using namespace ncclrr::interpose;

namespace {

double HalfToDouble(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  double v = exp == 0    ? std::ldexp(man, -24)
             : exp == 31 ? (man ? NAN : INFINITY)
                         : std::ldexp(man + 1024, exp - 25);
  return sign ? -v : v;
}

double Fp8ToDouble(uint8_t b, bool e4m3) {
  const int sign = b >> 7;
  double v;
  if (e4m3) {
    const int exp = (b >> 3) & 0xf, man = b & 7;
    v = (exp == 15 && man == 7) ? NAN
        : exp == 0              ? std::ldexp(man, -9)
                                : std::ldexp(man + 8, exp - 10);
  } else {
    return HalfToDouble(static_cast<uint16_t>(b << 8));
  }
  return sign ? -v : v;
}

// A host-resident PreMulSum scalar, widened to double.
double ScalarToDouble(const void* p, ncclDataType_t dt) {
  switch (dt) {
    case ncclInt8:
      return *static_cast<const int8_t*>(p);
    case ncclUint8:
      return *static_cast<const uint8_t*>(p);
    case ncclInt32:
      return *static_cast<const int32_t*>(p);
    case ncclUint32:
      return *static_cast<const uint32_t*>(p);
    case ncclInt64:
      return static_cast<double>(*static_cast<const int64_t*>(p));
    case ncclUint64:
      return static_cast<double>(*static_cast<const uint64_t*>(p));
    case ncclFloat16:
      return HalfToDouble(*static_cast<const uint16_t*>(p));
    case ncclFloat32:
      return *static_cast<const float*>(p);
    case ncclFloat64:
      return *static_cast<const double*>(p);
    case ncclBfloat16: {
      const uint32_t bits = uint32_t{*static_cast<const uint16_t*>(p)} << 16;
      float f;
      std::memcpy(&f, &bits, sizeof f);
      return f;
    }
    case ncclFloat8e4m3:
      return Fp8ToDouble(*static_cast<const uint8_t*>(p), true);
    case ncclFloat8e5m2:
      return Fp8ToDouble(*static_cast<const uint8_t*>(p), false);
    default:
      return 0;
  }
}

// Counts a query of the application; calls made by NCCL itself or nested ones are not counted.
void CountQuery(const NcclLibrary* lib, const void* caller, ncclComm_t comm, Api api) {
  if (t_state.busy != 0 || lib->object.range.Contains(caller)) return;
  CommState* cs = comm != nullptr ? Comms().Find(comm) : nullptr;
  CountProcessQuery(cs, api);
}

}  // namespace

// --- groups ------------------------------------------------------------------------------------

NCCLRR_API ncclResult_t ncclGroupStart() {
  const NcclLibrary* lib = Lib();
  if (lib == nullptr || lib->fn.ncclGroupStart == nullptr) return MissingFunction(__func__);
  const ncclResult_t r = lib->fn.ncclGroupStart();
  ThreadState& t = t_state;
  if (r == ncclSuccess && t.busy == 0 && !lib->object.range.Contains(NCCLRR_CALLER)) {
    if (t.group_depth++ == 0) t.group_id = (uint64_t{CurrentTid()} << 32) | ++t.group_counter;
  }
  return r;
}

NCCLRR_API ncclResult_t ncclGroupEnd() {
  const NcclLibrary* lib = Lib();
  if (lib == nullptr || lib->fn.ncclGroupEnd == nullptr) return MissingFunction(__func__);
  ThreadState& t = t_state;
  const GpuGroupEndScope gpu(t.group_depth == 1 && t.busy == 0);  // the group's kernels launch
  if (__builtin_expect(g_sketch_on, 0)) SketchGroupEndBefore();   // queued before-halves
  const ncclResult_t r = lib->fn.ncclGroupEnd();
  if (__builtin_expect(g_sketch_on, 0)) SketchGroupEndAfter(r);
  if (t.busy == 0 && t.group_depth > 0 && !lib->object.range.Contains(NCCLRR_CALLER)) {
    if (--t.group_depth == 0) {
      if (__builtin_expect(t.created_in_group || (r != ncclSuccess && r != ncclInProgress), 0))
        GroupEndSlow(r);
      t.group_id = 0;
      ClearGroupLog();
    }
  }
  return r;
}

NCCLRR_API ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclGroupSimulateEnd, simInfo);
  CallBuilder call(Api::kGroupSimulateEnd, nullptr, nullptr, NCCLRR_CALLER);
  const ncclResult_t r = lib->fn.ncclGroupSimulateEnd(simInfo);
  ThreadState& t = t_state;
  if (t.group_depth > 0 && --t.group_depth == 0) {
    RollBackGroup();  // nothing of this group runs: its calls give their numbers back
    if (GpuTimingOn()) GpuTimingDiscardGroup();
    t.group_id = 0;
    t.created_in_group = false;
  }
  return call.Finish(r);
}

// --- registration and memory -------------------------------------------------------------------

NCCLRR_API ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size,
                                         void** handle) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclCommRegister, comm, buff, size, handle);
  CallBuilder call(Api::kCommRegister, comm, nullptr, NCCLRR_CALLER);
  call.rec.sendbuff = reinterpret_cast<uint64_t>(buff);
  call.rec.count = size;
  const ncclResult_t r = lib->fn.ncclCommRegister(comm, buff, size, handle);
  if (r == ncclSuccess && handle != nullptr)
    call.rec.recvbuff = reinterpret_cast<uint64_t>(*handle);
  return call.Finish(r);
}

NCCLRR_API ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclCommDeregister, comm, handle);
  CallBuilder call(Api::kCommDeregister, comm, nullptr, NCCLRR_CALLER);
  call.rec.recvbuff = reinterpret_cast<uint64_t>(handle);
  return call.Finish(lib->fn.ncclCommDeregister(comm, handle));
}

NCCLRR_API ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size,
                                               ncclWindow_t* win, int winFlags) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclCommWindowRegister, comm, buff, size, win, winFlags);
  CallBuilder call(Api::kCommWindowRegister, comm, nullptr, NCCLRR_CALLER);
  call.rec.sendbuff = reinterpret_cast<uint64_t>(buff);
  call.rec.count = size;
  call.rec.aux = static_cast<uint8_t>(winFlags);
  const ncclResult_t r = lib->fn.ncclCommWindowRegister(comm, buff, size, win, winFlags);
  if (r == ncclSuccess && win != nullptr) call.rec.recvbuff = reinterpret_cast<uint64_t>(*win);
  return call.Finish(r);
}

NCCLRR_API ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclCommWindowDeregister, comm, win);
  CallBuilder call(Api::kCommWindowDeregister, comm, nullptr, NCCLRR_CALLER);
  call.rec.recvbuff = reinterpret_cast<uint64_t>(win);
  return call.Finish(lib->fn.ncclCommWindowDeregister(comm, win));
}

NCCLRR_API ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclMemAlloc, ptr, size);
  CallBuilder call(Api::kMemAlloc, nullptr, nullptr, NCCLRR_CALLER);
  call.rec.count = size;
  const ncclResult_t r = lib->fn.ncclMemAlloc(ptr, size);
  if (r == ncclSuccess && ptr != nullptr) call.rec.recvbuff = reinterpret_cast<uint64_t>(*ptr);
  return call.Finish(r);
}

NCCLRR_API ncclResult_t ncclMemFree(void* ptr) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclMemFree, ptr);
  CallBuilder call(Api::kMemFree, nullptr, nullptr, NCCLRR_CALLER);
  call.rec.sendbuff = reinterpret_cast<uint64_t>(ptr);
  return call.Finish(lib->fn.ncclMemFree(ptr));
}

// --- reduction ops -----------------------------------------------------------------------------

NCCLRR_API ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar,
                                                 ncclDataType_t datatype,
                                                 ncclScalarResidence_t residence, ncclComm_t comm) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclRedOpCreatePreMulSum, op, scalar, datatype, residence, comm);
  CallBuilder call(Api::kRedOpCreatePreMulSum, comm, nullptr, NCCLRR_CALLER);
  call.rec.dtype = static_cast<uint8_t>(datatype);
  call.rec.flags |= call_flags::kPreMulSum;
  const bool on_device = residence != ncclScalarHostImmediate;
  if (on_device) {
    call.rec.flags |= call_flags::kScalarOnDevice;
    call.rec.sendbuff = reinterpret_cast<uint64_t>(scalar);
  } else if (scalar != nullptr) {
    call.rec.scalar = ScalarToDouble(scalar, datatype);  // NCCL copies it now, so do we
  }
  const ncclResult_t r = lib->fn.ncclRedOpCreatePreMulSum(op, scalar, datatype, residence, comm);
  if (r == ncclSuccess && op != nullptr) {
    call.rec.op = static_cast<int32_t>(*op);
    if (CommState* cs = call.comm) {
      for (PreMulOp& p : cs->premul) {  // the op value may be reused after a destroy
        int32_t cur = p.op.load();
        if (cur != -1 && cur != call.rec.op) continue;
        p.scalar = call.rec.scalar;
        p.on_device = on_device;
        p.device_scalar = on_device ? scalar : nullptr;
        p.op.store(call.rec.op, std::memory_order_release);
        break;
      }
    }
  }
  return call.Finish(r);
}

NCCLRR_API ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclRedOpDestroy, op, comm);
  CallBuilder call(Api::kRedOpDestroy, comm, nullptr, NCCLRR_CALLER);
  call.rec.op = static_cast<int32_t>(op);
  const ncclResult_t r = lib->fn.ncclRedOpDestroy(op, comm);
  if (r == ncclSuccess && call.comm != nullptr)
    for (PreMulOp& p : call.comm->premul)
      if (p.op.load() == static_cast<int32_t>(op)) p.op.store(-1);
  return call.Finish(r);
}

// --- queries -----------------------------------------------------------------------------------

// A counted query: forwarded, then counted unless NCCL made it or it is nested.
template <auto kMember, Api kApi, typename... Args>
auto CountedQuery(const char* name, const void* caller, ncclComm_t comm, Args... args) {
  const NcclLibrary* lib = Lib();
  using Result = decltype((lib->fn.*kMember)(args...));
  if (lib == nullptr || lib->fn.*kMember == nullptr) {
    if constexpr (std::is_same_v<Result, ncclResult_t>) {
      return MissingFunction(name);
    } else {
      return "ncclrr: the real NCCL was not found";
    }
  }
  const Result r = (lib->fn.*kMember)(args...);
  CountQuery(lib, caller, comm, kApi);
  return r;
}

NCCLRR_API ncclResult_t ncclGetVersion(int* version) {
  return CountedQuery<&RealNccl::ncclGetVersion, Api::kGetVersion>(__func__, NCCLRR_CALLER, nullptr,
                                                                   version);
}

NCCLRR_API const char* ncclGetErrorString(ncclResult_t result) {
  return CountedQuery<&RealNccl::ncclGetErrorString, Api::kGetErrorString>(__func__, NCCLRR_CALLER,
                                                                           nullptr, result);
}

NCCLRR_API const char* ncclGetLastError(ncclComm_t comm) {
  return CountedQuery<&RealNccl::ncclGetLastError, Api::kGetLastError>(__func__, NCCLRR_CALLER,
                                                                       comm, comm);
}

NCCLRR_API ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  return CountedQuery<&RealNccl::ncclCommCount, Api::kCommCount>(__func__, NCCLRR_CALLER, comm,
                                                                 comm, count);
}

NCCLRR_API ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  return CountedQuery<&RealNccl::ncclCommCuDevice, Api::kCommCuDevice>(__func__, NCCLRR_CALLER,
                                                                       comm, comm, device);
}

NCCLRR_API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  return CountedQuery<&RealNccl::ncclCommUserRank, Api::kCommUserRank>(__func__, NCCLRR_CALLER,
                                                                       comm, comm, rank);
}

NCCLRR_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  const NcclLibrary* lib = Lib();
  if (lib == nullptr || lib->fn.ncclCommGetAsyncError == nullptr) return MissingFunction(__func__);
  const ncclResult_t r = lib->fn.ncclCommGetAsyncError(comm, asyncError);
  const void* caller = NCCLRR_CALLER;
  if (t_state.busy != 0 || lib->object.range.Contains(caller)) return r;
  CommState* cs = comm != nullptr ? Comms().Find(comm) : nullptr;
  if (cs == nullptr && comm != nullptr && r == ncclSuccess && Recording())
    cs = LookupCommSlow(comm);  // e.g. a nonblocking split whose handle NCCL just wrote
  CountProcessQuery(cs, Api::kCommGetAsyncError);
  if (__builtin_expect(g_sketch_on, 0) && r == ncclSuccess && asyncError != nullptr)
    SketchAsyncError(comm, *asyncError);  // parked after-call sketches of a nonblocking comm
  if (r == ncclSuccess && asyncError != nullptr && cs != nullptr &&
      cs->async_error.load(std::memory_order_relaxed) != *asyncError)
    AsyncErrorChanged(cs, *asyncError, caller);
  return r;
}
