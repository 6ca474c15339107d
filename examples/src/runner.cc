#include "runner.h"

#include <unistd.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "processes.h"
#include "rank_threads.h"

namespace ncclrr::example {
namespace {

std::atomic<int64_t> g_last_progress{0};

int64_t NowS() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Check(ncclResult_t r, const char* what, int rank) {
  if (r != ncclSuccess && r != ncclInProgress) {
    ExitHang(std::string(what) + " failed on rank " + std::to_string(rank) + ": " +
             ncclGetErrorString(r));
  }
}

// One rank's communicators, stream and buffers.
struct Rank {
  int rank = 0;
  std::vector<ncclComm_t> comms;
  cudaStream_t stream = nullptr, side = nullptr;
  std::vector<void*> send, recv;
  void* race_src = nullptr;  // send-race: what the racing rank writes over tensor 0
  std::vector<float> host;
};

class Runner {
 public:
  Runner(const Options& opt, Backend& be)
      : opt_(opt), be_(be), ranks_(opt.ranks), tensors_(opt.scenario->tensors) {
    if (opt.race_elems > 0) tensors_[0].count = opt.race_elems;
    if (opt.only_rank >= 0) {
      ids_ = SharedIds(opt.scenario->comms, opt.only_rank);
      prefix_ = "rank " + std::to_string(opt.only_rank) + " ";
      return;
    }
    ids_.resize(opt.scenario->comms);
    for (auto& id : ids_) ncclGetUniqueId(&id);
  }

  void Init(Rank& r, int rank) {
    r.rank = rank;
    be_.SetDevice(rank);
    r.comms.resize(ids_.size());
    for (size_t c = 0; c < ids_.size(); ++c) {
      Check(ncclCommInitRank(&r.comms[c], opt_.ranks, ids_[c], rank), "ncclCommInitRank", rank);
    }
    r.stream = be_.NewStream();
    r.side = be_.NewStream();
    for (const TensorSpec& t : tensors_) {
      r.send.push_back(be_.Alloc(t.count * sizeof(float)));
      r.recv.push_back(be_.Alloc(t.count * sizeof(float)));
    }
    if (rank == opt_.scenario->race_rank) {
      // Filled now, while nothing is in flight: the race is a device-to-device copy (no
      // staging of pageable host memory).
      const size_t n = tensors_[0].count;
      r.race_src = be_.Alloc(n * sizeof(float));
      r.host.assign(n, 1000.0f);
      be_.ToDevice(r.race_src, r.host.data(), n * sizeof(float));
    }
  }

  void Fill(Rank& r, int step) {
    const auto& ts = tensors_;
    for (size_t t = 0; t < ts.size(); ++t) {
      r.host.resize(ts[t].count);
      for (size_t i = 0; i < ts[t].count; ++i) r.host[i] = InputValue(int(t), step, r.rank, i);
      be_.ToDevice(r.send[t], r.host.data(), ts[t].count * sizeof(float));
      std::fill(r.host.begin(), r.host.end(), -12345.0f);  // never a correct value
      be_.ToDevice(r.recv[t], r.host.data(), ts[t].count * sizeof(float));
    }
  }

  void Issue(Rank& r, int step) {
    const std::vector<Call> calls = opt_.scenario->plan(step, r.rank, opt_.ranks);
    bool p2p = false;
    for (const Call& c : calls) p2p |= c.op == Call::kSend || c.op == Call::kRecv;
    if (p2p) ncclGroupStart();  // sends and receives of one step must be grouped
    for (Call c : calls) {
      if (c.tensor == 0 && opt_.race_elems > 0) c.count = opt_.race_elems;
      ncclComm_t comm = r.comms[c.comm];
      ncclResult_t res = ncclSuccess;
      switch (c.op) {
        case Call::kAllReduce:
          res = ncclAllReduce(r.send[c.tensor], r.recv[c.tensor], c.count, c.dtype, ncclSum, comm,
                              r.stream);
          break;
        case Call::kBroadcast:
          res = ncclBroadcast(r.send[c.tensor], r.recv[c.tensor], c.count, c.dtype, c.root, comm,
                              r.stream);
          break;
        case Call::kSend:
          res = ncclSend(r.send[c.tensor], c.count, c.dtype, c.root, comm, r.stream);
          break;
        case Call::kRecv:
          res = ncclRecv(r.recv[c.tensor], c.count, c.dtype, c.root, comm, r.stream);
          break;
      }
      Check(res, "an NCCL call", r.rank);
    }
    if (p2p) Check(ncclGroupEnd(), "ncclGroupEnd", r.rank);
  }

  // send-race: the racing rank overwrites tensor 0's send buffer while its allreduce runs.
  void Race(Rank& r) {
    be_.RacyWrite(r.send[0], r.race_src, tensors_[0].count * sizeof(float), r.stream, r.side);
  }
  // Issues the step's calls, with the racing write queued before or after them as the backend
  // needs (backend.h).
  void IssueRacing(Rank& r, int step) {
    if (be_.RaceQueuedBeforeIssue()) Race(r);
    Issue(r, step);
    if (!be_.RaceQueuedBeforeIssue()) Race(r);
  }

  void Sync(Rank& r, int step) {
    std::string err;
    if (!be_.Sync(r.stream, r.comms, &err) || !be_.Sync(r.side, r.comms, &err)) {
      ExitHang("rank " + std::to_string(r.rank) + " step " + std::to_string(step) + ": " + err);
    }
  }

