#include "sweep.h"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdio>
#include <cstring>
#include <vector>

#include "rank_threads.h"
#include "sweep_data.h"

namespace ncclrr::example {
namespace {

enum class Coll {
  kAllReduce,
  kReduce,
  kBroadcast,
  kAllGather,
  kReduceScatter,
  kAlltoAll,
  kGather,
  kScatter,
  kAlltoAllP2p,  // grouped Send/Recv with every rank (itself included), as nccl-tests does it
  kRing,         // grouped Send to rank+1 and Recv from rank-1
};
const char* const kCollNames[] = {"AllReduce",     "Reduce",   "Broadcast", "AllGather",
                                  "ReduceScatter", "AlltoAll", "Gather",    "Scatter",
                                  "AlltoAll(p2p)", "Send/Recv"};
const char* OpName(ncclRedOp_t op) {
  static const char* const names[] = {"sum", "prod", "max", "min", "avg"};
  return op >= 0 && op < 5 ? names[op] : "?";
}

struct Case {
  Coll coll;
  const DType* t;
  ncclRedOp_t op;
  bool in_place;
  int root;
  Seed seed;
};

bool Reduces(Coll c) {
  return c == Coll::kAllReduce || c == Coll::kReduce || c == Coll::kReduceScatter;
}

constexpr size_t kCounts[] = {1, 1000, 4097, 65537, 1048579};
size_t CountOf(int step) { return kCounts[size_t(step) % (sizeof kCounts / sizeof kCounts[0])]; }

std::vector<Case> Cases(int step, int nranks, size_t count) {
  std::vector<Case> cases;
  uint64_t call = uint64_t(step) * 100000;
  auto add = [&](Coll c, const DType& t, ncclRedOp_t op, bool ip, int root, Fill fill) {
    cases.push_back({c, &t, op, ip, root, {++call, fill}});
  };
  const bool big = count > 65537;
  const int root_a = step % nranks, root_b = (step + 1) % nranks;
  for (const DType& t : AllDTypes()) {
    const bool fp = t.nccl == ncclFloat32 || t.nccl == ncclFloat16 || t.nccl == ncclBfloat16;
    if (big && !fp) continue;
    for (ncclRedOp_t op : {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg}) {
      if (big && op != ncclSum && op != ncclAvg) continue;
      const Fill fill = t.cls != DType::kFloat && op == ncclAvg ? Fill::kSameInt : Fill::kPlain;
      for (bool ip : {false, true}) {
        add(Coll::kAllReduce, t, op, ip, 0, fill);
        add(Coll::kReduceScatter, t, op, ip, 0, fill);
        add(Coll::kReduce, t, op, ip, root_a, fill);
      }
    }
    for (bool ip : {false, true}) {
      add(Coll::kBroadcast, t, ncclSum, ip, root_b, Fill::kPlain);
      add(Coll::kAllGather, t, ncclSum, ip, 0, Fill::kPlain);
      add(Coll::kGather, t, ncclSum, ip, root_a, Fill::kPlain);
      add(Coll::kScatter, t, ncclSum, ip, root_b, Fill::kPlain);
    }
    add(Coll::kAlltoAll, t, ncclSum, false, 0, Fill::kPlain);
    add(Coll::kAlltoAllP2p, t, ncclSum, false, 0, Fill::kPlain);
    add(Coll::kRing, t, ncclSum, false, 0, Fill::kPlain);
  }
  // AMP: fp16 gradients with Inf/NaN and overflowing sums (GradScaler skips such steps).
  for (ncclDataType_t dt : {ncclFloat16, ncclBfloat16, ncclFloat32}) {
    const DType& t = DTypeOf(dt);
    for (ncclRedOp_t op : {ncclSum, ncclAvg})
      for (bool ip : {false, true}) {
        add(Coll::kAllReduce, t, op, ip, 0, Fill::kAmp);
        add(Coll::kReduceScatter, t, op, ip, 0, Fill::kAmp);
      }
    add(Coll::kAllGather, t, ncclSum, false, 0, Fill::kAmp);
    add(Coll::kBroadcast, t, ncclSum, false, 0, Fill::kAmp);
  }
  return cases;
}

// Element counts and, in place, where send and recv sit in the one buffer (nccl.h's rules).
struct Layout {
  size_t send_n, recv_n, send_off = 0, recv_off = 0;
  size_t Span() const { return std::max(send_off + send_n, recv_off + recv_n); }
};

Layout LayoutOf(const Case& c, size_t count, int nranks, int rank) {
  const size_t n = size_t(nranks), all = n * count;
  Layout l{count, count};
  switch (c.coll) {
    case Coll::kReduceScatter:
      l.send_n = all;
      if (c.in_place) l.recv_off = size_t(rank) * count;
      break;
    case Coll::kAllGather:
      l.recv_n = all;
      if (c.in_place) l.send_off = size_t(rank) * count;
      break;
    case Coll::kGather:
      l.recv_n = all;
      if (c.in_place) l.send_off = size_t(c.root) * count;
      break;
    case Coll::kScatter:
      l.send_n = all;
      if (c.in_place) l.recv_off = size_t(c.root) * count;
      break;
    case Coll::kAlltoAll:
    case Coll::kAlltoAllP2p:
      l.send_n = l.recv_n = all;
      break;
    default:
      break;
  }
  return l;
}

void Check(ncclResult_t r, const char* what, int rank) {
  if (r != ncclSuccess && r != ncclInProgress)
    ExitHang(std::string(what) + " failed on rank " + std::to_string(rank) + ": " +
             ncclGetErrorString(r));
}

struct SweepRank {
  int rank = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  char *send = nullptr, *recv = nullptr;  // each holds nranks x count of the widest type
  std::vector<uint8_t> host;
};

class Sweep {
 public:
  Sweep(const Options& opt, Backend& be) : opt_(opt), be_(be), ranks_(size_t(opt.ranks)) {
    ncclGetUniqueId(&id_);
  }

