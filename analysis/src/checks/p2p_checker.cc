// p2p_mismatch: Send and Recv pair by (sender, receiver, per-pair order). The k-th Send from a
// to b must meet the k-th Recv on b from a with the same size and datatype; a Send without a
// Recv (or the reverse) leaves one side waiting.
#include <algorithm>
#include <map>
#include <set>

#include "checks/checkers.h"
#include "report/text_util.h"

namespace ncclrr::analysis {
namespace {

class P2pChecker : public Checker {
 public:
  std::string_view name() const override { return "point to point"; }

  void Run(CheckContext& ctx, FindingSink& sink) override {
    for (size_t ci = 0; ci < ctx.model().comms().size(); ++ci)
      if (ctx.Owns(ci)) CheckComm(ctx, ci, sink);
  }

 private:
  using Lists = std::map<std::pair<int, int>, std::vector<const P2pCall*>>;  // (src, dst)

  // Peers outside the communicator cannot pair with anything; they are returned in `invalid`.
  static void Collect(const RankView& r, int nranks, Lists* sends, Lists* recvs,
                      std::vector<const P2pCall*>* invalid) {
    for (const P2pCall& p : r.p2p) {
      if (p.peer < 0 || p.peer >= nranks) {
        invalid->push_back(&p);
        continue;
      }
      (p.send ? (*sends)[{r.rank, p.peer}] : (*recvs)[{p.peer, r.rank}]).push_back(&p);
    }
    auto order = [](Lists* l) {
      for (auto& [k, v] : *l)
        std::stable_sort(v.begin(), v.end(), [](const P2pCall* a, const P2pCall* b) {
          return a->pair_seq < b->pair_seq;
        });
    };
    order(sends);
    order(recvs);
  }

