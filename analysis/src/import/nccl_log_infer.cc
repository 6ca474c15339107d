// How the importer decides which communicator handles of different processes are one
// communicator, and which rank each is, from the evidence a log may hold (strongest first):
//   commId of "Init COMPLETE"        -> same id = same communicator, rank from the line (certain)
//   parent/splitCount/color of splits -> same parent communicator and color (certain)
//   [nranks=N] + order of first use   -> the k-th N-rank handle a process (or, with one process
//                                        driving several GPUs, each GPU) used is the k-th N-rank
//                                        communicator of the job (likely)
// and for ranks: the Init line, RCCL's globalrank, torchrun's "[rankN]:" prefix for the largest
// communicator, else the order of hosts and CUDA devices (a guess).
#include <algorithm>
#include <set>
#include <tuple>

#include "import/nccl_log_job.h"

namespace ncclrr::nccl_log {
namespace {

// Larger communicators than this are damaged lines (the largest jobs have ~100k ranks); the
// analysis refuses them too.
constexpr int kMaxRanks = 1 << 18;

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

// Stand-in id of a split child: equal on every rank of the child (same parent, split ordinal and
// color). NCCL does not print a child's commHash.
uint64_t SplitId(uint64_t parent, int split_count, int color) {
  return Mix(Mix(parent ^ 0x9e3779b97f4a7c15ull, uint64_t(split_count)), uint64_t(uint32_t(color)));
}

// Stand-in id of a communicator known only by its size and the order processes first used it.
uint64_t InferredId(int nranks, int ordinal) {
  return Mix(Mix(0x6e63636c6c6f6721ull, uint64_t(nranks)), uint64_t(ordinal)) | 1;
}

// The ranks in [0, nranks) not in `taken`, as "3, 8-15", without listing them one by one (a
// line may claim a huge communicator).
std::string Gaps(const std::set<int>& taken, int nranks) {
  std::string out;
  int from = 0;
  auto add = [&](int a, int b) {  // [a, b)
    if (a >= b) return;
    out += (out.empty() ? "" : ", ") + std::to_string(a);
    if (b - a == 2) out += ", " + std::to_string(b - 1);
    if (b - a > 2) out += "-" + std::to_string(b - 1);
  };
  for (int r : taken) {
    add(from, r);
    from = r + 1;
  }
  add(from, nranks);
  return out;
}

int MajorityDevice(const Job& job, const LocalComm& l) {
  std::map<int, int> votes;
  for (size_t c : l.calls)
    if (job.calls[c].prefix_dev >= 0) ++votes[job.calls[c].prefix_dev];
  int best = -1, n = 0;
  for (const auto& [d, k] : votes)
    if (k > n) best = d, n = k;
  return best;
}

class Inference {
 public:
  explicit Inference(Job* job) : job_(*job) {}

  void Run() {
    for (const Process& p : job_.processes)  // processes are in the order the logs show them
      hosts_.try_emplace(p.host, static_cast<int>(hosts_.size()));
    for (LocalComm& l : job_.locals) {
      if (l.init) {
        l.rank = l.init->rank;
        l.nranks = l.init->nranks;
        if (l.init->cuda_dev >= 0) l.device = l.init->cuda_dev;
        l.rank_source = RankSource::kInitLine;
      }
      if (l.device < 0) l.device = MajorityDevice(job_, l);
      for (size_t c : l.calls)
        if (l.rank < 0 && job_.calls[c].fields.global_rank >= 0) {
          l.rank = job_.calls[c].fields.global_rank;
          l.rank_source = RankSource::kGlobalRank;
        }
      if (l.nranks <= 0)
        for (size_t c : l.calls) l.nranks = std::max(l.nranks, job_.calls[c].fields.nranks);
      if (l.nranks > kMaxRanks) l.nranks = -1;  // not a size NCCL prints: a damaged line
      if (l.nranks <= 0) l.nranks = 1;
      if (l.rank >= l.nranks) l.rank = -1, l.rank_source = RankSource::kUnknown;
      max_nranks_ = std::max(max_nranks_, l.nranks);
    }
    GroupByCommId();
    GroupSplits();
    GroupByFirstUse();
    for (size_t ci = 0; ci < job_.comms.size(); ++ci) {
      for (size_t m : job_.comms[ci].members) job_.locals[m].comm = ci;
      AssignRanks(job_.comms[ci]);
      AssignSeqs(job_.comms[ci]);
      SeparateDevices(job_.comms[ci]);
    }
  }