  void Init(SweepRank& r, int rank) {
    r.rank = rank;
    be_.SetDevice(rank);
    Check(ncclCommInitRank(&r.comm, opt_.ranks, id_, rank), "ncclCommInitRank", rank);
    r.stream = be_.NewStream();
  }

  void Alloc(SweepRank& r, size_t count) {
    be_.SetDevice(r.rank);
    const size_t bytes = size_t(opt_.ranks) * count * 8;
    r.send = static_cast<char*>(be_.Alloc(bytes));
    r.recv = static_cast<char*>(be_.Alloc(bytes));
  }
  void FreeBuffers(SweepRank& r) {
    be_.SetDevice(r.rank);
    be_.Free(r.send);
    be_.Free(r.recv);
  }
  void Finish(SweepRank& r) {
    ncclCommDestroy(r.comm);
    be_.FreeStream(r.stream);
  }

  void Fill(SweepRank& r, const Case& c, size_t count) {
    const Layout l = LayoutOf(c, count, opt_.ranks, r.rank);
    const size_t b = size_t(c.t->bytes);
    const size_t span = l.Span() * b;
    // 0xA5 bytes: never a plausible result of these inputs. Out of place, the input follows.
    r.host.assign(span + (c.in_place ? 0 : l.send_n * b), 0xA5);
    uint8_t* in = r.host.data() + (c.in_place ? l.send_off * b : span);
    for (size_t i = 0; i < l.send_n; ++i) {
      const uint64_t v = InputBits(*c.t, c.seed, r.rank, i);
      std::memcpy(in + i * b, &v, b);  // little endian: the low bytes
    }
    be_.ToDevice(r.recv, r.host.data(), span);
    if (!c.in_place) be_.ToDevice(r.send, in, l.send_n * b);
  }

