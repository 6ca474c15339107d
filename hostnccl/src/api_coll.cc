// Collective, point-to-point and group entry points. pncclX are the strong definitions; ncclX are
// weak aliases, as in NCCL, so an interposer can define ncclX and forward to pncclX.
#include <string>

#include "api_visibility.h"
#include "env.h"
#include "group.h"
#include "ncclrr/hostnccl/reduce.h"
#include "op.h"

using namespace ncclrr::host;

namespace {

bool IsRooted(Kind k) {
  return k == Kind::kBroadcast || k == Kind::kReduce || k == Kind::kGather || k == Kind::kScatter;
}
bool IsReducing(Kind k) {
  return k == Kind::kAllReduce || k == Kind::kReduce || k == Kind::kReduceScatter;
}

ncclResult_t Invalid(const std::string& why) {
  SetLastError(why);
  return ncclInvalidArgument;
}

ncclResult_t Issue(Kind kind, const void* send, void* recv, size_t count, ncclDataType_t dtype,
                   ncclRedOp_t redop, int root, ncclComm_t comm, cudaStream_t stream) {
  if (NoopMode()) return ncclSuccess;
  CommRank* c = Impl(comm);
  if (c == nullptr) return Invalid("invalid communicator");
  if (DtypeSize(dtype) == 0) return Invalid("invalid datatype " + std::to_string(dtype));
  const bool p2p = kind == Kind::kSend || kind == Kind::kRecv;
  if ((IsRooted(kind) || p2p) && (root < 0 || root >= c->nranks)) {
    return Invalid(std::string(p2p ? "peer " : "root ") + std::to_string(root) + " out of range");
  }
  Op op;
  op.desc.kind = kind;
  op.desc.dtype = uint8_t(dtype);
  op.desc.root = root;
  op.desc.count = count;
  op.desc.scalar = 1.0;
  if (IsReducing(kind)) {
    if (redop >= 0 && redop < ncclNumOps) {
      op.desc.redop = uint8_t(redop);
    } else {
      const size_t idx = size_t(redop) - ncclNumOps;
      if (redop < ncclNumOps || idx >= c->premul.size() || !c->premul[idx].live) {
        return Invalid("invalid reduction op " + std::to_string(redop));
      }
      const PreMulOp& pm = c->premul[idx];
      if (pm.dtype != dtype) return Invalid("PreMulSum op used with another datatype");
      op.desc.redop = uint8_t(RedKind::kPreMulSum);
      op.desc.scalar = pm.value;
      op.device_scalar = pm.device;
    }
  }
  op.desc.in_bytes = ContributedBytes(op.desc, c->rank, c->nranks);
  op.send = send;
  op.recv = recv;
  return Submit(comm, std::move(op), stream);
}

}  // namespace

extern "C" {

ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                            ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                            cudaStream_t stream) {
  return Issue(Kind::kAllReduce, sendbuff, recvbuff, count, datatype, op, 0, comm, stream);
}

ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                            ncclDataType_t datatype, int root, ncclComm_t comm,
                            cudaStream_t stream) {
  return Issue(Kind::kBroadcast, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
}

ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root,
                        ncclComm_t comm, cudaStream_t stream) {
  if (NoopMode()) return ncclSuccess;
  // Through the PLT, as NCCL does: an interposer sees this as a second, nested call.
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                         cudaStream_t stream) {
  return Issue(Kind::kReduce, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
}

ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                            ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return Issue(Kind::kAllGather, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, comm, stream);
}

ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                cudaStream_t stream) {
  return Issue(Kind::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 0, comm, stream);
}

ncclResult_t pncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return Issue(Kind::kAlltoAll, sendbuff, recvbuff, count, datatype, ncclSum, 0, comm, stream);
}

ncclResult_t pncclGather(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return Issue(Kind::kGather, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
}

ncclResult_t pncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return Issue(Kind::kScatter, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
}

ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                       ncclComm_t comm, cudaStream_t stream) {
  return Issue(Kind::kSend, sendbuff, nullptr, count, datatype, ncclSum, peer, comm, stream);
}

ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                       ncclComm_t comm, cudaStream_t stream) {
  return Issue(Kind::kRecv, nullptr, recvbuff, count, datatype, ncclSum, peer, comm, stream);
}

ncclResult_t pncclGroupStart() {
  if (NoopMode()) return ncclSuccess;
  return GroupStart();
}

ncclResult_t pncclGroupEnd() {
  if (NoopMode()) return ncclSuccess;
  return GroupEnd(false);
}

ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  if (simInfo != nullptr) simInfo->estimatedTime = 0.0f;
  if (NoopMode()) return ncclSuccess;
  return GroupEnd(true);
}

}  // extern "C"

NCCLRR_WEAK_ALIAS(ncclAllReduce)
NCCLRR_WEAK_ALIAS(ncclBroadcast)
NCCLRR_WEAK_ALIAS(ncclBcast)
NCCLRR_WEAK_ALIAS(ncclReduce)
NCCLRR_WEAK_ALIAS(ncclAllGather)
NCCLRR_WEAK_ALIAS(ncclReduceScatter)
NCCLRR_WEAK_ALIAS(ncclAlltoAll)
NCCLRR_WEAK_ALIAS(ncclGather)
NCCLRR_WEAK_ALIAS(ncclScatter)
NCCLRR_WEAK_ALIAS(ncclSend)
NCCLRR_WEAK_ALIAS(ncclRecv)
NCCLRR_WEAK_ALIAS(ncclGroupStart)
NCCLRR_WEAK_ALIAS(ncclGroupEnd)
NCCLRR_WEAK_ALIAS(ncclGroupSimulateEnd)
