// Wrappers of the collectives and of point-to-point calls. In-place is what nccl.h defines for
// each API (trace/include/ncclrr/trace/in_place.h), judged once the record holds the buffers and
// the root.
// NCCLRR_SKETCH_BEFORE (record --sketch) reads the filled record just before it is forwarded.
#include <nccl.h>

#include "call_path.h"
#include "sketch_hooks.h"

using namespace ncclrr;
using namespace ncclrr::interpose;

NCCLRR_API ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                      ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                      cudaStream_t stream) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclAllReduce, sendbuff, recvbuff, count, datatype, op, comm,
                                  stream);
  CallBuilder call(Api::kAllReduce, comm, stream, NCCLRR_CALLER);
  call.Data(sendbuff, recvbuff, count, datatype);
  call.RedOp(op);
  call.MarkInPlace();
  NCCLRR_SKETCH_BEFORE(call);
  return call.Finish(lib->fn.ncclAllReduce(sendbuff, recvbuff, count, datatype, op, comm, stream));
}

NCCLRR_API ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                      ncclDataType_t datatype, int root, ncclComm_t comm,
                                      cudaStream_t stream) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclBroadcast, sendbuff, recvbuff, count, datatype, root, comm,
                                  stream);
  CallBuilder call(Api::kBroadcast, comm, stream, NCCLRR_CALLER);
  call.Data(sendbuff, recvbuff, count, datatype);
  call.rec.root_peer = root;
  call.MarkInPlace();
  NCCLRR_SKETCH_BEFORE(call);
  return call.Finish(
      lib->fn.ncclBroadcast(sendbuff, recvbuff, count, datatype, root, comm, stream));
}

NCCLRR_API ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root,
                                  ncclComm_t comm, cudaStream_t stream) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclBcast, buff, count, datatype, root, comm, stream);
  CallBuilder call(Api::kBcast, comm, stream, NCCLRR_CALLER);
  call.Data(buff, buff, count, datatype);
  call.rec.root_peer = root;
  call.MarkInPlace();
  NCCLRR_SKETCH_BEFORE(call);
  return call.Finish(lib->fn.ncclBcast(buff, count, datatype, root, comm, stream));
}

NCCLRR_API ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                                   ncclDataType_t datatype, ncclRedOp_t op, int root,
                                   ncclComm_t comm, cudaStream_t stream) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclReduce, sendbuff, recvbuff, count, datatype, op, root, comm,
                                  stream);
  CallBuilder call(Api::kReduce, comm, stream, NCCLRR_CALLER);
  call.Data(sendbuff, recvbuff, count, datatype);
  call.RedOp(op);
  call.rec.root_peer = root;
  call.MarkInPlace();
  NCCLRR_SKETCH_BEFORE(call);
  return call.Finish(
      lib->fn.ncclReduce(sendbuff, recvbuff, count, datatype, op, root, comm, stream));
}

NCCLRR_API ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                      ncclDataType_t datatype, ncclComm_t comm,
                                      cudaStream_t stream) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclAllGather, sendbuff, recvbuff, sendcount, datatype, comm,
                                  stream);
  CallBuilder call(Api::kAllGather, comm, stream, NCCLRR_CALLER);
  call.Data(sendbuff, recvbuff, sendcount, datatype);
  call.MarkInPlace();
  NCCLRR_SKETCH_BEFORE(call);
  return call.Finish(lib->fn.ncclAllGather(sendbuff, recvbuff, sendcount, datatype, comm, stream));
}

NCCLRR_API ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                          ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                          cudaStream_t stream) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclReduceScatter, sendbuff, recvbuff, recvcount, datatype, op,
                                  comm, stream);
  CallBuilder call(Api::kReduceScatter, comm, stream, NCCLRR_CALLER);
  call.Data(sendbuff, recvbuff, recvcount, datatype);
  call.RedOp(op);
  call.MarkInPlace();
  NCCLRR_SKETCH_BEFORE(call);
  return call.Finish(
      lib->fn.ncclReduceScatter(sendbuff, recvbuff, recvcount, datatype, op, comm, stream));
}

NCCLRR_API ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                                     ncclDataType_t datatype, ncclComm_t comm,
                                     cudaStream_t stream) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclAlltoAll, sendbuff, recvbuff, count, datatype, comm, stream);
  CallBuilder call(Api::kAlltoAll, comm, stream, NCCLRR_CALLER);
  call.Data(sendbuff, recvbuff, count, datatype);
  call.MarkInPlace();
  NCCLRR_SKETCH_BEFORE(call);
  return call.Finish(lib->fn.ncclAlltoAll(sendbuff, recvbuff, count, datatype, comm, stream));
}

NCCLRR_API ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count,
                                   ncclDataType_t datatype, int root, ncclComm_t comm,
                                   cudaStream_t stream) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclGather, sendbuff, recvbuff, count, datatype, root, comm,
                                  stream);
  CallBuilder call(Api::kGather, comm, stream, NCCLRR_CALLER);
  call.Data(sendbuff, recvbuff, count, datatype);
  call.rec.root_peer = root;
  call.MarkInPlace();
  NCCLRR_SKETCH_BEFORE(call);
  return call.Finish(lib->fn.ncclGather(sendbuff, recvbuff, count, datatype, root, comm, stream));
}

NCCLRR_API ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                                    ncclDataType_t datatype, int root, ncclComm_t comm,
                                    cudaStream_t stream) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclScatter, sendbuff, recvbuff, count, datatype, root, comm,
                                  stream);
  CallBuilder call(Api::kScatter, comm, stream, NCCLRR_CALLER);
  call.Data(sendbuff, recvbuff, count, datatype);
  call.rec.root_peer = root;
  call.MarkInPlace();
  NCCLRR_SKETCH_BEFORE(call);
  return call.Finish(lib->fn.ncclScatter(sendbuff, recvbuff, count, datatype, root, comm, stream));
}

NCCLRR_API ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype,
                                 int peer, ncclComm_t comm, cudaStream_t stream) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclSend, sendbuff, count, datatype, peer, comm, stream);
  CallBuilder call(Api::kSend, comm, stream, NCCLRR_CALLER);
  call.Data(sendbuff, nullptr, count, datatype);
  call.rec.root_peer = peer;
  NCCLRR_SKETCH_BEFORE(call);
  return call.Finish(lib->fn.ncclSend(sendbuff, count, datatype, peer, comm, stream));
}

NCCLRR_API ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                                 ncclComm_t comm, cudaStream_t stream) {
  NCCLRR_FORWARD_UNLESS_RECORDING(ncclRecv, recvbuff, count, datatype, peer, comm, stream);
  CallBuilder call(Api::kRecv, comm, stream, NCCLRR_CALLER);
  call.Data(nullptr, recvbuff, count, datatype);
  call.rec.root_peer = peer;
  NCCLRR_SKETCH_BEFORE(call);
  return call.Finish(lib->fn.ncclRecv(recvbuff, count, datatype, peer, comm, stream));
}