  void CheckComm(CheckContext& ctx, size_t ci, FindingSink& sink) {
    const TraceModel& m = ctx.model();
    const CommModel& c = m.comms()[ci];
    Lists sends, recvs;
    const int nranks = static_cast<int>(c.ranks.size());
    for (const RankView& r : c.ranks) {
      std::vector<const P2pCall*> invalid;
      Collect(r, nranks, &sends, &recvs, &invalid);
      for (const P2pCall* p : invalid) {
        const CallRecord& x = m.call(p->call);
        Finding f = FindingOn(FindingKind::kP2pMismatch, m, ci);
        f.seq = p->pair_seq;
        f.peer = p->peer;
        f.ranks = {r.rank};
        f.first_time = p->time_ns;
        f.calls = {{p->call, r.rank, p->pair_seq}};
        f.pattern = "invalid peer " + std::to_string(p->peer);
        f.table = {{std::to_string(r.rank), std::to_string(p->pair_seq), ShortCall(x), true}};
        f.short_text = "rank " + std::to_string(r.rank) + " posted " + ShortCall(x) +
                       " with a peer outside the communicator (" + std::to_string(nranks) +
                       " ranks)";
        f.message = "Rank " + std::to_string(r.rank) + " posted " + ShortCall(x) + " naming peer " +
                    std::to_string(p->peer) + ", which is not a rank of " + CommLabel(c) +
                    ": NCCL rejects it (ncclInvalidArgument) or the call never pairs. Peers are "
                    "ranks of the communicator the call is issued on, not global ranks.";
        sink.Add(std::move(f));
      }
    }
    std::set<std::pair<int, int>> pairs;
    for (const auto& [k, v] : sends) pairs.insert(k);
    for (const auto& [k, v] : recvs) pairs.insert(k);
    std::vector<SizeMismatch> mismatches;
    for (const auto& [src, dst] : pairs) {
      const auto& s = sends[{src, dst}];
      const auto& r = recvs[{src, dst}];
      // Pair by per-pair index (graph launches leave gaps in the eager calls' indices).
      for (size_t i = 0, j = 0; i < s.size() && j < r.size();) {
        if (s[i]->pair_seq != r[j]->pair_seq) {
          (s[i]->pair_seq < r[j]->pair_seq ? i : j)++;
          continue;
        }
        const P2pCall* ps = s[i++];
        const P2pCall* pr = r[j++];
        const CallRecord& a = m.call(ps->call);
        const CallRecord& b = m.call(pr->call);
        if (a.count * DtypeSize(a.dtype) != b.count * DtypeSize(b.dtype) || a.dtype != b.dtype)
          mismatches.push_back({src, dst, ps->pair_seq, ps, pr});
      }
    }
    ReportMismatches(ctx, ci, mismatches, sends, recvs, sink);
    // After a mismatch NCCL fails the ranks where it notices, and a job that was ended there
    // leaves counts that differ at the end of the pairs that mismatched: that is where they
    // stopped, not a Send or Recv missing of its own.
    std::set<int> mismatched;
    for (const SizeMismatch& x : mismatches) mismatched.insert({x.src, x.dst});
    auto stopped = [&](int rank) {
      return !c.ranks[rank].has_file() || !m.files()[c.ranks[rank].file].clean;
    };
    std::vector<Unmatched> unmatched;
    for (const auto& [src, dst] : pairs) {
      if (mismatched.count(src) && mismatched.count(dst) && (stopped(src) || stopped(dst)))
        continue;
      const auto& s = sends[{src, dst}];
      const auto& r = recvs[{src, dst}];
      const uint64_t ns = s.empty() ? 0 : s.back()->pair_seq + 1;
      const uint64_t nr = r.empty() ? 0 : r.back()->pair_seq + 1;
      if (ns == nr) continue;
      if (ctx.UntrustedTail(ci, src) || ctx.UntrustedTail(ci, dst)) continue;
      if (Torn(m, c, src) || Torn(m, c, dst)) continue;
      if (Dropped(m, c, src) + Dropped(m, c, dst) >= (ns > nr ? ns - nr : nr - ns)) continue;
      const bool more_sends = ns > nr;
      const uint64_t k = std::min(ns, nr);
      const auto& longer = more_sends ? s : r;
      const P2pCall* extra = longer.back();
      for (const P2pCall* p : longer)
        if (p->pair_seq >= k) {
          extra = p;
          break;
        }
      Finding f = Make(m, ci, src, dst, k);
      f.first_time = extra->time_ns;
      f.calls = {{extra->call, more_sends ? src : dst, k}};
      const CallRecord& x = m.call(extra->call);
      f.table = {{std::to_string(src), std::to_string(k), more_sends ? ShortCall(x) : "(no Send)",
                  more_sends},
                 {std::to_string(dst), std::to_string(k), more_sends ? "(no Recv)" : ShortCall(x),
                  !more_sends}};
      f.pattern = more_sends ? "unmatched send" : "unmatched recv";
      const std::string n_s = Plural(ns, "Send", "Sends");
      const std::string n_r = Plural(nr, "Recv", "Recvs");
      f.short_text = "rank " + std::to_string(src) + " posted " + n_s + " to rank " +
                     std::to_string(dst) + ", which posted " + n_r + " from it";
      f.message = "Rank " + std::to_string(src) + " posted " + n_s + " to rank " +
                  std::to_string(dst) + " and rank " + std::to_string(dst) + " posted " + n_r +
                  " from rank " + std::to_string(src) + ": the " + Nth(k) + " " +
                  (more_sends ? "Send" : "Recv") + " (" + ShortCall(x) +
                  ") has no partner, so it never completes (a hang, or a deadlock inside its "
                  "group)." +
                  Advice(ctx, ci, src, dst, more_sends, extra);
      unmatched.push_back({src, dst, more_sends, extra, std::move(f)});
    }
    ReportSendCycles(ctx, ci, &unmatched, sink);
    ReportRecvCycles(ctx, ci, &unmatched, sink);
    for (Unmatched& u : unmatched) {
      if (u.in_cycle) continue;
      NoteMismatch(ctx, u.finding);
      sink.Add(std::move(u.finding));
    }
  }

