// The plugin's entry points in each interface version (events.cc), exported as NCCL's
// ncclProfiler_v1 ... ncclProfiler_v5 tables by exports.cc.
//
// What becomes a CallRecord:
//  * v5 (NCCL 2.28+): the CollApi / P2pApi events NCCL raises inside the application's call, on
//    its thread, in program order (func, count, datatype, root, stream, graph capture), completed
//    by the task event NCCL raises at launch (buffers, peer). The call is numbered at its API
//    event, as NCCL pairs it. A captured call has no task event at capture: it is written at its
//    API event's end, as a template (capture = 1) without a sequence number.
//  * v1-v4 (NCCL 2.23-2.27): the task events at launch (in launch order, which NCCL may reorder
//    within a group; AllGather and Broadcast counts are in bytes with datatype int8 there).
// No version reports the reduction op except v1; records carry op = -1 when it is unknown.
#pragma once
#include "profiler_abi.h"

namespace ncclrr::profiler {

abi::Result InitV5(void** context, uint64_t comm_id, int* mask, const char* name, int nnodes,
                   int nranks, int rank, abi::Logger log);
abi::Result InitV4(void** context, int* mask, const char* name, uint64_t comm_hash, int nnodes,
                   int nranks, int rank, abi::Logger log);
abi::Result InitV3(void** context, int* mask);
abi::Result InitV2(void** context, int* mask);
abi::Result InitV1(void** context, int* mask);

abi::Result StartV5(void* context, void** handle, abi::DescrV5* d);
abi::Result StartV4(void* context, void** handle, abi::DescrV4* d);
abi::Result StartV3(void* context, void** handle, abi::DescrV3* d);
abi::Result StartV2(void* context, void** handle, abi::DescrV2* d);
abi::Result StartV1(void* context, void** handle, abi::DescrV1* d);

abi::Result StopEvent(void* handle);
abi::Result RecordStateV4(void* handle, int state, abi::StateArgsV4* args);  // v4 and v5
abi::Result RecordStateV1(void* handle, int state, abi::StateArgsV1* args);  // v1 to v3
abi::Result Finalize(void* context);

}  // namespace ncclrr::profiler