  void Issue(SweepRank& r, const Case& c, size_t count) {
    const Layout l = LayoutOf(c, count, opt_.ranks, r.rank);
    const size_t b = size_t(c.t->bytes);
    const void* s = c.in_place ? r.recv + l.send_off * b : r.send;
    void* d = r.recv + l.recv_off * b;
    const ncclDataType_t dt = c.t->nccl;
    ncclResult_t res = ncclSuccess;
    switch (c.coll) {
      case Coll::kAllReduce:
        res = ncclAllReduce(s, d, count, dt, c.op, r.comm, r.stream);
        break;
      case Coll::kReduce:
        res = ncclReduce(s, d, count, dt, c.op, c.root, r.comm, r.stream);
        break;
      case Coll::kBroadcast:
        res = ncclBroadcast(s, d, count, dt, c.root, r.comm, r.stream);
        break;
      case Coll::kAllGather:
        res = ncclAllGather(s, d, count, dt, r.comm, r.stream);
        break;
      case Coll::kReduceScatter:
        res = ncclReduceScatter(s, d, count, dt, c.op, r.comm, r.stream);
        break;
      case Coll::kAlltoAll:
        res = ncclAlltoAll(s, d, count, dt, r.comm, r.stream);
        break;
      case Coll::kGather:
        res = ncclGather(s, d, count, dt, c.root, r.comm, r.stream);
        break;
      case Coll::kScatter:
        res = ncclScatter(s, d, count, dt, c.root, r.comm, r.stream);
        break;
      case Coll::kAlltoAllP2p:
      case Coll::kRing: {
        const int n = opt_.ranks;
        Check(ncclGroupStart(), "ncclGroupStart", r.rank);
        for (int dir = 0; dir < 2; ++dir) {  // every send, then every receive
          const int ring_peer = dir == 0 ? (r.rank + 1) % n : (r.rank + n - 1) % n;
          for (int p = 0; p < n; ++p) {
            if (c.coll == Coll::kRing && p != ring_peer) continue;
            const size_t off = c.coll == Coll::kRing ? 0 : size_t(p) * count * b;
            Check(dir == 0
                      ? ncclSend(static_cast<const char*>(s) + off, count, dt, p, r.comm, r.stream)
                      : ncclRecv(static_cast<char*>(d) + off, count, dt, p, r.comm, r.stream),
                  dir == 0 ? "ncclSend" : "ncclRecv", r.rank);
          }
        }
        res = ncclGroupEnd();
        break;
      }
    }
    Check(res, kCollNames[int(c.coll)], r.rank);
  }

  void Sync(SweepRank& r) {
    std::string err;
    be_.SetDevice(r.rank);
    if (!be_.Sync(r.stream, {r.comm}, &err))
      ExitHang("rank " + std::to_string(r.rank) + ": " + err);
  }

  // Counts the wrong elements of this rank's result.
  long Verify(SweepRank& r, const Case& c, size_t count, int step) {
    const int n = opt_.ranks, rank = r.rank;
    if ((c.coll == Coll::kReduce || c.coll == Coll::kGather) && rank != c.root) return 0;
    const Layout l = LayoutOf(c, count, n, rank);
    const size_t b = size_t(c.t->bytes);
    r.host.resize(l.recv_n * b);
    be_.ToHost(r.host.data(), r.recv + l.recv_off * b, l.recv_n * b);
    std::vector<uint64_t> in(static_cast<size_t>(n));
    long wrong = 0;
    for (size_t j = 0; j < l.recv_n; ++j) {
      Expected e;
      const size_t blk = j / count, k = j % count;
      switch (c.coll) {
        case Coll::kAllReduce:
        case Coll::kReduce:
        case Coll::kReduceScatter: {
          const size_t idx = c.coll == Coll::kReduceScatter ? size_t(rank) * count + j : j;
          for (int q = 0; q < n; ++q) in[size_t(q)] = InputBits(*c.t, c.seed, q, idx);
          e = Reduced(*c.t, c.op, in.data(), n);
          break;
        }
        case Coll::kBroadcast:
          e = CopyOf(InputBits(*c.t, c.seed, c.root, j));
          break;
        case Coll::kAllGather:
        case Coll::kGather:
          e = CopyOf(InputBits(*c.t, c.seed, int(blk), k));
          break;
        case Coll::kScatter:
          e = CopyOf(InputBits(*c.t, c.seed, c.root, size_t(rank) * count + j));
          break;
        case Coll::kAlltoAll:
        case Coll::kAlltoAllP2p:
          e = CopyOf(InputBits(*c.t, c.seed, int(blk), size_t(rank) * count + k));
          break;
        case Coll::kRing:
          e = CopyOf(InputBits(*c.t, c.seed, (rank + n - 1) % n, j));
          break;
      }
      uint64_t got = 0;
      std::memcpy(&got, r.host.data() + j * b, b);
      if (e.Accepts(*c.t, got)) continue;
      ++wrong;
      if (shown_.fetch_add(1) < 8) {
        const std::string want = e.exact ? Describe(*c.t, e.bits)
                                         : std::to_string(e.value) + " +- " + std::to_string(e.tol);
        std::printf("wrong: step %d %s %s %s %s rank %d element %zu: got %s, want %s\n", step,
                    kCollNames[int(c.coll)], c.t->name, Reduces(c.coll) ? OpName(c.op) : "-",
                    c.in_place ? "in-place" : "out-of-place", rank, j, Describe(*c.t, got).c_str(),
                    want.c_str());
      }
    }
    return wrong;
  }

