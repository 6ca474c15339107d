#pragma once
// NCCL's profiler plugin interface, versions 1 to 5, declared here from the structure of
// NVIDIA/nccl's src/include/plugin/profiler/profiler_v*.h (NCCL 2.23 to 2.28): names and field
// order follow NCCL so the layouts match; nothing is included from NCCL.
//
//   NCCL   looks for (newest first)      what it tells the plugin
//   2.23   ncclProfiler_v1               task events; func/datatype as enum values; redop
//   2.24   v2, v1                        func/datatype as strings; no redop
//   2.26   v3, v2, v1                    kernel channel events
//   2.27   v4, ...                       comm hash, name and size at init, not per event
//   2.28   v5, ...                       API events (the application's calls, in program order,
//                                        with their stream), commId at init
// NCCL picks the newest version the plugin exports, calls init once per communicator, and treats
// a non-zero init result as "no profiler" for the whole process (2.27+), so init never fails.
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace ncclrr::profiler::abi {

using Result = int;  // ncclResult_t; 0 is ncclSuccess
using Logger = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt,
                        ...);

// Event types (ncclProfile*), a bit mask in eActivationMask.
enum : int {
  kGroup = 1 << 0,  // a kernel plan's group of tasks (at launch)
  kColl = 1 << 1,   // a collective task (at launch)
  kP2p = 1 << 2,    // a point-to-point task (at launch)
  kProxyOp = 1 << 3,
  kProxyStep = 1 << 4,
  kProxyCtrl = 1 << 5,
  kKernelCh = 1 << 6,       // v3+
  kNetPlugin = 1 << 7,      // v3+
  kGroupApi = 1 << 8,       // v5: the application's outermost group
  kCollApi = 1 << 9,        // v5: a collective call, on the calling thread
  kP2pApi = 1 << 10,        // v5: a send/recv call, on the calling thread
  kKernelLaunch = 1 << 11,  // v5
};

// ncclProfilerEventState_t values that matter here.
enum : int { kStateGroupStartApiStop = 23, kStateGroupEndApiStart = 24 };

// ---- v5 (NCCL 2.28) ----
struct DescrV5 {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graphCaptured;
    } collApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
    } p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
    struct {
      uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
      void* parentGroup;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
      void* parentGroup;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
      uint64_t pTimer;
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
};

// State arguments are laid out alike in v4 and v5.
union StateArgsV4 {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    uint64_t pTimer;
  } kernelCh;
};
using StateArgsV5 = StateArgsV4;

struct ProfilerV5 {
  const char* name;
  Result (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName,
                 int nNodes, int nranks, int rank, Logger logfn);
  Result (*startEvent)(void* context, void** eHandle, DescrV5* eDescr);
  Result (*stopEvent)(void* eHandle);
  Result (*recordEventState)(void* eHandle, int eState, StateArgsV5* eStateArgs);
  Result (*finalize)(void* context);
};

// ---- v4 (NCCL 2.27) ----
struct DescrV4 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
      uint64_t pTimer;
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
};

struct ProfilerV4 {
  const char* name;
  Result (*init)(void** context, int* eActivationMask, const char* commName, uint64_t commHash,
                 int nNodes, int nranks, int rank, Logger logfn);
  Result (*startEvent)(void* context, void** eHandle, DescrV4* eDescr);
  Result (*stopEvent)(void* eHandle);
  Result (*recordEventState)(void* eHandle, int eState, StateArgsV4* eStateArgs);
  Result (*finalize)(void* context);
};

// ---- v3 (NCCL 2.26) ----
struct DescrV3 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name;
      uint64_t commHash;
      uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    struct {
      const char* name;
      uint64_t commHash;
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
};

// v1 to v3 state arguments.
union StateArgsV1 {
  struct {
    size_t transSize;
    int steps;
  } proxyOp;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
};

struct ProfilerV3 {
  const char* name;
  Result (*init)(void** context, int* eActivationMask);
  Result (*startEvent)(void* context, void** eHandle, DescrV3* eDescr);
  Result (*stopEvent)(void* eHandle);
  Result (*recordEventState)(void* eHandle, int eState, StateArgsV1* eStateArgs);
  Result (*finalize)(void* context);
};

// ---- v2 (NCCL 2.24, 2.25) ----
struct DescrV2 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name;
      uint64_t commHash;
      uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      size_t trafficBytes;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    struct {
      const char* name;
      uint64_t commHash;
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
  };
};

struct ProfilerV2 {
  const char* name;
  Result (*init)(void** context, int* eActivationMask);
  Result (*startEvent)(void* context, void** eHandle, DescrV2* eDescr);
  Result (*stopEvent)(void* eHandle);
  Result (*recordEventState)(void* eHandle, int eState, StateArgsV1* eStateArgs);
  Result (*finalize)(void* context);
};

// ---- v1 (NCCL 2.23): func and datatype are ncclFunc_t / ncclDataType_t values ----
struct DescrV1 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name;
      uint64_t commHash;
      uint64_t seqNumber;
      uint8_t func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      uint8_t datatype;
      uint32_t op;
      size_t trafficBytes;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      uint8_t algo;
      uint8_t proto;
      int isCollnet;
      int isNvls;
    } coll;
    struct {
      const char* name;
      uint64_t commHash;
      uint8_t func;
      void* buff;
      uint8_t datatype;
      size_t count;
      int peer;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
  };
};

struct ProfilerV1 {
  const char* name;
  Result (*init)(void** context, int* eActivationMask);
  Result (*startEvent)(void* context, void** eHandle, DescrV1* eDescr);
  Result (*stopEvent)(void* eHandle);
  Result (*recordEventState)(void* eHandle, int eState, StateArgsV1* eStateArgs);
  Result (*finalize)(void* context);
};

// The union starts at the same offset in every version: a v5 descriptor's proxy, kernel-channel
// and net-plugin members can be handed to a v4 plugin as they are.
static_assert(offsetof(DescrV5, coll) == 24 && offsetof(DescrV4, coll) == 24);
static_assert(offsetof(DescrV3, coll) == 24 && offsetof(DescrV1, coll) == 24);

// ncclFunc_t of NCCL 2.23 (the v1 descriptor's `func`).
enum : uint8_t {
  kFuncBroadcast = 0,
  kFuncReduce = 1,
  kFuncAllGather = 2,
  kFuncReduceScatter = 3,
  kFuncAllReduce = 4,
  kFuncSendRecv = 5,
  kFuncSend = 6,
  kFuncRecv = 7,
};

}  // namespace ncclrr::profiler::abi