 private:
  size_t CommFor(const std::string& key, uint64_t id, int nranks) {
    auto [it, added] = by_key_.try_emplace(key, job_.comms.size());
    if (added) {
      job_.comms.emplace_back();
      job_.comms.back().id = id;
      job_.comms.back().nranks = nranks;
    }
    return it->second;
  }

  void GroupByCommId() {
    for (size_t i = 0; i < job_.locals.size(); ++i) {
      LocalComm& l = job_.locals[i];
      if (!l.init || !l.init->comm_id) continue;
      const size_t ci =
          CommFor("id" + std::to_string(*l.init->comm_id), *l.init->comm_id, l.nranks);
      InferredComm& c = job_.comms[ci];
      c.nccl_hash_known = true;
      c.origin =
          l.init->function == "ncclCommInitAll" ? CommOrigin::kInitAll : CommOrigin::kInitRank;
      c.note = "identified by NCCL's commId on the 'Init COMPLETE' lines (certain)";
      Join(ci, i);
    }
  }

  void GroupSplits() {
    for (size_t i = 0; i < job_.locals.size(); ++i) {
      LocalComm& l = job_.locals[i];
      if (!l.init || !l.init->parent || l.comm != SIZE_MAX) continue;
      const Process& p = job_.processes[l.process];
      uint64_t parent = *l.init->parent;
      auto it = p.locals.find(parent);
      if (it != p.locals.end() && job_.locals[it->second].comm != SIZE_MAX)
        parent = job_.comms[job_.locals[it->second].comm].id;
      const uint64_t id = SplitId(parent, l.init->split_count, l.init->color);
      const size_t ci = CommFor("split" + std::to_string(id), id, l.nranks);
      InferredComm& c = job_.comms[ci];
      c.origin = CommOrigin::kSplit;
      c.parent_id = parent;
      c.color = l.init->color;
      c.key = l.init->key;
      c.note = "a split (parent, split ordinal and color from the 'Init COMPLETE' lines; certain)";
      Join(ci, i);
    }
  }

  // The k-th handle of a given size a process used (per rank or GPU when one process holds
  // several) is the k-th communicator of that size.
  void GroupByFirstUse() {
    std::vector<size_t> rest;
    for (size_t i = 0; i < job_.locals.size(); ++i)
      if (job_.locals[i].comm == SIZE_MAX) rest.push_back(i);
    std::stable_sort(rest.begin(), rest.end(), [&](size_t a, size_t b) {
      return job_.locals[a].first_ns < job_.locals[b].first_ns;
    });
    std::map<std::tuple<size_t, int, int>, int> ordinals;  // (process, nranks, rank|dev) -> next
    for (size_t i : rest) {
      LocalComm& l = job_.locals[i];
      const int lane = l.rank >= 0 ? l.rank : l.device;
      const int k = ordinals[{l.process, l.nranks, lane}]++;
      const size_t ci = CommFor("n" + std::to_string(l.nranks) + "k" + std::to_string(k),
                                InferredId(l.nranks, k), l.nranks);
      InferredComm& c = job_.comms[ci];
      if (c.note.empty()) {
        c.note = l.init ? "Init lines without commId" : "no 'Init COMPLETE' line";
        c.note += ": grouped by [nranks=" + std::to_string(l.nranks) + "]";
        c.note += k == 0 ? " (likely)"
                         : " and order of first use (number " + std::to_string(k + 1) +
                               " of that size in each process; likely)";
      }
      Join(ci, i);
    }
  }

