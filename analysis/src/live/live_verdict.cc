// Where each communicator stands: which collective its ranks wait in, for how long, and which
// ranks never issued it (live_status.h).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <set>

#include <fmt/format.h>

#include "live/live_state.h"
#include "ncclrr/analysis/model.h"

namespace ncclrr::analysis {
namespace {

struct CommRankView {
  const LiveFile* file;
  const LiveCommRank* cr;
  int64_t issued() const {
    return cr->recent.empty() ? -1 : static_cast<int64_t>(cr->recent.back().seq);
  }
};

LiveCall CallOf(const LiveFile& f, const CallRecord& c, int64_t now, bool in_flight) {
  LiveCall l;
  l.comm_id = c.comm_id;
  l.comm_name = f.CommName(c.comm_id);
  l.seq = c.seq == kNoSeq ? 0 : c.seq;
  l.call = ShortCall(c);
  l.ago_s = f.Ago(c.enter_ns, now);
  l.in_flight = in_flight;
  l.gpu = GpuStateOf(f, c, now, &l.gpu_s);
  return l;
}

// When the collective `seq` was first issued by a rank that issued it (for ranks that issued
// more than the kept window, the oldest kept call: a lower bound on the wait).
bool FirstIssued(const std::vector<CommRankView>& ranks, uint64_t seq, int64_t now, double* ago,
                 std::string* call) {
  bool found = false;
  for (const CommRankView& r : ranks) {
    if (r.issued() < static_cast<int64_t>(seq)) continue;
    const CallRecord* c = &r.cr->recent.front();
    for (const CallRecord& k : r.cr->recent)
      if (k.seq == seq) c = &k;
    const double a = r.file->Ago(c->enter_ns, now);
    if (!found || a > *ago) {
      *ago = a;
      *call = c->seq == seq ? ShortCall(*c) : "";
    }
    found = true;
  }
  return found;
}

std::string Seconds(double s) { return fmt::format("{:.1f} s", std::max(0.0, s)); }

std::string Ranks(const std::vector<int>& r) {
  std::string s;
  for (size_t i = 0; i < r.size(); ++i)
    s += (i ? (i + 1 == r.size() ? " and " : ", ") : "") + std::to_string(r[i]);
  return s;
}

// Over the recent collectives every rank issued, how long after the first rank each issued them
// (median): a rank consistently late is the straggler the others wait for, even when a single
// moment shows every rank at the same collective.
void JudgeLag(const std::vector<CommRankView>& views, const LiveStatusOptions& o, int64_t now,
              LiveComm* out) {
  if (views.size() < 2) return;
  std::map<uint64_t, std::vector<int64_t>> issued;  // seq -> real issue time per view
  for (size_t v = 0; v < views.size(); ++v)
    for (const CallRecord& c : views[v].cr->recent) {
      auto& times = issued[c.seq];
      times.resize(views.size(), INT64_MIN);
      times[v] = c.enter_ns + views[v].file->real_minus_mono;
    }
  std::vector<std::vector<double>> lags(views.size());
  for (const auto& [seq, times] : issued) {
    if (std::count(times.begin(), times.end(), INT64_MIN) > 0 || times.size() < views.size())
      continue;
    const int64_t first = *std::min_element(times.begin(), times.end());
    for (size_t v = 0; v < views.size(); ++v)
      lags[v].push_back(static_cast<double>(times[v] - first) * 1e-9);
  }
  constexpr size_t kMinCollectives = 8;
  std::vector<int> slow;
  for (size_t v = 0; v < views.size(); ++v) {
    if (lags[v].size() < kMinCollectives) return;
    std::nth_element(lags[v].begin(), lags[v].begin() + lags[v].size() / 2, lags[v].end());
    const double median = lags[v][lags[v].size() / 2];
    if (median < o.straggler_lag_s) continue;
    LiveMissing m;
    m.rank = views[v].cr->rank;
    m.process = views[v].file->Process();
    m.lag_s = median;
    const int64_t ahead = views[v].issued();
    for (const CommRankView& w : views)
      m.calls_behind = std::max<uint64_t>(
          m.calls_behind, static_cast<uint64_t>(std::max<int64_t>(0, w.issued() - ahead)));
    if (views[v].file->has_last) {
      m.has_elsewhere = true;
      m.last_anywhere = CallOf(*views[v].file, views[v].file->last, now,
                               views[v].file->open_calls.count(views[v].file->last.uid) > 0);
    }
    out->missing.push_back(m);
    slow.push_back(m.rank);
  }
  if (slow.empty()) return;
  std::sort(out->missing.begin(), out->missing.end(),
            [](const LiveMissing& a, const LiveMissing& b) { return a.rank < b.rank; });
  std::sort(slow.begin(), slow.end());
  out->state = LiveState::kStraggler;
  out->why = fmt::format(
      "rank(s) {} issue the recent collectives late (rank {}: {:.2f} s after the first rank, "
      "median of the last {}): the others wait for them",
      Ranks(slow), out->missing.front().rank, out->missing.front().lag_s, lags.front().size());
}

// The oldest of the rank's recent collectives on this communicator that its GPU has not
// finished: the calls after the newest finished one.
void GpuFront(const LiveFile& f, const LiveCommRank& cr, int64_t now, LiveRank* r) {
  r->gpu_progress = f.gpu_progress;
  if (!f.gpu_progress) return;
  const CallRecord* front = nullptr;
  for (auto it = cr.recent.rbegin(); it != cr.recent.rend(); ++it) {
    double s = 0;
    if (GpuStateOf(f, *it, now, &s) == LiveGpu::kDone) break;
    front = &*it;
  }
  if (front == nullptr) return;
  r->has_gpu_front = true;
  r->gpu_front = CallOf(f, *front, now, cr.in_flight.count(front->uid) > 0);
}

// Every rank issued the same last collective and returned from it (frameworks enqueue and go
// on): with GPU progress, a collective that has not started on some ranks' GPUs for
// hang_after_s, or has run on every rank's GPU that long, is a hang the host side cannot see.
bool JudgeGpu(const LiveStatusOptions& o, LiveComm* out) {
  // The collective the GPUs are at: the oldest one some rank's GPU has not finished.
  uint64_t at = UINT64_MAX;
  for (const LiveRank& r : out->ranks) {
    if (!r.gpu_progress || !r.has_gpu_front) return false;
    at = std::min(at, r.gpu_front.seq);
  }
  std::vector<int> not_started, running;
  double longest = 0;
  const LiveCall* call = nullptr;
  for (const LiveRank& r : out->ranks) {
    const LiveCall& g = r.gpu_front;
    if (g.seq != at) return false;  // a GPU further on: not one collective everybody waits in
    call = &g;
    if (g.gpu == LiveGpu::kNotStarted && g.ago_s >= o.hang_after_s) {
      not_started.push_back(r.rank);
      longest = std::max(longest, g.ago_s);
    } else if (g.gpu == LiveGpu::kRunning && g.gpu_s >= o.hang_after_s) {
      running.push_back(r.rank);
      longest = std::max(longest, g.gpu_s);
    }
  }
  const std::string seq = "seq " + std::to_string(at);
  if (!not_started.empty()) {
    out->why = "every rank issued " + seq + "; on rank(s) " + Ranks(not_started) +
               " it has not started on the GPU " + Seconds(longest) +
               " after it was issued: their stream is still busy with earlier work (a kernel "
               "that does not end, or a wait for an event that is never recorded)" +
               (running.empty()
                    ? std::string()
                    : ", while rank(s) " + Ranks(running) + " run it on the GPU and wait for them");
  } else if (running.size() == out->ranks.size()) {
    out->why = "every rank issued " + seq + " and it has run on every rank's GPU for " +
               Seconds(longest) +
               (out->unseen_ranks > 0
                    ? "; " + std::to_string(out->unseen_ranks) +
                          " rank(s) of this communicator have no trace file here: NCCL waits for "
                          "them (not recorded, or on another host whose files are elsewhere)"
                    : " (NCCL cannot finish it: a peer's GPU is stuck, a network fault, or a "
                      "crash)");
  } else {
    return false;
  }
  out->state = LiveState::kHung;
  out->wait_seq = at;
  out->wait_call = call->call;
  out->wait_s = longest;
  out->waiting = running;
  for (int r : not_started) {
    LiveMissing m;
    m.rank = r;
    for (const LiveRank& k : out->ranks)
      if (k.rank == r) {
        m.process = k.process;
        m.file = k.file;
        m.gpu_not_started = true;
        m.has_elsewhere = true;
        m.last_anywhere = k.gpu_front;
      }
    out->missing.push_back(m);
  }
  return true;
}

// The call in flight longest (the earliest issued), or null.
const CallRecord* Oldest(const std::map<uint64_t, CallRecord>& in_flight) {
  const CallRecord* oldest = nullptr;
  for (const auto& [uid, c] : in_flight)
    if (!oldest || c.enter_ns < oldest->enter_ns) oldest = &c;
  return oldest;
}

// Sends (Recvs) `cr` posted to (from) `peer`: returned, and still in flight.
uint64_t Posted(const LiveCommRank& cr, int peer, bool send) {
  auto it = cr.p2p_returned.find({peer, send});
  uint64_t n = it == cr.p2p_returned.end() ? 0 : it->second;
  for (const auto& [uid, c] : cr.p2p_in_flight)
    n += c.root_peer == peer && (static_cast<Api>(c.api) == Api::kSend) == send;
  return n;
}

// Ranks not blocked in a Send or Recv whose last one has no partner on its peer yet and whose
// process made no NCCL call after it: a grouped Send returns at once and the process waits in
// the group's end (or a later synchronisation), which the trace does not show.
void UnmatchedP2p(const std::vector<CommRankView>& views, int64_t now, LiveComm* out) {
  std::map<int, const CommRankView*> by_rank;
  for (const CommRankView& v : views)
    if (v.cr->has_last_p2p || !v.cr->p2p_in_flight.empty()) by_rank[v.cr->rank] = &v;
  if (by_rank.empty()) return;
  for (LiveRank& r : out->ranks) {
    if (r.p2p_blocked) continue;
    const auto mine = by_rank.find(r.rank);
    if (mine == by_rank.end()) continue;
    const CommRankView* me = mine->second;
    if (!me->cr->has_last_p2p || me->file->closed || me->cr->p2p_uncounted) continue;
    const CallRecord& last = me->cr->last_p2p;
    if (!me->file->has_last || me->file->last.uid != last.uid) continue;  // called NCCL since
    const bool send = static_cast<Api>(last.api) == Api::kSend;
    const auto theirs = by_rank.find(last.root_peer);
    if (theirs == by_rank.end() || theirs->second->cr->p2p_uncounted) continue;
    const CommRankView* peer = theirs->second;
    if (Posted(*peer->cr, r.rank, !send) >= Posted(*me->cr, last.root_peer, send)) continue;
    r.p2p_blocked = true;
    r.p2p_unmatched = true;
    r.p2p_blocked_in = CallOf(*me->file, last, now, false);
  }
}

// No collective is waited in, but ranks have been blocked in (or, UnmatchedP2p, stopped after) a
// Send or Recv for hang_after_s: NCCL cannot pair them (a Send whose Recv was never posted,
// ranks that all send first).
bool JudgeP2p(const LiveStatusOptions& o, LiveComm* out) {
  double longest = 0;
  std::vector<int> blocked;
  std::string calls;
  for (const LiveRank& r : out->ranks) {
    if (!r.p2p_blocked || r.p2p_blocked_in.ago_s < o.hang_after_s) continue;
    blocked.push_back(r.rank);
    constexpr size_t kListed = 8;
    if (blocked.size() <= kListed)
      calls += std::string(calls.empty() ? "" : ", ") + "rank " + std::to_string(r.rank) +
               (r.p2p_unmatched ? " since " : " in ") + r.p2p_blocked_in.call;
    if (r.p2p_blocked_in.ago_s > longest) {
      longest = r.p2p_blocked_in.ago_s;
      out->wait_call = r.p2p_blocked_in.call;
    }
  }
  if (blocked.empty()) return false;
  out->state = LiveState::kHung;
  out->wait_s = longest;
  out->waiting = blocked;
  out->why = "rank(s) " + Ranks(blocked) +
             " have waited on point-to-point calls their peers have not matched, for up to " +
             Seconds(longest) + " (" + calls +
             "; none made an NCCL call since): a Send whose Recv was never posted, or ranks that "
             "all send before they receive (`ncclrr check` says which)";
  return true;
}

void Judge(uint64_t id, const std::vector<CommRankView>& views, const LiveStatusOptions& o,
           int64_t now, LiveComm* out) {
  out->id = id;
  int nranks = 0;
  for (const CommRankView& v : views) nranks = std::max({nranks, v.cr->nranks, v.cr->rank + 1});
  out->nranks = nranks;
  bool all_closed = true;
  int64_t ahead = -1, low = INT64_MAX;
  for (const CommRankView& v : views) {
    if (out->name.empty()) out->name = v.file->CommName(id);
    all_closed &= v.file->closed;
    LiveRank r;
    r.rank = v.cr->rank;
    r.process = v.file->Process();
    r.file = v.file->follower.path();
    if (!v.cr->recent.empty()) {
      r.has_call = true;
      r.last = CallOf(*v.file, v.cr->recent.back(), now,
                      v.cr->in_flight.count(v.cr->recent.back().uid) > 0);
    }
    if (const CallRecord* oldest = Oldest(v.cr->in_flight)) {
      r.blocked = true;
      r.blocked_in = CallOf(*v.file, *oldest, now, true);
    }
    r.p2p_calls = v.cr->p2p_calls;
    if (const CallRecord* oldest = Oldest(v.cr->p2p_in_flight)) {
      r.p2p_blocked = true;
      r.p2p_blocked_in = CallOf(*v.file, *oldest, now, true);
    }
    GpuFront(*v.file, *v.cr, now, &r);
    out->ranks.push_back(r);
    ahead = std::max(ahead, v.issued());
    low = std::min(low, v.issued());
  }
  UnmatchedP2p(views, now, out);
  std::sort(out->ranks.begin(), out->ranks.end(),
            [](const LiveRank& a, const LiveRank& b) { return a.rank < b.rank; });
  out->unseen_ranks = std::max(0, nranks - static_cast<int>(views.size()));
  if (all_closed) {
    out->state = LiveState::kFinished;
    out->why = "every rank's process closed its trace";
    return;
  }
  if (ahead < 0) {
    if (JudgeP2p(o, out)) return;
    out->why = "no collective issued yet";
    return;
  }
  if (low < ahead) {
    // Some ranks have not issued seq low + 1, which the others did: how long have they waited?
    const uint64_t seq = static_cast<uint64_t>(low + 1);
    double wait = 0;
    std::string call;
    FirstIssued(views, seq, now, &wait, &call);
    out->wait_seq = seq;
    out->wait_call = call;
    out->wait_s = wait;
    for (const CommRankView& v : views) {
      const int64_t issued = v.issued();
      if (issued >= static_cast<int64_t>(seq)) {
        out->waiting.push_back(v.cr->rank);
        continue;
      }
      LiveMissing m;
      m.rank = v.cr->rank;
      m.process = v.file->Process();
      m.file = v.file->follower.path();
      m.calls_behind = static_cast<uint64_t>(ahead - issued);
      if (v.file->has_last) {
        m.has_elsewhere = true;
        m.last_anywhere =
            CallOf(*v.file, v.file->last, now, v.file->open_calls.count(v.file->last.uid) > 0);
      }
      out->missing.push_back(m);
      for (LiveRank& r : out->ranks)
        if (r.rank == m.rank) r.behind = true;
    }
    std::sort(out->waiting.begin(), out->waiting.end());
    std::sort(out->missing.begin(), out->missing.end(),
              [](const LiveMissing& a, const LiveMissing& b) { return a.rank < b.rank; });
    std::vector<int> missing;
    for (const LiveMissing& m : out->missing) missing.push_back(m.rank);
    if (wait >= o.hang_after_s) {
      out->state = LiveState::kHung;
      out->why = "seq " + std::to_string(seq) + " has waited " + Seconds(wait) + " for rank(s) " +
                 Ranks(missing) + ", which never issued it";
    } else if (wait >= o.straggler_after_s) {
      out->state = LiveState::kStraggler;
      out->why = "rank(s) " + Ranks(missing) + " behind: seq " + std::to_string(seq) +
                 " issued by the others " + Seconds(wait) + " ago";
    } else {
      out->why = "every rank keeps up";
      out->missing.clear();
      out->waiting.clear();
      for (LiveRank& r : out->ranks) r.behind = false;
      JudgeLag(views, o, now, out);
    }
    return;
  }
  // Every rank seen issued the same last collective: are some blocked inside it?
  double longest = 0;
  std::vector<int> blocked;
  uint64_t seq = 0;
  std::string call;
  for (const LiveRank& r : out->ranks)
    if (r.blocked && r.blocked_in.ago_s >= o.hang_after_s) {
      blocked.push_back(r.rank);
      if (r.blocked_in.ago_s > longest) {
        longest = r.blocked_in.ago_s;
        seq = r.blocked_in.seq;
        call = r.blocked_in.call;
      }
    }
  if (blocked.empty()) {
    if (JudgeGpu(o, out) || JudgeP2p(o, out)) return;
    out->why = "every rank keeps up";
    JudgeLag(views, o, now, out);
    return;
  }
  out->state = LiveState::kHung;
  out->wait_seq = seq;
  out->wait_call = call;
  out->wait_s = longest;
  out->waiting = blocked;
  if (out->unseen_ranks > 0) {
    out->why = "rank(s) " + Ranks(blocked) + " blocked in seq " + std::to_string(seq) + " for " +
               Seconds(longest) + "; " + std::to_string(out->unseen_ranks) +
               " rank(s) of this communicator have no trace file here (not recorded, or on "
               "another host whose files are elsewhere)";
    // The ranks without a file, the first kListedAbsent of them (a communicator record of a
    // damaged file may claim any size; unseen_ranks has the count).
    constexpr size_t kListedAbsent = 64;
    std::set<int> seen;
    for (const LiveRank& x : out->ranks) seen.insert(x.rank);
    for (int r = 0; r < nranks && out->missing.size() < kListedAbsent; ++r)
      if (!seen.count(r)) {
        LiveMissing m;
        m.rank = r;
        out->missing.push_back(m);
      }
    return;
  }
  out->why = "every rank issued seq " + std::to_string(seq) + "; rank(s) " + Ranks(blocked) +
             " have been blocked inside it for " + Seconds(longest) +
             " (NCCL cannot finish it: a peer's GPU is stuck, a network fault, or a crash)";
}

}  // namespace

void JudgeComms(const std::map<std::string, LiveFile>& files, const LiveStatusOptions& o,
                int64_t now, LiveReport* report) {
  std::map<uint64_t, std::vector<CommRankView>> by_comm;
  for (const auto& [path, f] : files)
    for (const auto& [key, cr] : f.comm_ranks) by_comm[key.first].push_back({&f, &cr});
  bool any_call = false;
  for (const auto& [id, views] : by_comm) {
    LiveComm c;
    Judge(id, views, o, now, &c);
    for (const LiveRank& r : c.ranks)
      any_call |= r.has_call || r.blocked || r.p2p_calls > 0 || r.p2p_blocked;
    report->comms.push_back(std::move(c));
  }
  // Deadlocks: a rank waited for here waits itself in another communicator for a rank that
  // waits here (communicators used in opposite orders).
  auto file_of = [](const LiveComm& c, int rank) {
    for (const LiveRank& r : c.ranks)
      if (r.rank == rank) return r.file;
    return std::string();
  };
  for (LiveComm& c : report->comms) {
    if (c.state != LiveState::kHung) continue;
    for (LiveMissing& m : c.missing)
      for (const LiveComm& d : report->comms) {
        if (&d == &c || d.state != LiveState::kHung || m.file.empty()) continue;
        bool m_waits_in_d = false, d_waits_for_c = false;
        for (int w : d.waiting) m_waits_in_d |= file_of(d, w) == m.file;
        for (const LiveMissing& n : d.missing)
          for (int w : c.waiting) d_waits_for_c |= !n.file.empty() && file_of(c, w) == n.file;
        if (m_waits_in_d && d_waits_for_c && !m.deadlock) {
          m.deadlock = true;
          m.deadlock_comm = d.id;
          m.deadlock_seq = d.wait_seq;
        }
      }
  }
  // Processes of this machine that are gone without closing their trace were killed.
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  for (const auto& [path, f] : files) {
    if (f.closed || !f.follower.has_header() || f.follower.header().host != host) continue;
    const pid_t pid = f.follower.header().pid;
    if (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH)
      report->notes.push_back(f.Process() + " has not closed its trace and no process " +
                              std::to_string(pid) +
                              " runs on this machine: it was killed (or "
                              "it ran on another machine of the same name)");
  }
  auto any = [&](LiveState s) {
    return std::any_of(report->comms.begin(), report->comms.end(),
                       [&](const LiveComm& c) { return c.state == s; });
  };
  if (report->files == 0 || !any_call)
    report->verdict = LiveVerdict::kNoData;
  else if (any(LiveState::kHung))
    report->verdict = LiveVerdict::kHung;
  else if (any(LiveState::kStraggler))
    report->verdict = LiveVerdict::kStraggler;
  else if (report->open_files == 0)
    report->verdict = LiveVerdict::kFinished;
  else
    report->verdict = LiveVerdict::kRunning;
}

}  // namespace ncclrr::analysis