  long Wrong(Rank& r, int step) {
    long wrong = 0;
    const auto& ts = tensors_;
    for (size_t t = 0; t < ts.size(); ++t) {
      r.host.resize(ts[t].count);
      be_.ToHost(r.host.data(), r.recv[t], ts[t].count * sizeof(float));
      for (size_t i = 0; i < ts[t].count; ++i) {
        wrong += r.host[i] != ExpectedValue(ts[t], int(t), step, r.rank, opt_.ranks, i);
      }
    }
    return wrong;
  }

  void Finish(Rank& r) {
    for (ncclComm_t c : r.comms) ncclCommDestroy(c);
    for (void* p : r.send) be_.Free(p);
    for (void* p : r.recv) be_.Free(p);
    if (r.race_src) be_.Free(r.race_src);
    be_.FreeStream(r.stream);
    be_.FreeStream(r.side);
  }

  void Report(int step, long wrong) {
    total_ += wrong;
    std::printf("%sstep %d: #wrong %ld\n", prefix_.c_str(), step, wrong);
    std::fflush(stdout);
    Heartbeat();
  }

  // One thread per rank; barriers keep steps aligned and, on the host NCCL, order the injected
  // race (the write lands before the peers issue).
  void RunThreads() {
    const int racer = opt_.scenario->race_rank;
    const bool race = racer >= 0 && racer < opt_.ranks;
    RunRankThreads(
        opt_.ranks, opt_.steps, [&](int rank) { Init(ranks_[rank], rank); },
        [&](int rank, int step, std::barrier<>& sync_point) -> long {
          Rank& r = ranks_[rank];
          Fill(r, step);
          sync_point.arrive_and_wait();
          if (race && !be_.RaceQueuedBeforeIssue()) {
            if (rank == racer) IssueRacing(r, step);
            sync_point.arrive_and_wait();  // peers issue only after the write
            if (rank != racer) Issue(r, step);
          } else if (rank == racer) {
            // Real NCCL: the write is queued behind a delay and every rank issues at once; it
            // lands whenever the GPU runs it: a real race, caught in some runs.
            IssueRacing(r, step);
          } else {
            Issue(r, step);
          }
          Sync(r, step);
          return Wrong(r, step);
        },
        [&](int step, long wrong) { Report(step, wrong); },
        [&](int rank) { Finish(ranks_[rank]); });
  }

  // --processes: this process is one rank; NCCL's collectives keep the steps aligned. On the host
  // NCCL the send-race write is then not ordered before the peers' calls.
  void RunOneRank(int rank) {
    Rank& r = ranks_[rank];
    Init(r, rank);
    for (int step = 0; step < opt_.steps; ++step) {
      Fill(r, step);
      if (rank == opt_.scenario->race_rank)
        IssueRacing(r, step);
      else
        Issue(r, step);
      Sync(r, step);
      Report(step, Wrong(r, step));
    }
    Finish(r);
  }

  const std::string& prefix() const { return prefix_; }

  // One thread drives every rank with group calls (TensorFlow's NcclManager, nccl-tests -g).
  void RunGroup() {
    ncclGroupStart();
    for (int rank = 0; rank < opt_.ranks; ++rank) Init(ranks_[rank], rank);
    Check(ncclGroupEnd(), "ncclGroupEnd (init)", 0);
    for (int step = 0; step < opt_.steps; ++step) {
      for (Rank& r : ranks_) Fill(r, step);
      ncclGroupStart();
      for (Rank& r : ranks_) {
        be_.SetDevice(r.rank);
        if (r.rank == opt_.scenario->race_rank)
          IssueRacing(r, step);
        else
          Issue(r, step);
      }
      Check(ncclGroupEnd(), "ncclGroupEnd", 0);
      long wrong = 0;
      for (Rank& r : ranks_) Sync(r, step);
      for (Rank& r : ranks_) wrong += Wrong(r, step);
      Report(step, wrong);
    }
    for (Rank& r : ranks_) Finish(r);
  }

  long total() const { return total_; }

 private:
  const Options& opt_;
  Backend& be_;
  std::vector<Rank> ranks_;
  std::vector<TensorSpec> tensors_;  // the scenario's, with --race-elems applied
  std::vector<ncclUniqueId> ids_;
  std::string prefix_;  // "rank 1 " when this process is one rank of several
  long total_ = 0;
};

}  // namespace

void Heartbeat() { g_last_progress.store(NowS()); }

[[noreturn]] void ExitHang(const std::string& why) {
  std::fflush(stdout);
  std::printf("#hang: %s\n", why.c_str());
  std::fflush(stdout);
  _exit(3);  // other threads may be stuck inside NCCL: do not run destructors
}

void StartWatchdog(int seconds) {
  Heartbeat();
  std::thread([seconds] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      if (NowS() - g_last_progress.load() >= seconds) {
        ExitHang("no progress for " + std::to_string(seconds) + " s (watchdog)");
      }
    }
  }).detach();
}

int Run(const Options& opt, Backend& be) {
  if (opt.scenario->run != nullptr) return opt.scenario->run(opt, be);
  Runner runner(opt, be);
  if (opt.only_rank >= 0)
    runner.RunOneRank(opt.only_rank);
  else if (opt.group)
    runner.RunGroup();
  else
    runner.RunThreads();
  std::printf("%stotal: #wrong %ld\n", runner.prefix().c_str(), runner.total());
  return runner.total() > 0 ? 1 : 0;
}

}  // namespace ncclrr::example
