// One actor's thread: communicators, streams, buffers, then its units in order (see executor.h).
#include <sched.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <map>

#include "call_layout.h"
#include "ncclrr/hostnccl/reduce.h"
#include "ring_arena.h"
#include "run_state.h"

namespace ncclrr::replay {
namespace {

constexpr unsigned char kSentinel = 0xA5;  // never a small sum in any type wider than a byte

// `bytes` of a kept host buffer for the span of one call; a buffer past 64 MiB is let go after
// it, so that one large call does not pin its size for the rest of the replay.
class HostScratch {
 public:
  HostScratch(std::vector<char>* kept, size_t bytes) : kept_(kept) {
    if (kept_->size() < bytes) kept_->resize(bytes);
  }
  ~HostScratch() {
    if (kept_->size() > (size_t{64} << 20)) std::vector<char>().swap(*kept_);
  }
  HostScratch(const HostScratch&) = delete;
  HostScratch& operator=(const HostScratch&) = delete;
  char* data() { return kept_->data(); }

 private:
  std::vector<char>* kept_;
};

class Actor {
 public:
  Actor(RunState& st, uint32_t index)
      : st_(st),
        plan_(st.plan),
        nccl_(st.backend.nccl()),
        index_(index),
        actor_(plan_.actors[index]),
        units_(st.order.units_of_actor[index]),
        report_(st.actors[index]) {}

  void Run() {
    const int64_t t0 = SteadyNs();
    if (Status s = Setup(); !s.ok()) st_.Fail(actor_.label + ": " + s.message());
    report_.setup_done = true;
    report_.setup_ns = SteadyNs() - t0;
    st_.ready.fetch_add(1);
    if (WaitFor([&] { return st_.go.load(); })) IssueAll();
    if (!st_.abort.load()) Drain();
    st_.finished.fetch_add(1);
    WaitFor([&] { return st_.finished.load() == st_.running; });
    if (st_.abort.load()) Abort();
    Teardown();
  }

 private:
  struct InFlight {
    uint32_t unit;
    bool has_block;
    size_t block_offset;
    std::vector<std::pair<cudaStream_t, uint64_t>> markers;
    bool failed = false;  // NCCL failed it (an error, or a peer aborted): the replay is stuck
  };

  // Polls `cond` until it holds (true) or the replay is aborted (false).
  template <typename F>
  bool WaitFor(F cond) {
    for (int spins = 0; !cond(); ++spins) {
      if (st_.abort.load()) return false;
      if (spins < 64)
        sched_yield();
      else
        usleep(100);
    }
    return true;
  }

  Status Setup() {
    const int slot =
        st_.options.device_slot >= 0 ? st_.options.device_slot : static_cast<int>(index_);
    auto dev = st_.backend.BindActor(slot, actor_.device);
    if (!dev.ok()) return dev.status();
    dev_ = std::move(*dev);
    NCCLRR_RETURN_IF_ERROR(InitComms());
    for (uint64_t recorded : actor_.streams) {
      auto s = dev_->NewStream();
      if (!s.ok()) return s.status();
      stream_of_[recorded] = *s;
    }
    NCCLRR_RETURN_IF_ERROR(AllocateBuffers());
    if (st_.options.warmup) NCCLRR_RETURN_IF_ERROR(Warmup());
    return Status::Ok();
  }

  Status InitComms() {
    comm_of_.assign(plan_.comms.size(), nullptr);
    std::vector<uint32_t> mine;
    for (uint32_t ci = 0; ci < plan_.comms.size(); ++ci) {
      const PlanComm& pc = plan_.comms[ci];
      if (!pc.used) continue;
      for (int r = 0; r < pc.nranks; ++r) {
        if (pc.actor_of_rank[r] != index_) continue;
        ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
        // Nonblocking comms can always be aborted, but NCCL starts a thread for every call on
        // them (~150 us a call on the H200). A --no-verify replay measures speed: it uses
        // blocking ones. Pairing is the same either way.
        cfg.blocking = st_.options.verify ? 0 : 1;
        if (!pc.name.empty()) cfg.commName = pc.name.c_str();
        const ncclResult_t res =
            nccl_.CommInitRankConfig(&comm_of_[ci], pc.nranks, st_.ids[ci], r, &cfg);
        if (res != ncclSuccess && res != ncclInProgress)
          return IoError("creating " + pc.Label() + " rank " + std::to_string(r) + ": " +
                         nccl_.ErrorText(res, nullptr));
        mine.push_back(ci);
      }
    }
    for (uint32_t ci : mine) NCCLRR_RETURN_IF_ERROR(WaitComm(ci, "creating"));
    st_.Progressed();
    return Status::Ok();
  }