  // A pair whose counts differ at the end: the first call without a partner, and its finding.
  struct Unmatched {
    int src, dst;
    bool send;
    const P2pCall* first;
    Finding finding;
    bool in_cycle = false;
  };

  // Whether `p` is the last call rank `rv` issued on the communicator (what it stopped in).
  static bool LastCallOf(const TraceModel& m, const RankView& rv, const P2pCall* p) {
    if (rv.p2p.empty() || &rv.p2p.back() != p) return false;
    return rv.collectives.empty() || m.SlotTime(rv.collectives.back()) <= p->time_ns;
  }

  // Ranks that each stopped in a Send without a partner, to the next rank of a cycle that also
  // stopped in one: every rank sends before it receives, and none of the Recvs the Sends wait
  // for was ever posted. One finding for the cycle, in place of one per pair.
  static void ReportSendCycles(CheckContext& ctx, size_t ci, std::vector<Unmatched>* unmatched,
                               FindingSink& sink) {
    const TraceModel& m = ctx.model();
    const CommModel& c = m.comms()[ci];
    std::map<int, size_t> stuck;  // rank -> its unmatched Send it stopped in
    for (size_t i = 0; i < unmatched->size(); ++i) {
      const Unmatched& u = (*unmatched)[i];
      if (u.send && LastCallOf(m, c.ranks[u.src], u.first)) stuck[u.src] = i;
    }
    std::set<int> seen;
    for (const auto& [start, first_edge] : stuck) {
      if (seen.count(start)) continue;
      std::vector<size_t> path;  // edges from `start`, until the walk leaves `stuck` or loops
      std::map<int, size_t> at;
      int r = start;
      while (stuck.count(r) && !at.count(r) && !seen.count(r)) {
        at[r] = path.size();
        path.push_back(stuck[r]);
        r = (*unmatched)[stuck[r]].dst;
      }
      for (const auto& [rank, i] : at) seen.insert(rank);
      if (!at.count(r)) continue;  // no cycle through this walk
      std::vector<size_t> cycle(path.begin() + static_cast<std::ptrdiff_t>(at[r]), path.end());
      if (cycle.size() < 2) continue;
      Finding f = FindingOn(FindingKind::kP2pMismatch, m, ci);
      const Unmatched& head = (*unmatched)[cycle.front()];
      f.seq = head.finding.seq;
      f.peer = head.dst;
      f.first_time = INT64_MAX;
      std::string edges;
      for (size_t i : cycle) {
        Unmatched& u = (*unmatched)[i];
        u.in_cycle = true;
        f.ranks.push_back(u.src);
        f.first_time = std::min(f.first_time, u.first->time_ns);
        f.calls.push_back({u.first->call, u.src, u.first->pair_seq});
        f.table.push_back({std::to_string(u.src), std::to_string(u.first->pair_seq),
                           ShortCall(m.call(u.first->call)), true});
        edges +=
            (edges.empty() ? "" : ", ") + std::to_string(u.src) + " to " + std::to_string(u.dst);
      }
      std::sort(f.ranks.begin(), f.ranks.end());
      f.pattern = "send cycle";
      f.short_text = RankList(f.ranks) + " each stopped in a Send to the next (" + edges +
                     ") whose Recv was never posted: a cycle of sends";
      f.message =
          "Each of " + RankList(f.ranks) + " stopped in a Send (" + edges +
          ") that has no Recv on its peer, and each peer is itself stopped in its own Send: "
          "every rank of the cycle sends before it receives. A Send larger than what NCCL "
          "buffers completes only once its peer receives, so each waits for a Recv queued "
          "behind its peer's Send: a deadlock, or an NCCL error where NCCL gives up (small "
          "messages pass, so such code works in small tests). Post each rank's Send and Recv of an "
          "exchange together, in one group "
          "(ncclGroupStart/ncclGroupEnd; in PyTorch, one dist.batch_isend_irecv), or order "
          "them by rank parity: even ranks send first, odd ranks receive first.";
      NoteMismatch(ctx, f);
      sink.Add(std::move(f));
    }
  }

