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
    for (const auto& [src, dst] : pairs) {
      const auto& s = sends[{src, dst}];
      const auto& r = recvs[{src, dst}];
      // Pair by per-pair index (graph launches leave gaps in the eager calls' indices).
      for (size_t i = 0, j = 0; i < s.size() && j < r.size();) {
        if (s[i]->pair_seq != r[j]->pair_seq) {
          (s[i]->pair_seq < r[j]->pair_seq ? i : j)++;
          continue;
        }
        const uint64_t k = s[i]->pair_seq;
        const P2pCall* ps = s[i++];
        const P2pCall* pr = r[j++];
        const CallRecord& a = m.call(ps->call);
        const CallRecord& b = m.call(pr->call);
        if (a.count * DtypeSize(a.dtype) == b.count * DtypeSize(b.dtype) && a.dtype == b.dtype)
          continue;
        Finding f = Make(m, ci, src, dst, k);
        f.first_time = std::min(ps->time_ns, pr->time_ns);
        f.calls = {{ps->call, src, k}, {pr->call, dst, k}};
        f.table = {{std::to_string(src), std::to_string(k), ShortCall(a), true},
                   {std::to_string(dst), std::to_string(k), ShortCall(b), true}};
        f.pattern = "size:" + ShortCall(a) + "|" + ShortCall(b);
        const bool dtype = a.dtype != b.dtype;
        f.short_text = "the " + Nth(k) + " Send from rank " + std::to_string(src) + " to rank " +
                       std::to_string(dst) + " is " + ShortCall(a) + " but its Recv is " +
                       ShortCall(b);
        f.message = "Point-to-point calls pair by (sender, receiver, order): the " + Nth(k) +
                    " Send from rank " + std::to_string(src) + " to rank " + std::to_string(dst) +
                    " meets the " + Nth(k) + " Recv on rank " + std::to_string(dst) +
                    " from rank " + std::to_string(src) + ". They disagree on " +
                    (dtype ? "the datatype" : "the size") + " (" +
                    Thousands(a.count * DtypeSize(a.dtype)) + " bytes sent, " +
                    Thousands(b.count * DtypeSize(b.dtype)) +
                    " bytes expected): NCCL truncates, leaves the tail of the receive buffer "
                    "stale, or hangs. Post matching Send/Recv pairs, in the same order on both "
                    "sides.";
        sink.Add(std::move(f));
      }
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
                  "group). Post every Send with a matching Recv on the peer.";
      sink.Add(std::move(f));
    }
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