  // Waits until a nonblocking communicator has no operation in progress.
  Status WaitComm(uint32_t ci, const char* what) {
    ncclResult_t async = ncclInProgress;
    const bool ok = WaitFor([&] {
      nccl_.CommGetAsyncError(comm_of_[ci], &async);
      return async != ncclInProgress;
    });
    if (!ok) return IoError(std::string(what) + " " + plan_.comms[ci].Label() + ": aborted");
    if (async != ncclSuccess)
      return IoError(std::string(what) + " " + plan_.comms[ci].Label() + ": " +
                     nccl_.ErrorText(async, comm_of_[ci]));
    return Status::Ok();
  }

  Status AllocateBuffers() {
    if (!st_.options.verify) return AllocateShared();
    size_t total = 0, largest = 0;
    for (uint32_t u : units_) {
      const size_t b = BlockBytes(u);
      total += b;
      largest = std::max(largest, b);
    }
    const size_t size =
        std::max<size_t>(std::min<size_t>(total, st_.options.memory_budget), largest);
    if (size == 0) return Status::Ok();
    auto base = dev_->Alloc(size);
    if (!base.ok()) return base.status();
    arena_base_ = static_cast<char*>(*base);
    arena_ = RingArena(size);
    return Status::Ok();
  }

  // --no-verify: every call of one shape shares one buffer pair, allocated before the timed part.
  Status AllocateShared() {
    for (uint32_t u : units_)
      for (uint32_t idx : plan_.units[u].calls) {
        const CallLayout l = LayoutOf(plan_.calls[idx]);
        if (shared_.count(l.bytes)) continue;
        auto p = dev_->Alloc(l.bytes);
        if (!p.ok()) return p.status();
        shared_[l.bytes] = static_cast<char*>(*p);
      }
    return Status::Ok();
  }

  size_t BlockBytes(uint32_t unit) const {
    size_t b = 0;
    for (uint32_t idx : plan_.units[unit].calls) b += LayoutOf(plan_.calls[idx]).bytes;
    return b;
  }

  Status Warmup() {
    auto p = dev_->Alloc(256);
    if (!p.ok()) return p.status();
    cudaStream_t s = stream_of_.begin()->second;
    for (uint32_t ci = 0; ci < comm_of_.size(); ++ci) {
      if (comm_of_[ci] == nullptr) continue;
      const ncclResult_t r = nccl_.AllReduce(*p, *p, 1, ncclFloat, ncclSum, comm_of_[ci], s);
      if (r != ncclSuccess && r != ncclInProgress)
        return IoError("warm-up on " + plan_.comms[ci].Label() + ": " +
                       nccl_.ErrorText(r, comm_of_[ci]));
      NCCLRR_RETURN_IF_ERROR(WaitComm(ci, "warm-up on"));
      auto m = dev_->Mark(s);
      if (!m.ok()) return m.status();
      if (!WaitFor([&] { return dev_->Reached(s, *m); })) return IoError("warm-up: aborted");
    }
    return Status::Ok();
  }

  void IssueAll() {
    for (size_t k = 0; k < units_.size(); ++k) {
      if (st_.abort.load()) return;
      if (Status s = IssueUnit(units_[k]); !s.ok()) {
        st_.Fail(actor_.label + ": " + s.message());
        return;
      }
      report_.issued_units = k + 1;
      st_.Progressed();
      Retire(false);
      Pace();
    }
  }

  // Waits, when the backend asks for it, until fewer than its PacedUnits() are in flight. When
  // every rank issues its communicators' calls in one order, the oldest unit always completes
  // without later ones; a trace whose ranks disagree on that order hangs unpaced as well. Still,
  // pacing must never be what hangs a replay: once the whole replay stopped moving for
  // kPaceStallNs, the actor issues on.
  void Pace() {
    static constexpr int64_t kPaceStallNs = 20'000'000;
    const size_t cap = st_.backend.PacedUnits();
    if (cap == 0 || in_flight_.size() < cap) return;
    WaitFor([&] {
      return Retire(false) ||
             SteadyNs() - st_.last_done_ns.load(std::memory_order_relaxed) > kPaceStallNs;
    });
  }

