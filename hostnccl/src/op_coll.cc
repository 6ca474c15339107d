// Collectives. Every rank, for position p of a communicator:
//   claim   the slot once all ranks finished position p - slots; publish the descriptor (arrived)
//   stage   after all arrived: copy round k of its own input into its staging chunk
//   compute after all staged round k: compute its own output for that input range
//   drain   after all computed round k: the staging chunks may be overwritten (round k + 1)
// Inputs are read only after every rank has arrived (a concurrent writer of a send buffer is
// seen exactly as on a GPU that has not started yet), and outputs are written only from staged
// copies, so in-place calls are safe. Each rank computes its own output using its own arguments
// (count, datatype, op, root): that is what defines the outcome of mismatched calls.
#include <algorithm>
#include <cstring>
#include <string>

#include "env.h"
#include "ncclrr/hostnccl/reduce.h"
#include "op.h"

namespace ncclrr::host {
namespace {

enum Phase { kClaim, kArrived, kStage, kCompute, kDrain, kStuck };

// First rank whose word for `seq` has not reached `target`, or -1.
int FirstBehind(const Segment& seg, uint64_t seq, uint64_t target, std::string* list) {
  int first = -1;
  for (int q = 0; q < seg.nranks(); ++q) {
    if (seg.coll(seq, q).state.load(std::memory_order_acquire) < target) {
      if (first < 0) first = q;
      if (list == nullptr) return first;
      *list += (list->empty() ? "" : ",") + std::to_string(q);
    }
  }
  return first;
}

std::string DescribeDesc(const OpDesc& d) {
  return std::string(KindName(d.kind)) + "(count " + std::to_string(d.count) + ", dtype " +
         std::to_string(d.dtype) + ", root " + std::to_string(d.root) + ")";
}

// Why the op can never complete, or "" when the calls are compatible enough to run.
std::string Incompatibility(const Op& op) {
  const Segment& seg = op.comm->seg;
  const OpDesc& mine = op.desc;
  for (int q = 0; q < seg.nranks(); ++q) {
    const OpDesc& d = seg.coll(op.seq, q).desc;
    if (d.kind != mine.kind) {
      std::string s = "ranks issued different collectives at this position:";
      for (int r = 0; r < seg.nranks(); ++r) {
        s += " rank " + std::to_string(r) + " " + DescribeDesc(seg.coll(op.seq, r).desc) + ";";
      }
      return s;
    }
  }
  if (mine.kind == Kind::kBroadcast || mine.kind == Kind::kScatter) {
    const OpDesc& root = seg.coll(op.seq, mine.root).desc;
    if (root.root != mine.root) {
      return "this rank expects root " + std::to_string(mine.root) + " but that rank's call has " +
             "root " + std::to_string(root.root) + ", so it never sends";
    }
  }
  return "";
}

struct RoundView {
  const Op& op;
  const Segment& seg;
  uint64_t a, chunk;  // this round covers input bytes [a, a + chunk)
  const OpDesc& desc(int q) const { return seg.coll(op.seq, q).desc; }
  const char* stage(int q) const { return seg.coll_stage(op.seq, q); }
  // Bytes of rank q's input staged this round.
  uint64_t avail(int q) const {
    const uint64_t ib = desc(q).in_bytes;
    return ib > a ? std::min(ib - a, chunk) : 0;
  }
  uint64_t common_in() const {
    uint64_t m = UINT64_MAX;
    for (int q = 0; q < seg.nranks(); ++q) m = std::min(m, desc(q).in_bytes);
    return m;
  }
};

// Reduces input bytes [x0, x0 + len) of every rank into out.
void ReduceInputs(const RoundView& v, uint64_t x0, uint64_t len, char* out) {
  const OpDesc& mine = v.op.desc;
  const size_t e = DtypeSize(mine.dtype);
  const int n = v.seg.nranks();
  thread_local std::vector<const void*> ins;
  thread_local std::vector<double> scalars;
  ins.resize(n);
  scalars.resize(n);
  for (int q = 0; q < n; ++q) {
    ins[q] = v.stage(q) + (x0 - v.a);
    const OpDesc& d = v.desc(q);
    scalars[q] = d.redop == uint8_t(RedKind::kPreMulSum) ? d.scalar : 1.0;
  }
  Reduce(mine.dtype, RedKind(mine.redop), out, ins.data(), n, len / e, scalars.data());
}

void ComputeRound(const RoundView& v) {
  const OpDesc& mine = v.op.desc;
  const int me = v.op.comm->rank;
  const uint64_t e = DtypeSize(mine.dtype);
  const uint64_t block = mine.count * e;
  const uint64_t end = v.a + v.chunk;
  char* out = static_cast<char*>(v.op.recv);
  auto copy = [](char* dst, const char* src, uint64_t x0, uint64_t x1) {
    if (x1 > x0) std::memmove(dst, src, x1 - x0);
  };
  switch (mine.kind) {
    case Kind::kReduce:
      if (mine.root != me) return;
      [[fallthrough]];
    case Kind::kAllReduce: {
      // Common prefix of all inputs, in whole elements of this rank's datatype.
      uint64_t common = std::min(v.common_in(), block);
      common -= common % e;
      const uint64_t x1 = std::min(end, common);
      if (x1 > v.a) ReduceInputs(v, v.a, x1 - v.a, out + v.a);
      return;
    }
    case Kind::kReduceScatter: {
      const uint64_t lo = me * block;
      uint64_t common = v.common_in();
      const uint64_t x0 = std::max(v.a, lo);
      uint64_t x1 = std::min({end, lo + block, common});
      if (x1 > x0) {
        x1 = x0 + (x1 - x0) / e * e;
        ReduceInputs(v, x0, x1 - x0, out + (x0 - lo));
      }
      return;
    }
    case Kind::kGather:
      if (mine.root != me) return;
      [[fallthrough]];
    case Kind::kAllGather:
      for (int q = 0; q < v.seg.nranks(); ++q) {
        const uint64_t x1 = std::min(v.a + v.avail(q), block);
        copy(out + q * block + v.a, v.stage(q), v.a, x1);
      }
      return;
    case Kind::kBroadcast: {
      const uint64_t x1 = std::min(v.a + v.avail(mine.root), block);
      copy(out + v.a, v.stage(mine.root), v.a, x1);
      return;
    }
    case Kind::kAlltoAll:
    case Kind::kScatter: {
      const uint64_t lo = me * block;
      for (int q = 0; q < v.seg.nranks(); ++q) {
        if (mine.kind == Kind::kScatter && q != mine.root) continue;
        const uint64_t x0 = std::max(v.a, lo);
        const uint64_t x1 = std::min(v.a + v.avail(q), lo + block);
        const uint64_t slot = mine.kind == Kind::kAlltoAll ? q * block : 0;
        copy(out + slot + (x0 - lo), v.stage(q) + (x0 - v.a), x0, x1);
      }
      return;
    }
    default:
      return;
  }
}

// NCCLRR_HOST_FLIP_OUTPUT: the faulty link that corrupts one bit of this rank's output.
void InjectOutputFlip(const Op& op) {
  const OutputFlip& f = OutputFlipFault();
  const int me = op.comm->rank;
  if (f.rank != me || f.seq != op.seq || op.recv == nullptr) return;
  if (f.bit / 8 >= ReceivedBytes(op.desc, me, op.comm->seg.nranks())) return;
  static_cast<unsigned char*>(op.recv)[f.bit / 8] ^= static_cast<unsigned char>(1u << (f.bit % 8));
}

}  // namespace

bool AdvanceColl(Op& op, WaitHint* hint) {
  CommRank& c = *op.comm;
  const Segment& seg = c.seg;
  const uint64_t slots = seg.hdr().coll_slots;
  const uint64_t chunk = seg.hdr().coll_chunk;
  CollCell& cell = seg.coll(op.seq, c.rank);
  bool progressed = false;
  for (;;) {
    const uint32_t epoch = seg.hdr().epoch.load(std::memory_order_acquire);
    std::string behind;
    switch (op.phase) {
      case kClaim:
        if (op.seq >= slots &&
            FirstBehind(seg, op.seq - slots, Stamp(op.seq - slots, kStepDone), nullptr) >= 0) {
          FirstBehind(seg, op.seq - slots, Stamp(op.seq - slots, kStepDone), &behind);
          NoteBlocked(op, hint, epoch, "waited for its slot",
                      "ranks [" + behind + "] have not finished position " +
                          std::to_string(op.seq - slots));
          return progressed;
        }
        if (op.device_scalar != nullptr) {
          op.desc.scalar = LoadAsDouble(op.desc.dtype, op.device_scalar);
        }
        cell.desc = op.desc;
        cell.state.store(Stamp(op.seq, kStepArrived), std::memory_order_release);
        seg.Bump();
        op.phase = kArrived;
        break;
      case kArrived: {
        if (FirstBehind(seg, op.seq, Stamp(op.seq, kStepArrived), nullptr) >= 0) {
          FirstBehind(seg, op.seq, Stamp(op.seq, kStepArrived), &behind);
          NoteBlocked(op, hint, epoch, "waited for peers",
                      "ranks [" + behind + "] have not issued this position (missing call?)");
          return progressed;
        }
        if (!Incompatibility(op).empty()) {
          op.phase = kStuck;
          break;
        }
        uint64_t max_in = 0;
        for (int q = 0; q < seg.nranks(); ++q) {
          max_in = std::max(max_in, seg.coll(op.seq, q).desc.in_bytes);
        }
        op.rounds = std::max<uint64_t>(1, (max_in + chunk - 1) / chunk);
        op.round = 0;
        op.phase = kStage;
        break;
      }
      case kStage: {
        const uint64_t a = op.round * chunk;
        if (op.desc.in_bytes > a) {
          std::memcpy(seg.coll_stage(op.seq, c.rank), static_cast<const char*>(op.send) + a,
                      std::min(chunk, op.desc.in_bytes - a));
        }
        cell.state.store(Stamp(op.seq, uint32_t(2 * op.round + 2)), std::memory_order_release);
        seg.Bump();
        op.phase = kCompute;
        break;
      }
      case kCompute: {
        if (FirstBehind(seg, op.seq, Stamp(op.seq, uint32_t(2 * op.round + 2)), nullptr) >= 0) {
          FirstBehind(seg, op.seq, Stamp(op.seq, uint32_t(2 * op.round + 2)), &behind);
          NoteBlocked(op, hint, epoch, "waited for data", "ranks [" + behind + "] stalled");
          return progressed;
        }
        ComputeRound(RoundView{op, seg, op.round * chunk, chunk});
        const bool last = op.round + 1 == op.rounds;
        cell.state.store(
            last ? Stamp(op.seq, kStepDone) : Stamp(op.seq, uint32_t(2 * op.round + 3)),
            std::memory_order_release);
        seg.Bump();
        if (last) {
          InjectOutputFlip(op);
          FinishOp(op, ncclSuccess);
          return true;
        }
        op.phase = kDrain;
        break;
      }
      case kDrain:
        if (FirstBehind(seg, op.seq, Stamp(op.seq, uint32_t(2 * op.round + 3)), nullptr) >= 0) {
          FirstBehind(seg, op.seq, Stamp(op.seq, uint32_t(2 * op.round + 3)), &behind);
          NoteBlocked(op, hint, epoch, "waited for peers to consume data",
                      "ranks [" + behind + "] stalled");
          return progressed;
        }
        ++op.round;
        op.phase = kStage;
        break;
      case kStuck:
        NoteBlocked(op, hint, epoch, "cannot complete", Incompatibility(op));
        return progressed;
    }
    progressed = true;
    op.blocked_since = 0;
  }
}

}  // namespace ncclrr::host