  // Whether the rank that lacks the partner of `p` stopped in a collective another finding
  // explained (claimed), before `p` was posted, and posted nothing after it: it hangs there.
  static bool StoppedAtAFinding(const CheckContext& ctx, size_t ci, int rank, const P2pCall* p) {
    const TraceModel& m = ctx.model();
    const RankView& rv = m.comms()[ci].ranks[rank];
    if (!rv.has_file() || rv.collectives.empty()) return false;
    const CollectiveSlot& last = rv.collectives.back();
    const int64_t t = m.SlotTime(last);
    if (t > p->time_ns || !ctx.Claimed(ci, last.seq)) return false;
    return rv.p2p.empty() || rv.p2p.back().time_ns <= t;
  }
  static std::string StoppedText(const CommModel& c, int rank, bool lacks_recv) {
    const RankView& rv = c.ranks[rank];
    return " Rank " + std::to_string(rank) + " stopped in seq " +
           std::to_string(rv.collectives.back().seq) +
           " of this communicator's collectives, which another finding explains, and posted "
           "nothing after it: that is why the " +
           (lacks_recv ? "Recv" : "Send") + " was never posted. Fix that one first.";
  }

  // What to do about the unmatched `extra` (a Send when more_sends, else a Recv) of pair
  // src -> dst: fix the call the partner's rank stopped in, where another finding explains it;
  // else keep the per-step counts alike, where they changed; else look at how the partner's rank
  // ended, where it ended on its own first; else post matching calls.
  static std::string Advice(const CheckContext& ctx, size_t ci, int src, int dst, bool more_sends,
                            const P2pCall* extra) {
    const TraceModel& m = ctx.model();
    const CommModel& c = m.comms()[ci];
    const int gone = more_sends ? dst : src, waiter = more_sends ? src : dst;
    if (StoppedAtAFinding(ctx, ci, gone, extra)) return StoppedText(c, gone, more_sends);
    const std::string step_change = PerStepChange(m, c, src, dst);
    if (step_change.empty() && ExitedFirst(m, c, gone, waiter))
      return ExitedText(gone, waiter, more_sends);
    return " Post every Send with a matching Recv on the peer." + step_change;
  }

  // Whether rank `gone`, which lacks a partner, ended on its own (its trace closed in order)
  // while `waiter`'s process did not (killed later, still waiting): a rank that raised or exited
  // early, or finished while its peer went on (a peer posts its pipeline's Sends ahead, so the
  // times of the calls cannot tell these apart: the text gives both).
  static bool ExitedFirst(const TraceModel& m, const CommModel& c, int gone, int waiter) {
    const RankView &g = c.ranks[gone], &w = c.ranks[waiter];
    return g.has_file() && w.has_file() && m.files()[g.file].clean && !m.files()[w.file].clean;
  }
  static std::string ExitedText(int gone, int waiter, bool lacks_recv) {
    const std::string g = "rank " + std::to_string(gone), w = "rank " + std::to_string(waiter);
    const std::string mine = lacks_recv ? "Recv" : "Send", theirs = lacks_recv ? "Send" : "Recv";
    return " Rank " + std::to_string(gone) + "'s process ended (its trace was closed in order) " +
           "without posting the " + mine + ", while " + w +
           "'s was still waiting when it was stopped. Look at how " + g +
           " ended: an uncaught exception (a shape error, running out of memory; its own output "
           "has it) or an exit in a rank-dependent branch, or it finished its loop while " +
           w + " posted more " + theirs +
           "s (a loop run a different number of times on the two "
           "ranks).";
  }

  // Whether rank `rv` issued no collective after `p`: what it waits in when the trace ends.
  static bool NothingAfter(const TraceModel& m, const RankView& rv, const P2pCall* p) {
    return rv.collectives.empty() || m.SlotTime(rv.collectives.back()) <= p->time_ns;
  }