  void Join(size_t ci, size_t local) {
    job_.comms[ci].members.push_back(local);
    job_.comms[ci].nranks = std::max(job_.comms[ci].nranks, job_.locals[local].nranks);
    job_.locals[local].comm = ci;
  }

  void AssignRanks(InferredComm& c) {
    std::set<int> taken;
    std::vector<size_t> unknown;
    std::map<RankSource, int> sources;
    for (size_t m : c.members) {
      LocalComm& l = job_.locals[m];
      // A rank an Init line or RCCL names is kept even when another handle claims it too:
      // check reports that as a lifecycle_error.
      const bool certain =
          l.rank_source == RankSource::kInitLine || l.rank_source == RankSource::kGlobalRank;
      if (l.rank >= 0 && l.rank < c.nranks && (taken.insert(l.rank).second || certain))
        ++sources[l.rank_source];
      else
        l.rank = -1, unknown.push_back(m);
    }
    if (!unknown.empty() && UseLauncherRanks(c, unknown, taken)) {
      for (size_t m : unknown) {
        LocalComm& l = job_.locals[m];
        l.rank = job_.processes[l.process].launcher_rank;
        l.rank_source = RankSource::kLauncher;
        taken.insert(l.rank);
        ++sources[RankSource::kLauncher];
      }
      unknown.clear();
    }
    if (!unknown.empty() && UseDevices(c, unknown, taken)) {
      for (size_t m : unknown) {
        LocalComm& l = job_.locals[m];
        l.rank = l.device;
        l.rank_source = RankSource::kDevice;
        taken.insert(l.rank);
        ++sources[RankSource::kDevice];
      }
      unknown.clear();
    }
    // The rest: in order of host (as first seen), CUDA device and pid, the lowest free ranks
    // that are not the peer of one of its own sends or receives.
    std::stable_sort(unknown.begin(), unknown.end(), [&](size_t a, size_t b) {
      const LocalComm &x = job_.locals[a], &y = job_.locals[b];
      return std::make_tuple(HostOrder(x), x.device, job_.processes[x.process].pid, x.handle) <
             std::make_tuple(HostOrder(y), y.device, job_.processes[y.process].pid, y.handle);
    });
    for (size_t m : unknown) {
      LocalComm& l = job_.locals[m];
      const std::set<int> peers = PeersOf(l);
      int next = 0;
      while (taken.count(next) || (peers.count(next) && next + 1 < c.nranks)) ++next;
      if (next >= c.nranks) c.nranks = next + 1;  // more handles than [nranks]: keep them all
      l.rank = next;
      l.rank_source = RankSource::kGuess;
      taken.insert(next);
      ++sources[RankSource::kGuess];
    }
    std::string how;
    auto add = [&](RankSource s, const char* text) {
      if (sources.count(s)) how += (how.empty() ? "" : ", ") + std::string(text);
    };
    add(RankSource::kInitLine, "ranks from the Init lines (certain)");
    add(RankSource::kGlobalRank, "ranks from RCCL's globalrank (certain)");
    add(RankSource::kLauncher, "ranks from the launcher's [rankN] prefix (likely)");
    add(RankSource::kDevice, "ranks guessed to be the CUDA devices (one host; a guess)");
    add(RankSource::kGuess, "ranks guessed from the order of hosts and CUDA devices (a guess)");
    c.note += "; " + how;
    c.note += "; " + std::to_string(c.members.size()) + " of " + std::to_string(c.nranks) +
              " ranks logged";
    if (const std::string absent = Gaps(taken, c.nranks); !absent.empty())
      c.note += "; rank" + std::string(c.nranks - taken.size() > 1 ? "s " : " ") + absent +
                " absent from the logs";
  }

  // The ranks a handle's sends and receives name: not its own rank (NCCL allows a send to
  // oneself, but programs rarely make one).
  std::set<int> PeersOf(const LocalComm& l) const {
    std::set<int> peers;
    for (size_t ci : l.calls)
      if (IsP2p(ApiFromName(job_.calls[ci].fields.op))) peers.insert(job_.calls[ci].fields.root);
    return peers;
  }

