#include "op.h"

#include <cinttypes>
#include <cstdio>

#include "env.h"
#include "ncclrr/hostnccl/reduce.h"

namespace ncclrr::host {

uint64_t ContributedBytes(const OpDesc& d, int rank, int nranks) {
  const uint64_t bytes = d.count * DtypeSize(d.dtype);
  switch (d.kind) {
    case Kind::kBroadcast:
      return d.root == rank ? bytes : 0;
    case Kind::kScatter:
      return d.root == rank ? bytes * nranks : 0;
    case Kind::kReduceScatter:
    case Kind::kAlltoAll:
      return bytes * nranks;
    default:
      return bytes;
  }
}

uint64_t ReceivedBytes(const OpDesc& d, int rank, int nranks) {
  const uint64_t bytes = d.count * DtypeSize(d.dtype);
  switch (d.kind) {
    case Kind::kReduce:
      return d.root == rank ? bytes : 0;
    case Kind::kGather:
      return d.root == rank ? bytes * nranks : 0;
    case Kind::kAllGather:
    case Kind::kAlltoAll:
      return bytes * nranks;
    default:
      return bytes;
  }
}

void FinishOp(Op& op, ncclResult_t r) {
  op.done = true;
  op.result = r;
  op.comm->pending_ops.fetch_sub(1, std::memory_order_acq_rel);
}

bool FailIfBroken(Op& op) {
  CommRank& c = *op.comm;
  if (c.aborted.load(std::memory_order_relaxed) || c.revoked.load(std::memory_order_relaxed)) {
    FinishOp(op, ncclInvalidUsage);
    return true;
  }
  if (c.AsyncError() != ncclSuccess) {
    FinishOp(op, c.AsyncError());
    return true;
  }
  return false;
}

void NoteBlocked(Op& op, WaitHint* hint, uint32_t epoch, const char* phase,
                 const std::string& why) {
  CommRank& c = *op.comm;
  if (hint != nullptr && hint->comm == nullptr) {
    hint->comm = op.comm;
    hint->epoch = epoch;
  }
  const int aborter = c.seg.hdr().aborted_by.load(std::memory_order_relaxed);
  const int64_t now = NowNs();
  std::string msg;
  ncclResult_t r = ncclRemoteError;
  if (aborter >= 0) {
    msg = c.Label() + ": rank " + std::to_string(aborter) + " aborted the communicator";
  } else if (op.blocked_since == 0) {
    op.blocked_since = now;
    return;
  } else if (now - op.blocked_since > TimeoutNs()) {
    char head[160];
    std::snprintf(
        head, sizeof(head),
        ": %s #%" PRIu64 " (count %" PRIu64 ") %s for %" PRId64 " ms: ", KindName(op.desc.kind),
        op.seq, op.desc.count, phase, (now - op.blocked_since) / 1000000);
    msg = c.Label() + head + why;
  } else {
    return;
  }
  c.SetAsyncError(r, msg);
  FinishOp(op, r);
}

bool AdvanceOp(Op& op, WaitHint* hint) {
  if (op.done) return false;
  if (FailIfBroken(op)) return true;
  if (op.desc.kind == Kind::kSend || op.desc.kind == Kind::kRecv) return AdvanceP2p(op, hint);
  return AdvanceColl(op, hint);
}

}  // namespace ncclrr::host