  // Ranks that each wait in a Recv from the next rank of a cycle, whose Send was never posted:
  // every rank of the cycle receives, none sends. One finding for the cycle, in place of one
  // per pair. From one statement on every rank it is a rooted operation made of Sends and
  // Recvs (torch.distributed's gather and scatter: the root posts the Recvs) that the ranks
  // ran with different roots.
  static void ReportRecvCycles(CheckContext& ctx, size_t ci, std::vector<Unmatched>* unmatched,
                               FindingSink& sink) {
    const TraceModel& m = ctx.model();
    const CommModel& c = m.comms()[ci];
    std::map<int, size_t> waiting;  // receiving rank -> its unmatched Recv it waits in
    for (size_t i = 0; i < unmatched->size(); ++i) {
      const Unmatched& u = (*unmatched)[i];
      if (!u.send && !u.in_cycle && NothingAfter(m, c.ranks[u.dst], u.first) &&
          !waiting.count(u.dst))
        waiting[u.dst] = i;
    }
    std::set<int> seen;
    for (const auto& [start, unused] : waiting) {
      if (seen.count(start)) continue;
      std::vector<size_t> path;
      std::map<int, size_t> at;
      int r = start;
      while (waiting.count(r) && !at.count(r) && !seen.count(r)) {
        at[r] = path.size();
        path.push_back(waiting[r]);
        r = (*unmatched)[waiting[r]].src;  // the rank it waits for
      }
      for (const auto& [rank, i] : at) seen.insert(rank);
      if (!at.count(r)) continue;
      std::vector<size_t> cycle(path.begin() + static_cast<std::ptrdiff_t>(at[r]), path.end());
      if (cycle.size() < 2) continue;
      Finding f = FindingOn(FindingKind::kP2pMismatch, m, ci);
      const Unmatched& head = (*unmatched)[cycle.front()];
      f.seq = head.finding.seq;
      f.peer = head.src;
      f.first_time = INT64_MAX;
      std::string edges, site;
      bool one_site = true;
      // A root's Recvs, grouped without a Send of its own (PyTorch's gather and scatter), as
      // against a rank that receives before it sends (a ring of blocking recv-then-send).
      bool rooted = true;
      for (size_t i : cycle) {
        Unmatched& u = (*unmatched)[i];
        u.in_cycle = true;
        f.ranks.push_back(u.dst);
        f.first_time = std::min(f.first_time, u.first->time_ns);
        f.calls.push_back({u.first->call, u.dst, u.first->pair_seq});
        const CallRecord x = m.call(u.first->call);
        f.table.push_back(
            {std::to_string(u.dst), std::to_string(u.first->pair_seq), ShortCall(x), true});
        edges +=
            (edges.empty() ? "" : ", ") + std::to_string(u.dst) + " from " + std::to_string(u.src);
        std::string mine = x.callsite ? m.file(u.first->call.file).String(x.callsite) : "";
        mine = mine.substr(0, mine.find('<'));
        if (&u == &(*unmatched)[cycle.front()]) site = mine;
        one_site = one_site && !mine.empty() && mine == site;
        bool sends_in_group = false;
        for (const P2pCall& q : c.ranks[u.dst].p2p)
          sends_in_group |= q.send && x.group_id != 0 && m.call(q.call).group_id == x.group_id;
        rooted = rooted && x.group_id != 0 && !sends_in_group;
      }
      std::sort(f.ranks.begin(), f.ranks.end());
      f.pattern = "recv cycle";
      f.short_text = RankList(f.ranks) + " each wait in a Recv from the next (" + edges +
                     ") whose Send was never posted: every one receives, none sends";
      f.message = "Each of " + RankList(f.ranks) + " waits in a Recv (" + edges +
                  ") that has no Send on its peer, and each peer waits in its own Recv: every "
                  "rank of the cycle receives and none sends, so none completes (a hang). ";
      if (one_site && rooted)
        f.message += "The Recvs come from one statement on every rank (" + site +
                     "): a rooted operation made of Sends and Recvs, such as "
                     "torch.distributed's gather or scatter (the root posts a Recv from every "
                     "other rank, the others a Send to it), run with a different root on these "
                     "ranks: each took itself, or another rank, for the root. Give every rank "
                     "the same root (dst= or src=, e.g. a constant rather than a value read per "
                     "rank).";
      else
        f.message +=
            "Each rank receives before it sends: post each exchange's Send and Recv "
            "together, in one group (ncclGroupStart/ncclGroupEnd; in PyTorch, one "
            "dist.batch_isend_irecv), or order them by rank parity (even ranks send "
            "first, odd ranks receive first).";
      NoteMismatch(ctx, f);
      sink.Add(std::move(f));
    }
  }