  void Report(int step, size_t count, size_t calls, long wrong) {
    total_ += wrong;
    std::printf("step %d: %zu calls of %zu elements per rank block, #wrong %ld\n", step, calls,
                count, wrong);
    std::fflush(stdout);
    Heartbeat();
  }

  void RunThreads() {
    RunRankThreads(
        opt_.ranks, opt_.steps, [&](int rank) { Init(ranks_[size_t(rank)], rank); },
        [&](int rank, int step, std::barrier<>&) -> long {
          SweepRank& r = ranks_[size_t(rank)];
          const size_t count = CountOf(step);
          Alloc(r, count);
          long wrong = 0;
          for (const Case& c : Cases(step, opt_.ranks, count)) {
            Fill(r, c, count);
            Issue(r, c, count);
            Sync(r);
            wrong += Verify(r, c, count, step);
            Heartbeat();
          }
          FreeBuffers(r);
          return wrong;
        },
        [&](int step, long wrong) {
          const size_t count = CountOf(step);
          Report(step, count, Cases(step, opt_.ranks, count).size(), wrong);
        },
        [&](int rank) { Finish(ranks_[size_t(rank)]); });
  }

  void RunGroup() {
    Check(ncclGroupStart(), "ncclGroupStart", 0);
    for (int rank = 0; rank < opt_.ranks; ++rank) Init(ranks_[size_t(rank)], rank);
    Check(ncclGroupEnd(), "ncclGroupEnd (init)", 0);
    for (int step = 0; step < opt_.steps; ++step) {
      const size_t count = CountOf(step);
      const std::vector<Case> cases = Cases(step, opt_.ranks, count);
      for (SweepRank& r : ranks_) Alloc(r, count);
      long wrong = 0;
      for (const Case& c : cases) {
        for (SweepRank& r : ranks_) Fill(r, c, count);
        Check(ncclGroupStart(), "ncclGroupStart", 0);
        for (SweepRank& r : ranks_) {
          be_.SetDevice(r.rank);
          Issue(r, c, count);
        }
        Check(ncclGroupEnd(), "ncclGroupEnd", 0);
        for (SweepRank& r : ranks_) Sync(r);
        for (SweepRank& r : ranks_) wrong += Verify(r, c, count, step);
        Heartbeat();
      }
      for (SweepRank& r : ranks_) FreeBuffers(r);
      Report(step, count, cases.size(), wrong);
    }
    for (SweepRank& r : ranks_) Finish(r);
  }

  long total() const { return total_; }

 private:
  const Options& opt_;
  Backend& be_;
  std::vector<SweepRank> ranks_;
  ncclUniqueId id_{};
  std::atomic<int> shown_{0};
  long total_ = 0;
};

int RunSweep(const Options& opt, Backend& be) {
  Sweep sweep(opt, be);
  if (opt.group)
    sweep.RunGroup();
  else
    sweep.RunThreads();
  std::printf("total: #wrong %ld\n", sweep.total());
  return sweep.total() > 0 ? 1 : 0;
}

}  // namespace

const Scenario& SweepScenario() {
  static const Scenario sweep = {
      "sweep", "every collective x datatype x op, in place and out of place, on verifiable data",
      {},      1,
      -1,      nullptr,
      RunSweep};
  return sweep;
}

}  // namespace ncclrr::example
