// Send/recv. The k-th send from a to b pairs with the k-th recv at b from a, as in NCCL. Each
// ordered pair has a channel of slots; a message moves in rounds through its slot's staging chunk:
//   sender:   arrived (1) -> staged round k (2k + 2) ... -> done after staging the last round
//   receiver: arrived (1) -> consumed round k (2k + 3) ... -> done after the last round
// The sender stages round k once the receiver has arrived (k = 0) or consumed round k - 1, so a
// send buffer is read only once both sides have issued their calls. Messages whose sizes differ
// cannot complete (NCCL would wait for bytes that never come) and time out.
#include <algorithm>
#include <cstring>

#include "op.h"

namespace ncclrr::host {
namespace {

enum Phase { kClaim, kArrived, kMove, kStuck };

}  // namespace

bool AdvanceP2p(Op& op, WaitHint* hint) {
  CommRank& c = *op.comm;
  const Segment& seg = c.seg;
  const bool is_send = op.desc.kind == Kind::kSend;
  const int peer = op.desc.root;
  const int src = is_send ? c.rank : peer;
  const int dst = is_send ? peer : c.rank;
  const uint64_t slots = seg.hdr().p2p_slots;
  const uint64_t chunk = seg.hdr().p2p_chunk;
  P2pCell& cell = seg.p2p(src, dst, op.seq);
  std::atomic<uint64_t>& mine = is_send ? cell.send_state : cell.recv_state;
  std::atomic<uint64_t>& theirs = is_send ? cell.recv_state : cell.send_state;
  auto who = [&] {
    return std::string(is_send ? "send to " : "recv from ") + std::to_string(peer) + " #" +
           std::to_string(op.seq);
  };
  bool progressed = false;
  for (;;) {
    const uint32_t epoch = seg.hdr().epoch.load(std::memory_order_acquire);
    switch (op.phase) {
      case kClaim:
        if (op.seq >= slots &&
            (cell.send_state.load(std::memory_order_acquire) < Stamp(op.seq - slots, kStepDone) ||
             cell.recv_state.load(std::memory_order_acquire) < Stamp(op.seq - slots, kStepDone))) {
          NoteBlocked(op, hint, epoch, "waited for its channel",
                      "rank " + std::to_string(peer) + " has not finished " + who() + " - " +
                          std::to_string(slots));
          return progressed;
        }
        (is_send ? cell.send_desc : cell.recv_desc) = op.desc;
        mine.store(Stamp(op.seq, kStepArrived), std::memory_order_release);
        seg.Bump();
        op.phase = kArrived;
        break;
      case kArrived: {
        if (theirs.load(std::memory_order_acquire) < Stamp(op.seq, kStepArrived)) {
          NoteBlocked(op, hint, epoch, "waited for its peer",
                      "rank " + std::to_string(peer) + " has not issued the matching " +
                          (is_send ? "recv" : "send") + " (" + who() + ")");
          return progressed;
        }
        const OpDesc& other = is_send ? cell.recv_desc : cell.send_desc;
        if (other.in_bytes != op.desc.in_bytes) {
          op.phase = kStuck;
          break;
        }
        op.rounds = std::max<uint64_t>(1, (op.desc.in_bytes + chunk - 1) / chunk);
        op.round = 0;
        op.phase = kMove;
        break;
      }
      case kMove: {
        const uint64_t a = op.round * chunk;
        const uint64_t len = op.desc.in_bytes > a ? std::min(chunk, op.desc.in_bytes - a) : 0;
        const bool last = op.round + 1 == op.rounds;
        // Sender waits for the receiver to be ready for round k; receiver for round k's data.
        const uint64_t need = is_send ? Stamp(op.seq, uint32_t(2 * op.round + 1))
                                      : Stamp(op.seq, uint32_t(2 * op.round + 2));
        if (theirs.load(std::memory_order_acquire) < need) {
          NoteBlocked(op, hint, epoch, "waited for data",
                      "rank " + std::to_string(peer) + " stalled (" + who() + ")");
          return progressed;
        }
        char* stage = seg.p2p_stage(src, dst, op.seq);
        if (is_send) {
          if (len) std::memcpy(stage, static_cast<const char*>(op.send) + a, len);
          mine.store(last ? Stamp(op.seq, kStepDone) : Stamp(op.seq, uint32_t(2 * op.round + 2)),
                     std::memory_order_release);
        } else {
          if (len) std::memcpy(static_cast<char*>(op.recv) + a, stage, len);
          mine.store(last ? Stamp(op.seq, kStepDone) : Stamp(op.seq, uint32_t(2 * op.round + 3)),
                     std::memory_order_release);
        }
        seg.Bump();
        if (last) {
          FinishOp(op, ncclSuccess);
          return true;
        }
        ++op.round;
        break;
      }
      case kStuck: {
        const OpDesc& other = is_send ? cell.recv_desc : cell.send_desc;
        NoteBlocked(op, hint, epoch, "cannot complete",
                    "send and recv sizes differ: " + std::to_string(op.desc.in_bytes) +
                        " bytes here, " + std::to_string(other.in_bytes) + " bytes at rank " +
                        std::to_string(peer) + " (" + who() + ")");
        return progressed;
      }
    }
    progressed = true;
    op.blocked_since = 0;
  }
}

}  // namespace ncclrr::host
