#include "group.h"

#include <string>
#include <utility>
#include <vector>

#include "stream.h"

namespace ncclrr::host {
namespace {

struct PendingCall {
  std::shared_ptr<CommRank> comm;  // held so a destroy inside the group cannot free it
  HostStream* stream;
  Op op;
};

struct GroupState {
  int depth = 0;
  std::vector<PendingCall> calls;
  std::vector<std::function<ncclResult_t()>> comm_steps;
  bool nonblocking = false;
};

GroupState& Group() {
  thread_local GroupState g;
  return g;
}

std::string& LastErrorText() {
  thread_local std::string text;
  return text;
}

// Takes the op's place in its communicator's order: the next collective position, or the next
// message index towards / from its peer.
void AssignSeq(Op& op) {
  CommRank& c = *op.comm;
  switch (op.desc.kind) {
    case Kind::kSend:
      op.seq = c.next_send[op.desc.root]++;
      break;
    case Kind::kRecv:
      op.seq = c.next_recv[op.desc.root]++;
      break;
    default:
      op.seq = c.next_coll++;
      break;
  }
  c.pending_ops.fetch_add(1, std::memory_order_acq_rel);
}

ncclResult_t DriveSteps(std::vector<std::function<ncclResult_t()>>& steps) {
  std::vector<ncclResult_t> results(steps.size(), ncclInProgress);
  ncclResult_t first = ncclSuccess;
  DriveUntil([&] {
    bool busy = false;
    for (size_t i = 0; i < steps.size(); ++i) {
      if (results[i] != ncclInProgress) continue;
      results[i] = steps[i]();
      if (results[i] == ncclInProgress)
        busy = true;
      else if (results[i] != ncclSuccess && first == ncclSuccess)
        first = results[i];
    }
    return busy ? ncclInProgress : ncclSuccess;
  });
  return first;
}

}  // namespace

CommRank* Impl(ncclComm_t comm) {
  if (comm == nullptr || comm->magic != kCommMagic) return nullptr;
  return comm->impl.get();
}

void SetLastError(const std::string& text) { LastErrorText() = text; }
const char* LastError() { return LastErrorText().c_str(); }

bool InGroup() { return Group().depth > 0; }

ncclResult_t GroupStart() {
  ++Group().depth;
  return ncclSuccess;
}

ncclResult_t GroupEnd(bool simulate) {
  GroupState& g = Group();
  if (g.depth == 0) {
    SetLastError("ncclGroupEnd without ncclGroupStart");
    return ncclInvalidUsage;
  }
  if (--g.depth > 0) return ncclSuccess;
  std::vector<PendingCall> calls = std::move(g.calls);
  std::vector<std::function<ncclResult_t()>> steps = std::move(g.comm_steps);
  const bool nonblocking = g.nonblocking;
  g = GroupState{};
  if (simulate) return ncclSuccess;  // nothing was issued, so nothing took a position
  ncclResult_t r = steps.empty() ? ncclSuccess : DriveSteps(steps);
  // One task per stream, in the order the streams were first used.
  std::vector<std::pair<HostStream*, std::unique_ptr<Task>>> tasks;
  for (PendingCall& call : calls) {
    AssignSeq(call.op);
    auto it = tasks.begin();
    while (it != tasks.end() && it->first != call.stream) ++it;
    if (it == tasks.end()) {
      tasks.emplace_back(call.stream, std::make_unique<Task>());
      it = tasks.end() - 1;
    }
    it->second->ops.push_back(std::move(call.op));
  }
  for (auto& [stream, task] : tasks) Enqueue(stream, std::move(task), false);
  if (!tasks.empty()) ProgressAll(nullptr);
  if (r != ncclSuccess) return r;
  return nonblocking ? ncclInProgress : ncclSuccess;
}

ncclResult_t Submit(ncclComm_t comm, Op op, cudaStream_t stream) {
  CommRank* c = Impl(comm);
  if (c == nullptr) {
    SetLastError("invalid communicator");
    return ncclInvalidArgument;
  }
  if (c->init_step) {
    // A nonblocking init still running: NCCL requires the application to wait for it; be lenient.
    ncclResult_t r = DriveUntil([c] { return c->StepInit(); });
    if (r != ncclSuccess) return r;
  }
  if (c->aborted.load() || c->revoked.load()) {
    SetLastError("communicator was aborted or revoked");
    return ncclInvalidUsage;
  }
  if (c->AsyncError() != ncclSuccess) return c->AsyncError();
  op.comm = comm->impl;
  HostStream* s = StreamFor(stream, c->device);
  GroupState& g = Group();
  if (g.depth > 0) {
    g.nonblocking |= !c->blocking;
    g.calls.push_back(PendingCall{comm->impl, s, std::move(op)});
    return ncclSuccess;
  }
  AssignSeq(op);
  auto task = std::make_unique<Task>();
  task->ops.push_back(std::move(op));
  Enqueue(s, std::move(task));
  return c->blocking ? ncclSuccess : ncclInProgress;
}

ncclResult_t RunCommStep(std::function<ncclResult_t()> step, bool nonblocking) {
  GroupState& g = Group();
  if (nonblocking) {
    g.nonblocking |= g.depth > 0;
    return ncclInProgress;  // the communicator's StepInit carries it on
  }
  if (g.depth > 0) {
    g.comm_steps.push_back(std::move(step));
    return ncclSuccess;
  }
  return DriveUntil(step);
}

}  // namespace ncclrr::host