  // One host whose processes use distinct GPUs: on the first host of a job launched per GPU
  // (torchrun, mpirun) the rank is the device.
  bool UseDevices(const InferredComm& c, const std::vector<size_t>& unknown,
                  const std::set<int>& taken) const {
    std::set<int> seen;
    const std::string& host = job_.processes[job_.locals[unknown.front()].process].host;
    for (size_t m : unknown) {
      const LocalComm& l = job_.locals[m];
      if (job_.processes[l.process].host != host || l.device < 0 || l.device >= c.nranks ||
          taken.count(l.device) || PeersOf(l).count(l.device) || !seen.insert(l.device).second)
        return false;
    }
    return true;
  }

  // One process driving several GPUs from one thread (RCCL's replayer, ncclCommInitAll) prints
  // every line with that thread's device: the ranks' devices are unknown, and taken to be their
  // ranks so that each rank keeps a device of its own.
  void SeparateDevices(InferredComm& c) {
    std::map<std::pair<size_t, int>, int> users;
    for (size_t m : c.members) ++users[{job_.locals[m].process, job_.locals[m].device}];
    bool changed = false;
    for (size_t m : c.members) {
      LocalComm& l = job_.locals[m];
      if (users[{l.process, l.device}] < 2 || (l.init && l.init->cuda_dev >= 0)) continue;
      l.device = l.rank;
      changed = true;
    }
    if (changed)
      c.note +=
          "; one process printed several ranks' calls from one device: each rank's device "
          "is taken to be its rank";
  }

  // torchrun's "[rankN]:" is the global rank: it is this communicator's rank only for the
  // job-wide one, taken to be the largest.
  bool UseLauncherRanks(const InferredComm& c, const std::vector<size_t>& unknown,
                        const std::set<int>& taken) const {
    if (c.nranks != max_nranks_) return false;
    std::set<int> seen;
    for (size_t m : unknown) {
      const int r = job_.processes[job_.locals[m].process].launcher_rank;
      if (r < 0 || r >= c.nranks || taken.count(r) || !seen.insert(r).second) return false;
    }
    return true;
  }

  // opCount is NCCL's per-communicator collective counter: when every rank's collectives carry
  // increasing opCounts (and no p2p shares the counter), it aligns excerpts that start at
  // different places. Otherwise calls are numbered in log order.
  void AssignSeqs(InferredComm& c) {
    bool by_op_count = true;
    uint64_t base = UINT64_MAX;
    for (size_t m : c.members) {
      bool first = true;
      uint64_t last = 0;
      for (size_t ci : job_.locals[m].calls) {
        const LoggedCall& call = job_.calls[ci];
        const Api api = ApiFromName(call.fields.op);
        if (IsP2p(api) || (IsCollective(api) && !call.fields.has_op_count)) by_op_count = false;
        if (!IsCollective(api)) continue;
        if (!first && call.fields.op_count <= last) by_op_count = false;
        if (first) base = std::min(base, call.fields.op_count);
        first = false;
        last = call.fields.op_count;
      }
    }
    bool any = false;
    for (size_t m : c.members) {
      uint64_t n = 0;
      std::map<std::pair<int, int>, uint64_t> p2p;
      for (size_t ci : job_.locals[m].calls) {
        LoggedCall& call = job_.calls[ci];
        const Api api = ApiFromName(call.fields.op);
        if (IsP2p(api))
          call.seq = p2p[{api == Api::kSend ? 0 : 1, call.fields.root}]++;
        else if (IsCollective(api))
          call.seq = by_op_count ? call.fields.op_count - base : n++, any = true;
      }
    }
    if (any) c.note += by_op_count ? "; calls aligned by opCount" : "; calls aligned by log order";
  }

  int HostOrder(const LocalComm& l) const { return hosts_.at(job_.processes[l.process].host); }

  Job& job_;
  std::map<std::string, size_t> by_key_;
  std::map<std::string, int> hosts_;
  int max_nranks_ = 0;
};

}  // namespace

void InferCommunicators(Job* job) { Inference(job).Run(); }

}  // namespace ncclrr::nccl_log