  // Room for the unit's block: retires older units while the arena is full.
  StatusOr<size_t> Reserve(size_t bytes) {
    for (;;) {
      if (auto off = arena_.Allocate(bytes); off.has_value()) return *off;
      report_.waiting_for_memory = true;
      if (in_flight_.empty())
        return IoError("a call needs " + std::to_string(bytes) +
                       " bytes of buffers, more than the replay memory budget (" +
                       std::to_string(st_.options.memory_budget >> 20) +
                       " MiB per rank); raise NCCLRR_REPLAY_MEMORY_MB");
      if (!WaitFor([&] { return Retire(false); })) return IoError("aborted");
      report_.waiting_for_memory = false;
    }
  }

  Status IssueUnit(uint32_t u) {
    const PlanUnit& unit = plan_.units[u];
    InFlight f{u, false, 0, {}};
    std::vector<char*> bases;
    if (st_.options.verify) {
      auto off = Reserve(BlockBytes(u));
      if (!off.ok()) return off.status();
      f.has_block = true;
      f.block_offset = *off;
      char* base = arena_base_ + *off;
      for (uint32_t idx : unit.calls) {
        bases.push_back(base);
        NCCLRR_RETURN_IF_ERROR(Fill(plan_.calls[idx], base));
        base += LayoutOf(plan_.calls[idx]).bytes;
      }
    } else {
      for (uint32_t idx : unit.calls) bases.push_back(shared_[LayoutOf(plan_.calls[idx]).bytes]);
    }
    std::vector<std::pair<ncclRedOp_t, ncclComm_t>> ops;  // PreMulSum ops to destroy after issue
    if (unit.group) nccl_.GroupStart();
    Status issued = Status::Ok();
    for (size_t k = 0; k < unit.calls.size() && issued.ok(); ++k)
      issued = IssueCall(plan_.calls[unit.calls[k]], bases[k], &ops);
    if (unit.group) {
      const ncclResult_t r = nccl_.GroupEnd();
      if (issued.ok() && r != ncclSuccess && r != ncclInProgress)
        issued = IoError("ncclGroupEnd: " + nccl_.ErrorText(r, nullptr));
    }
    for (const auto& [op, comm] : ops) nccl_.RedOpDestroy(op, comm);
    if (!issued.ok()) return issued;
    for (uint32_t idx : unit.calls) {
      NCCLRR_RETURN_IF_ERROR(WaitComm(plan_.calls[idx].comm, "issuing on"));
      st_.outcomes[idx].issued = true;
      const cudaStream_t s = stream_of_[plan_.calls[idx].stream];
      bool have = false;
      for (const auto& m : f.markers) have |= m.first == s;
      if (have) continue;
      auto m = dev_->Mark(s);
      if (!m.ok()) return m.status();
      f.markers.push_back({s, *m});
    }
    st_.issued_calls.fetch_add(unit.calls.size(), std::memory_order_relaxed);
    in_flight_.push_back(std::move(f));
    return Status::Ok();
  }

  Status Fill(const PlanCall& c, char* base) {
    const CallLayout l = LayoutOf(c);
    const cudaStream_t s = stream_of_[c.stream];
    HostScratch host(&fill_scratch_, std::max(l.recv_bytes, l.send_bytes));
    if (l.recv_bytes) {
      std::memset(host.data(), kSentinel, l.recv_bytes);
      NCCLRR_RETURN_IF_ERROR(dev_->Upload(base + l.recv_offset, host.data(), l.recv_bytes, s));
    }
    if (l.send_bytes) {
      st_.data.FillSend(c, host.data());
      NCCLRR_RETURN_IF_ERROR(dev_->Upload(base + l.send_offset, host.data(), l.send_bytes, s));
    }
    return Status::Ok();
  }