  // How many Sends (or Recvs) `rv` posted to (from) `peer` in each stretch between its
  // collectives on this communicator: stretch k lies after collective seq k-1 (collectives pair
  // by seq, so stretch k is the same stretch on every rank).
  static std::vector<uint64_t> PerStretch(const TraceModel& m, const RankView& rv, bool send,
                                          int peer) {
    std::vector<int64_t> bounds;
    for (const CollectiveSlot& s : rv.collectives) bounds.push_back(m.SlotTime(s));
    std::sort(bounds.begin(), bounds.end());
    std::vector<uint64_t> n(bounds.size() + 1, 0);
    for (const P2pCall& p : rv.p2p)
      if (p.send == send && p.peer == peer)
        ++n[static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), p.time_ns) -
                                bounds.begin())];
    return n;
  }

  // " Counted between the communicator's collectives, ..." when the pair's per-step counts
  // agreed for at least two stretches and then changed: the number of messages per step differs
  // from there on (a pipeline stage running another number of micro-batches). "" otherwise.
  static std::string PerStepChange(const TraceModel& m, const CommModel& c, int src, int dst) {
    if (!c.ranks[src].has_file() || !c.ranks[dst].has_file()) return "";
    const std::vector<uint64_t> s = PerStretch(m, c.ranks[src], true, dst);
    const std::vector<uint64_t> r = PerStretch(m, c.ranks[dst], false, src);
    size_t k = 0, agreed = 0;
    for (; k < s.size() && k < r.size() && s[k] == r[k]; ++k) agreed += s[k] > 0;
    if (k >= s.size() || k >= r.size() || agreed < 2 || k == 0) return "";
    return " Counted between the communicator's collectives, rank " + std::to_string(src) +
           "'s Sends to rank " + std::to_string(dst) + " and rank " + std::to_string(dst) +
           "'s Recvs from it agree in every stretch up to seq " + std::to_string(k - 1) + " (" +
           std::to_string(s[k - 1]) + " and " + std::to_string(r[k - 1]) +
           " in the last of them); after seq " + std::to_string(k - 1) + ", rank " +
           std::to_string(src) + " posted " + Plural(s[k], "Send", "Sends") + " and rank " +
           std::to_string(dst) + " posted " + Plural(r[k], "Recv", "Recvs") +
           ". From there the two exchange a different number of messages per step, and every "
           "later message pairs with another step's: one side's schedule changed, as a pipeline "
           "stage that runs a different number of micro-batches (a gradient-accumulation "
           "setting read per node) does. Give every stage the same number of micro-batches.";
  }

  struct SizeMismatch {
    int src, dst;
    uint64_t k;  // per-pair index
    const P2pCall* send;
    const P2pCall* recv;
  };

  static uint64_t Bytes(const CallRecord& c) { return c.count * DtypeSize(c.dtype); }

  // The rank that every mismatch of one exchange (per-pair index k) involves, when there are
  // two or more and one rank is in all of them: -1 otherwise.
  static int CommonRank(const std::vector<const SizeMismatch*>& at_k) {
    if (at_k.size() < 2) return -1;
    for (int cand : {at_k[0]->src, at_k[0]->dst}) {
      bool all = true;
      for (const SizeMismatch* x : at_k) all &= x->src == cand || x->dst == cand;
      if (all) return cand;
    }
    return -1;
  }

  // The size rank `me` posts toward `peer` (a Send when `send`) at per-pair index k; 0 if none.
  static uint64_t PostedBytes(const TraceModel& m, const Lists& lists, int me, int peer, bool send,
                              uint64_t k) {
    const auto it = lists.find(send ? std::make_pair(me, peer) : std::make_pair(peer, me));
    if (it == lists.end()) return 0;
    for (const P2pCall* p : it->second)
      if (p->pair_seq == k) return Bytes(m.call(p->call));
    return 0;
  }

  void ReportMismatches(CheckContext& ctx, size_t ci, const std::vector<SizeMismatch>& all,
                        const Lists& sends, const Lists& recvs, FindingSink& sink) {
    const TraceModel& m = ctx.model();
    std::map<uint64_t, std::vector<const SizeMismatch*>> by_k;
    for (const SizeMismatch& x : all) by_k[x.k].push_back(&x);
    for (const auto& [k, at_k] : by_k) {
      const int common = CommonRank(at_k);
      if (common < 0) {
        for (const SizeMismatch* x : at_k) ReportOne(ctx, ci, *x, sink);
        continue;
      }
      // One rank disagrees with every peer it exchanged with here: its sizes are the odd ones.
      Finding f = FindingOn(FindingKind::kP2pMismatch, m, ci);
      f.seq = k;
      f.ranks = {common};
      f.first_time = INT64_MAX;
      std::vector<int> peers;
      bool symmetric = true;  // `common` posts each peer the size it posts for the way back
      bool receives = true, sends_only = true;
      std::string sizes;
      for (const SizeMismatch* x : at_k) {
        const bool recv_side = x->dst == common;
        const int peer = recv_side ? x->src : x->dst;
        peers.push_back(peer);
        f.ranks.push_back(peer);
        receives &= recv_side;
        sends_only &= !recv_side;
        const CallRecord& a = m.call(x->send->call);
        const CallRecord& b = m.call(x->recv->call);
        f.first_time = std::min({f.first_time, x->send->time_ns, x->recv->time_ns});
        f.calls.push_back({x->send->call, x->src, k});
        f.calls.push_back({x->recv->call, x->dst, k});
        f.table.push_back({std::to_string(x->src), std::to_string(k), ShortCall(a), !recv_side});
        f.table.push_back({std::to_string(x->dst), std::to_string(k), ShortCall(b), recv_side});
        const uint64_t mine = recv_side ? Bytes(b) : Bytes(a);
        const uint64_t back = PostedBytes(m, recv_side ? sends : recvs, common, peer, recv_side, k);
        symmetric &= back == mine;
        sizes += (sizes.empty() ? "" : "; ") + std::string("rank ") + std::to_string(x->src) +
                 " sends " + Thousands(Bytes(a)) + " bytes, rank " + std::to_string(x->dst) +
                 " expects " + Thousands(Bytes(b));
      }
      std::sort(f.ranks.begin(), f.ranks.end());
      std::sort(peers.begin(), peers.end());
      const std::string who = "rank " + std::to_string(common);
      const std::string what = receives ? "Recvs" : sends_only ? "Sends" : "Sends and Recvs";
      f.pattern = "one rank's sizes:" + what + (symmetric ? ":symmetric" : "");
      f.short_text = who + "'s " + what + " in the " + Nth(k) + " exchange with " +
                     RankList(peers) + " disagree in size with theirs";
      f.message =
          "Point-to-point calls pair by (sender, receiver, order). In the " + Nth(k) +
          " exchange between " + who + " and each of " + RankList(peers) +
          ", the sizes disagree (" + sizes + "): " + who +
          " is in every mismatch, so its sizes are the likely fault. NCCL truncates, leaves the "
          "tail of the receive buffer stale, or hangs.";
      if (symmetric)
        f.message += " Rank " + std::to_string(common) +
                     " posted each peer the same size both ways (what it sends to a peer is "
                     "what it expects back from it), and the peers did not: receive sizes taken "
                     "from the send sizes, as code that assumes symmetric traffic does (an "
                     "all_to_all_single whose output splits are its input splits). Exchange the "
                     "counts first (an all_to_all of the split sizes) and size the receives from "
                     "them.";
      else
        f.message += " Post matching Send/Recv pairs, in the same order on both sides.";
      NoteMismatch(ctx, f);
      sink.Add(std::move(f));
    }
  }

  void ReportOne(CheckContext& ctx, size_t ci, const SizeMismatch& x, FindingSink& sink) {
    const TraceModel& m = ctx.model();
    const CallRecord& a = m.call(x.send->call);
    const CallRecord& b = m.call(x.recv->call);
    const uint64_t k = x.k;
    Finding f = Make(m, ci, x.src, x.dst, k);
    f.first_time = std::min(x.send->time_ns, x.recv->time_ns);
    f.calls = {{x.send->call, x.src, k}, {x.recv->call, x.dst, k}};
    f.table = {{std::to_string(x.src), std::to_string(k), ShortCall(a), true},
               {std::to_string(x.dst), std::to_string(k), ShortCall(b), true}};
    f.pattern = "size:" + ShortCall(a) + "|" + ShortCall(b);
    const bool dtype = a.dtype != b.dtype;
    f.short_text = "the " + Nth(k) + " Send from rank " + std::to_string(x.src) + " to rank " +
                   std::to_string(x.dst) + " is " + ShortCall(a) + " but its Recv is " +
                   ShortCall(b);
    f.message = "Point-to-point calls pair by (sender, receiver, order): the " + Nth(k) +
                " Send from rank " + std::to_string(x.src) + " to rank " + std::to_string(x.dst) +
                " meets the " + Nth(k) + " Recv on rank " + std::to_string(x.dst) + " from rank " +
                std::to_string(x.src) + ". They disagree on " +
                (dtype ? "the datatype" : "the size") + " (" + Thousands(Bytes(a)) +
                " bytes sent, " + Thousands(Bytes(b)) +
                " bytes expected): NCCL truncates, leaves the tail of the receive buffer "
                "stale, or hangs. Post matching Send/Recv pairs, in the same order on both "
                "sides.";
    NoteMismatch(ctx, f);
    sink.Add(std::move(f));
  }

  static bool Torn(const TraceModel& m, const CommModel& c, int rank) {
    const RankView& r = c.ranks[rank];
    return !r.has_file() || m.files()[r.file].torn;
  }

  static uint64_t Dropped(const TraceModel& m, const CommModel& c, int rank) {
    const RankView& r = c.ranks[rank];
    return r.has_file() ? m.files()[r.file].dropped : 0;
  }

  static std::string Nth(uint64_t k) {
    const uint64_t n = k + 1;
    const char* suf = (n % 100 >= 11 && n % 100 <= 13) ? "th"
                      : n % 10 == 1                    ? "st"
                      : n % 10 == 2                    ? "nd"
                      : n % 10 == 3                    ? "rd"
                                                       : "th";
    return std::to_string(n) + suf;
  }

  static Finding Make(const TraceModel& m, size_t ci, int src, int dst, uint64_t k) {
    Finding f = FindingOn(FindingKind::kP2pMismatch, m, ci);
    f.seq = k;
    f.peer = dst;
    f.ranks = {std::min(src, dst), std::max(src, dst)};
    if (src == dst) f.ranks.pop_back();
    return f;
  }
};

}  // namespace

std::shared_ptr<Checker> MakeP2pChecker() { return std::make_shared<P2pChecker>(); }

}  // namespace ncclrr::analysis