  Status IssueCall(const PlanCall& c, char* base,
                   std::vector<std::pair<ncclRedOp_t, ncclComm_t>>* ops) {
    const CallLayout l = LayoutOf(c);
    void* send = base + l.send_offset;
    void* recv = base + l.recv_offset;
    const ncclComm_t comm = comm_of_[c.comm];
    const cudaStream_t s = stream_of_[c.stream];
    const auto dt = static_cast<ncclDataType_t>(c.dtype);
    auto op = static_cast<ncclRedOp_t>(c.op);
    if ((c.flags & call_flags::kPreMulSum) || c.op >= kNumBuiltinOps) {
      alignas(8) char scalar[8] = {};
      host::StoreFromDouble(c.dtype, c.scalar, scalar);
      const ncclResult_t r =
          nccl_.RedOpCreatePreMulSum(&op, scalar, dt, ncclScalarHostImmediate, comm);
      if (r != ncclSuccess) return IoError("ncclRedOpCreatePreMulSum: " + nccl_.ErrorText(r, comm));
      ops->push_back({op, comm});
    }
    ncclResult_t r = ncclInvalidUsage;
    const size_t n = c.count;
    switch (c.api) {
      case Api::kAllReduce:
        r = nccl_.AllReduce(send, recv, n, dt, op, comm, s);
        break;
      case Api::kBroadcast:
        r = nccl_.Broadcast(send, recv, n, dt, c.root_peer, comm, s);
        break;
      case Api::kReduce:
        r = nccl_.Reduce(send, recv, n, dt, op, c.root_peer, comm, s);
        break;
      case Api::kAllGather:
        r = nccl_.AllGather(send, recv, n, dt, comm, s);
        break;
      case Api::kReduceScatter:
        r = nccl_.ReduceScatter(send, recv, n, dt, op, comm, s);
        break;
      case Api::kSend:
        r = nccl_.Send(send, n, dt, c.root_peer, comm, s);
        break;
      case Api::kRecv:
        r = nccl_.Recv(recv, n, dt, c.root_peer, comm, s);
        break;
      case Api::kAlltoAll:
      case Api::kGather:
      case Api::kScatter: {
        auto* fn2 = c.api == Api::kAlltoAll ? nccl_.AlltoAll : nullptr;
        auto* fn3 = c.api == Api::kGather    ? nccl_.Gather
                    : c.api == Api::kScatter ? nccl_.Scatter
                                             : nullptr;
        if (fn2 == nullptr && fn3 == nullptr)
          return Unsupported(std::string(ApiName(c.api)) + " is not in " + nccl_.path + " (NCCL " +
                             NcclVersionString(nccl_.version) + "; it needs NCCL 2.28)");
        r = fn2 ? fn2(send, recv, n, dt, comm, s) : fn3(send, recv, n, dt, c.root_peer, comm, s);
        break;
      }
      default:
        return Unsupported("cannot replay " + std::string(ApiName(c.api)));
    }
    if (r != ncclSuccess && r != ncclInProgress)
      return IoError(DescribeCall(plan_, c) + " on " + plan_.comms[c.comm].Label() + " rank " +
                     std::to_string(c.rank) + ": " + nccl_.ErrorText(r, comm));
    return Status::Ok();
  }

  // Retires the oldest unit if its markers were reached; with `failed`, without asking NCCL
  // (its communicators were aborted). Returns true when a unit was retired.
  bool Retire(bool failed) {
    if (in_flight_.empty()) return false;
    InFlight& f = in_flight_.front();
    for (const auto& [s, m] : f.markers)
      if (!dev_->Reached(s, m)) return false;
    if (!failed) {
      // A unit NCCL failed (a peer process aborted, or NCCL's own timeout) stays a stuck head.
      for (uint32_t idx : plan_.units[f.unit].calls) {
        ncclResult_t async = ncclSuccess;
        nccl_.CommGetAsyncError(comm_of_[plan_.calls[idx].comm], &async);
        f.failed |= async != ncclSuccess && async != ncclInProgress;
      }
      if (f.failed) {
        st_.hang.store(true);
        st_.abort.store(true);
        return false;
      }
    }
    for (uint32_t idx : plan_.units[f.unit].calls) Complete(idx, failed, f);
    if (f.has_block) arena_.FreeOldest();
    const size_t calls = plan_.units[f.unit].calls.size();
    in_flight_.pop_front();  // `f` is gone from here on
    st_.done_calls.fetch_add(calls, std::memory_order_relaxed);
    st_.Progressed();
    return true;
  }

  void Complete(uint32_t idx, bool failed, const InFlight& f) {
    const PlanCall& c = plan_.calls[idx];
    CallOutcome& out = st_.outcomes[idx];
    out.failed = failed;
    out.completed = !failed;
    if (failed || !st_.options.verify || c.recv_elems == 0) return;
    size_t offset = f.block_offset;
    for (uint32_t other : plan_.units[f.unit].calls) {
      if (other == idx) break;
      offset += LayoutOf(plan_.calls[other]).bytes;
    }
    const CallLayout l = LayoutOf(c);
    HostScratch host(&check_scratch_, l.recv_bytes);
    if (Status s = dev_->Download(host.data(), arena_base_ + offset + l.recv_offset, l.recv_bytes);
        !s.ok()) {
      st_.Fail(actor_.label + ": " + s.message());
      return;
    }
    out.check = CheckCall(plan_, st_.data, c, host.data(), st_.references.get());
  }

  void Drain() {
    WaitFor([&] {
      while (Retire(false)) {
      }
      return in_flight_.empty();
    });
  }

  // The heads of the streams (first unretired unit per stream) are the stuck calls; then every
  // communicator of this actor is aborted, which fails its queued work.
  void Abort() {
    std::map<cudaStream_t, bool> seen;
    for (const InFlight& f : in_flight_) {
      bool head = false;
      for (const auto& [s, m] : f.markers)
        if ((f.failed || !dev_->Reached(s, m)) && !seen[s]) head = seen[s] = true;
      if (head) report_.in_flight_heads.push_back(f.unit);
    }
    // Every actor records its heads before any communicator is aborted: an abort fails the
    // peers' queued work, which would move their heads.
    st_.snapshots.fetch_add(1);
    const int64_t wait_until = SteadyNs() + 5'000'000'000;
    while (st_.snapshots.load() < st_.running && SteadyNs() < wait_until) usleep(100);
    if (st_.options.abort_grace_s > 0)
      usleep(static_cast<useconds_t>(st_.options.abort_grace_s * 1e6));
    for (ncclComm_t& c : comm_of_) {
      if (c != nullptr) nccl_.CommAbort(c);
      c = nullptr;
    }
    aborted_ = true;
    const int64_t deadline = SteadyNs() + 10'000'000'000;
    while (!in_flight_.empty() && SteadyNs() < deadline)
      if (!Retire(true)) usleep(200);
  }

  // A nonblocking communicator is finalized (and waited for, with a deadline) before it is
  // destroyed, as NCCL asks.
  void Teardown() {
    if (!aborted_) {
      for (ncclComm_t c : comm_of_)
        if (c != nullptr && nccl_.CommFinalize) nccl_.CommFinalize(c);
      const int64_t deadline = SteadyNs() + 10'000'000'000;
      for (ncclComm_t c : comm_of_) {
        ncclResult_t async = ncclInProgress;
        while (c != nullptr && nccl_.CommFinalize && async == ncclInProgress &&
               SteadyNs() < deadline) {
          nccl_.CommGetAsyncError(c, &async);
          if (async == ncclInProgress) usleep(100);
        }
        if (c != nullptr) nccl_.CommDestroy(c);
      }
    }
    if (dev_ && in_flight_.empty()) dev_->Release();  // else: a device that did not drain, keep it
  }

  RunState& st_;
  const ReplayPlan& plan_;
  const NcclApi& nccl_;
  const uint32_t index_;
  const PlanActor& actor_;
  const std::vector<uint32_t>& units_;
  ActorReport& report_;
  std::unique_ptr<ActorDevice> dev_;
  std::vector<ncclComm_t> comm_of_;  // per plan communicator
  std::map<uint64_t, cudaStream_t> stream_of_;
  char* arena_base_ = nullptr;
  RingArena arena_;
  // Host copies of the buffers being filled and checked, kept from call to call: a fresh vector
  // per call had its pages mapped and cleared each time (a fifth of a 64-rank host replay).
  std::vector<char> fill_scratch_, check_scratch_;
  std::map<size_t, char*> shared_;
  std::deque<InFlight> in_flight_;
  bool aborted_ = false;
};

}  // namespace

void RunActor(RunState& state, uint32_t actor) {
  Actor a(state, actor);
  a.Run();
  state.exited.fetch_add(1);
}

}  // namespace ncclrr::replay
