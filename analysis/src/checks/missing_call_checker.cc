// missing_call at the end of a communicator's sequence: ranks disagree on how many collectives
// they issued, so the ranks that went further wait forever (a hang). Says who never issued
// seq N, where each rank stopped, what was in flight and for how long. A rank whose file is
// missing or torn is never accused: the trace cannot show where it stopped (trace_incomplete).
#include <algorithm>
#include <cctype>
#include <map>
#include <optional>

#include "checks/checkers.h"
#include "findings/thread_interleaving.h"
#include "model/signature.h"
#include "ncclrr/analysis/coverage.h"
#include "ncclrr/trace/describe.h"
#include "report/text_util.h"

namespace ncclrr::analysis {
namespace {

class MissingCallChecker : public Checker {
 public:
  std::string_view name() const override { return "missing calls"; }

  void Run(CheckContext& ctx, FindingSink& sink) override {
    last_calls_.clear();  // of this model's files
    for (size_t ci = 0; ci < ctx.model().comms().size(); ++ci)
      if (ctx.Owns(ci)) CheckComm(ctx, ci, sink);
  }

 private:
  void CheckComm(CheckContext& ctx, size_t ci, FindingSink& sink) {
    const TraceModel& m = ctx.model();
    const CommModel& c = m.comms()[ci];
    std::map<int, int64_t> adjusted;  // rank -> issued, corrected for mid-stream skips
    for (const RankView& r : c.ranks)
      if (r.has_file() && !ctx.UntrustedTail(ci, r.rank))
        adjusted[r.rank] = static_cast<int64_t>(r.issued()) + ctx.ExplainedDifference(ci, r.rank);
    if (adjusted.size() < 2) return;
    int64_t most = 0;
    for (const auto& [r, n] : adjusted) most = std::max(most, n);
    std::vector<int> longer, shorter;
    for (const auto& [r, n] : adjusted) (n == most ? longer : shorter).push_back(r);
    if (shorter.empty()) return;
    // The call the short ranks never joined, as the longest-running ranks issued it.
    auto first_waiting = [&](int short_rank) -> const CollectiveSlot* {
      const CollectiveSlot* best = nullptr;
      for (int l : longer) {
        const CollectiveSlot* s = c.ranks[l].AtSeq(c.ranks[short_rank].issued());
        if (s && (!best || m.SlotTime(*s) < m.SlotTime(*best))) best = s;
      }
      return best;
    };
    std::vector<int> accused;
    for (int r : shorter) {
      // A torn end, dropped records or an unflushed tail: trace_incomplete and records_dropped
      // say so.
      if (TailMayBeCut(m, c.ranks[r], first_waiting(r), static_cast<uint64_t>(most - adjusted[r])))
        continue;
      accused.push_back(r);
    }
    if (accused.empty()) return;
    uint64_t seq = kNoSeq;
    for (int r : accused) seq = std::min(seq, c.ranks[r].issued());
    // A rank that issued seq waits in it like the longest-running ones, whose hosts went on
    // further before they waited for the GPU: only the ranks that never issued it are missing it
    // (where no accused rank's count was corrected for a skip, which would shift its seq).
    const bool plain = std::all_of(accused.begin(), accused.end(), [&](int r) {
      return adjusted[r] == static_cast<int64_t>(c.ranks[r].issued());
    });
    if (plain) std::erase_if(accused, [&](int r) { return c.ranks[r].issued() > seq; });
    if (ctx.Claimed(ci, seq)) return;  // explained already (e.g. by cross_comm_order)
    const uint64_t stuck = FirstSeqNoRankCompleted(m, c);
    if (stuck < seq) {
      ReportStuck(ctx, ci, stuck, sink);
      return;
    }
    Report(ctx, ci, seq, accused, sink);
  }

  // The first seq that no rank completed, or kNoSeq. Only imported GPU states (a Flight Recorder
  // dump's "scheduled"/"started") mark calls that were issued after such a call: the
  // communicator was stuck there, and each rank's host went on issuing until it next waited
  // for the GPU, so where the ranks stopped issuing says nothing about who missed a call.
  static uint64_t FirstSeqNoRankCompleted(const TraceModel& m, const CommModel& c) {
    uint64_t stuck = 0;
    for (const RankView& r : c.ranks) {
      if (!r.has_file()) continue;
      auto open = std::find_if(r.collectives.begin(), r.collectives.end(), [&](const auto& s) {
        return (m.call(s.call).flags & call_flags::kInFlight) != 0;
      });
      if (open == r.collectives.end()) return kNoSeq;
      stuck = std::max(stuck, open->seq);
    }
    return stuck;
  }

  // Every rank issued seq `stuck` and none completed it. When another finding explains that
  // seq, a note says the later difference in counts follows from it; otherwise the hang itself
  // is the finding, with what the trace cannot tell.
  void ReportStuck(CheckContext& ctx, size_t ci, uint64_t stuck, FindingSink& sink) {
    const TraceModel& m = ctx.model();
    const CommModel& c = m.comms()[ci];
    std::string stops;
    for (const RankView& r : c.ranks)
      if (r.has_file())
        stops += (stops.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r.rank) +
                 " after seq " + std::to_string(r.issued() - 1);
    const std::string consequence =
        "The ranks stopped issuing at different points (" + stops +
        ") because each rank's host "
        "went on until it next waited for the GPU: that difference follows from the hang and is "
        "not a missing call.";
    // A mismatch reported at or before the stuck call explains it: a mismatched call can
    // complete wrongly and leave the communicator stuck at a later one.
    uint64_t cause = 0;
    while (cause <= stuck && !ctx.Claimed(ci, cause)) ++cause;
    if (cause <= stuck) {
      Note n;
      n.kind = NoteKind::kInferred;
      n.comm_index = static_cast<int64_t>(ci);
      n.message = CommLabel(c) + ": no rank completed seq " + std::to_string(stuck) +
                  ", which follows from the finding at seq " + std::to_string(cause) + ". " +
                  consequence;
      sink.AddNote(std::move(n));
      return;
    }
    Finding f = FindingOn(FindingKind::kMissingCall, m, ci);
    f.seq = stuck;
    f.pattern = "stuck";
    ctx.Claim(ci, stuck, kNoSeq);
    const CollectiveSlot* first = nullptr;
    for (const RankView& r : c.ranks) {
      const CollectiveSlot* s = r.has_file() ? r.AtSeq(stuck) : nullptr;
      if (!s) continue;
      f.ranks.push_back(r.rank);
      f.calls.push_back({s->call, r.rank, stuck});
      f.table.push_back({std::to_string(r.rank), std::to_string(stuck),
                         ShortCall(m.call(s->call)) + "  never completed", false});
      if (!first || m.SlotTime(*s) < m.SlotTime(*first)) first = s;
    }
    f.first_time = first ? m.SlotTime(*first) : m.end_ns();
    const std::string what = first ? ShortCall(m.call(first->call)) : "a collective";
    f.short_text =
        "every rank issued seq " + std::to_string(stuck) + " (" + what + ") and none completed it";
    f.message = "Every rank issued " + what + " at seq " + std::to_string(stuck) +
                " and no rank completed it: the communicator hung there. " + consequence +
                " The arguments this trace holds agree at seq " + std::to_string(stuck) +
                ", but it may not hold them all (a Flight Recorder dump has no root and no "
                "reduction op), and a call with mismatched roots or ops can complete wrongly and "
                "leave the communicator stuck at a later one. Compare the root and op of seq " +
                std::to_string(stuck) + " and of the calls before it across ranks" +
                LastRootedBefore(m, c, stuck) +
                ", and look for a rank blocked on another communicator or a GPU fault.";
    sink.Add(std::move(f));
  }

  void Report(CheckContext& ctx, size_t ci, uint64_t seq, const std::vector<int>& accused,
              FindingSink& sink) {
    const TraceModel& m = ctx.model();
    const CommModel& c = m.comms()[ci];
    const bool stable = ctx.options().stable;
    Finding f = FindingOn(FindingKind::kMissingCall, m, ci);
    f.seq = seq;
    f.ranks = accused;
    f.pattern = "end";
    ctx.Claim(ci, seq, kNoSeq);
    // The waiting side: the call at `seq` on the ranks that issued it.
    const CollectiveSlot* waiting = nullptr;
    int64_t in_flight = 0;
    std::vector<int> waiters;
    for (const RankView& r : c.ranks) {
      if (!r.has_file()) continue;
      const CollectiveSlot* s = r.AtSeq(seq);
      if (!s) continue;
      waiters.push_back(r.rank);
      f.calls.push_back({s->call, r.rank, seq});
      if (!waiting || m.SlotTime(*s) < m.SlotTime(*waiting)) waiting = s;
      in_flight = std::max(in_flight, m.files()[r.file].last_alive_ns - m.SlotTime(*s));
    }
    f.first_time = waiting ? m.SlotTime(*waiting) : m.end_ns();
    const std::string what = waiting ? ShortCall(m.call(waiting->call)) : "a collective";
    const uint64_t after = c.max_issued() > seq + 1 ? c.max_issued() - seq - 1 : 0;
    f.table.push_back({CompactRanks(waiters), std::to_string(seq),
                       what + (stable ? ""
                                      : "  issued at +" + Seconds(f.first_time - m.start_ns()) +
                                            ", in flight " + Seconds(in_flight)),
                       false});
    // Where each accused rank stopped, grouped by stop point.
    std::map<uint64_t, std::vector<int>> by_stop;
    for (int r : accused) by_stop[c.ranks[r].issued()].push_back(r);
    std::string stops;
    bool ended_all = true;
    bool waiter_killed = false;
    for (int w : waiters)
      waiter_killed |= c.ranks[w].has_file() && !m.files()[c.ranks[w].file].clean;
    for (const auto& [n, ranks] : by_stop) {
      const RankView& rv = c.ranks[ranks[0]];
      std::string last = "(no collective on this communicator)";
      if (!rv.collectives.empty()) {
        const CollectiveSlot& s = rv.collectives.back();
        last = "last: " + ShortCall(m.call(s.call));
        f.calls.push_back({s.call, rv.rank, s.seq});
      }
      f.table.push_back({CompactRanks(ranks), n ? std::to_string(n - 1) : "-", last, true});
      stops += (stops.empty() ? "" : "; ") + RankList(ranks) +
               (n ? " stopped after seq " + std::to_string(n - 1) : " issued none") +
               ElsewhereNote(m, ci, rv, ranks.size() > 1);
      // Its trace closed in order while a waiter's was not: it exited on its own, and the
      // waiters were killed later (a launcher stopping the job). Traces all closed in order (an
      // interrupt ends every rank alike, a log import) tell nothing.
      bool all_ended = waiter_killed;
      for (int r : ranks) all_ended &= c.ranks[r].has_file() && m.files()[c.ranks[r].file].clean;
      if (all_ended) {
        stops +=
            std::string(ranks.size() == 1 ? ", and its process" : ", and their processes") +
            " ended: " + (ranks.size() == 1 ? "its trace was" : "their traces were") +
            " closed in order" +
            (stable ? ""
                    : " (at +" + Seconds(m.files()[rv.file].last_alive_ns - m.start_ns()) + ")");
      }
      ended_all &= all_ended;
    }
    const std::optional<CallRecord> blocked = AllBlockedElsewhere(m, ci, accused, waiters);
    const std::optional<uint64_t> repeat =
        waiters.empty() ? std::nullopt : StepsRepeat(m, c.ranks[waiters[0]], seq);
    // Every accused rank's last call is at a position another finding explained (a mismatch
    // there): that is where they hang. (Claims mark the positions findings explained.)
    std::optional<uint64_t> mismatched_last;
    if (by_stop.size() == 1 && by_stop.begin()->first > 0 && by_stop.begin()->first - 1 < seq &&
        ctx.Claimed(ci, by_stop.begin()->first - 1) && !waiters.empty()) {
      // Only a mismatch of shapes (count, type, operation, root) leaves the rank waiting; a
      // same-shape one (a swap) completes with wrong values.
      const uint64_t at = by_stop.begin()->first - 1;
      const CollectiveSlot* mine = c.ranks[by_stop.begin()->second[0]].AtSeq(at);
      const CollectiveSlot* theirs = c.ranks[waiters[0]].AtSeq(at);
      if (mine && theirs &&
          ShapeSignature(m.call(mine->call)) != ShapeSignature(m.call(theirs->call)))
        mismatched_last = at;
    }
    // Exited after a call the waiter's steps go on from to the call it waits in: the rank may
    // have left the loop there (a loop's steps have no other mark of where they begin).
    const std::optional<uint64_t> boundary =
        ended_all && !waiters.empty() && accused.size() == 1
            ? StepBoundary(m, c.ranks[waiters[0]], c.ranks[accused[0]], seq)
            : std::nullopt;
    // Why the accused ranks never issued it: the first reading that applies.
    auto why_not_issued = [&]() -> std::string {
      const std::string who = Capitalized(RankList(accused));
      if (ended_all && boundary)
        return ". " + who + " exited without issuing it, right after seq " +
               std::to_string(seq - 1) + "; " + RankList(waiters) +
               " went on from such a call to the one " +
               (waiters.size() == 1 ? "it waits" : "they wait") + " in before (as at seq " +
               std::to_string(*boundary) +
               "). Either it raised there (an uncaught exception, such as running out of "
               "memory: its own output has the error), or it left a loop there while " +
               RankList(waiters) +
               " went on: ranks that run the loop a different number of times do this "
               "(uneven inputs, one rank's share of the data running out first, or a "
               "stopping condition each rank decides alone, such as early stopping on its "
               "own validation loss or a time limit); give every rank the same number of "
               "steps (shard the data evenly, e.g. DistributedSampler with drop_last=True; "
               "decide to stop on one rank, or all-reduce the decision, and stop together).";
      if (ended_all)
        return ". " + who +
               " exited without issuing it: look at how it ended (an uncaught "
               "exception, such as running out of memory, or an exit in a "
               "rank-dependent branch; its own output has the error).";
      if (const std::string unmatched = UnmatchedReceives(m, c, accused); !unmatched.empty())
        return ". " + unmatched;
      if (blocked)
        return ". " + who + " never got here because " +
               (accused.size() == 1 ? "it was" : "they were") +
               " blocked on another communicator: this hang follows from the one at " +
               CallPlace(*blocked) + ". Look there first: " + BlockedAdvice(*blocked);
      if (mismatched_last)
        return ". " + who + " stopped in seq " + std::to_string(*mismatched_last) +
               ", where another finding of this communicator says the ranks' calls did "
               "not match: a rank whose call NCCL paired with a different one waits in "
               "it, so it never got here. Fix that one first.";
      const std::string why_elsewhere = "why " + RankList(accused) +
                                        " did not get there: a rank-dependent branch, an "
                                        "exception, or a blocking call on another communicator "
                                        "(see cross_comm_order).";
      if (repeat)
        return ". From seq " + std::to_string(seq) + " " + RankList(waiters) +
               " issued the calls of " + (waiters.size() == 1 ? "its" : "their") +
               " own steps again (the same calls as from seq " + std::to_string(*repeat) +
               "): " + RankList(waiters) + " went on with the loop where " + RankList(accused) +
               " had left it. Ranks that run the loop a different number of "
               "times do this: uneven inputs (one rank's share of the data "
               "holds more batches) or a stopping condition each rank decides "
               "alone; give every rank the same number of steps (shard the "
               "data evenly, e.g. DistributedSampler with drop_last=True; "
               "decide to stop on one rank and broadcast it). Otherwise find " +
               why_elsewhere;
      return ". Find " + why_elsewhere;
    };
    f.short_text = RankList(accused) + " never issued seq " + std::to_string(seq) + " (" + what +
                   "), which " + RankList(waiters) + " issued";
    f.message = RankList(waiters) + " issued " + what + " at seq " + std::to_string(seq) +
                AfterIt(c, waiters, after) + ", but " + RankList(accused) + " never did: " + stops +
                ". NCCL cannot complete a collective until every rank of the communicator "
                "issues it, so " +
                RankList(waiters) + (waiters.size() == 1 ? " hangs" : " hang") + " in seq " +
                std::to_string(seq) +
                (stable ? "" : " (in flight for " + Seconds(in_flight) + " when the trace ends)") +
                why_not_issued();
    // Threads that used the communicator at once order its calls by their timing: the call
    // waited for may be one the accused ranks' other thread issues elsewhere, or not yet.
    std::vector<int> at_once;
    for (const RankView& r : c.ranks)
      if (FirstThreadOverlap(m, r)) at_once.push_back(r.rank);
    if (!at_once.empty())
      f.message += " On " + RankList(at_once) +
                   " two threads used this communicator at once (see the lifecycle_error), so "
                   "the order of its calls there is the threads' timing: the threads' "
                   "interleaving, rather than a branch, may be why the ranks' calls part here.";
    sink.Add(std::move(f));
  }

  // "Rank 2 posted 18 Recvs from rank 0, which posted 16 Sends to it (see p2p_mismatch): ...",
  // when this communicator's point-to-point calls do not match and every accused rank takes part
  // in them: a Recv without its Send never completes, its GPU waits there, and every later call
  // of that rank waits behind it -- the Sends its peers wait for too. "" otherwise.
  // The first seq of the latest earlier stretch where `rv` issued the calls it issued from
  // `seq` on (two or more, up to kCompared of them: the same shapes from the same statements),
  // looking back at most kScan calls: the rank went on with calls of its own steps.
  static std::optional<uint64_t> StepsRepeat(const TraceModel& m, const RankView& rv,
                                             uint64_t seq) {
    constexpr size_t kCompared = 64, kScan = 4096;
    const CollectiveSlot* at = rv.AtSeq(seq);
    if (at == nullptr || !rv.has_file()) return std::nullopt;
    const size_t first = static_cast<size_t>(at - rv.collectives.data());
    const size_t n = std::min(rv.collectives.size() - first, kCompared);
    if (n < 2 || first < n) return std::nullopt;
    auto call = [&](size_t k) {
      const CallRecord r = m.call(rv.collectives[k].call);
      std::string site = r.callsite ? m.file(rv.collectives[k].call.file).String(r.callsite) : "";
      return std::make_pair(ShapeSignature(r), site.substr(0, site.find('<')));
    };
    std::vector<std::pair<uint64_t, std::string>> mine;
    for (size_t i = 0; i < n; ++i) mine.push_back(call(first + i));
    for (size_t j = first - n + 1; j-- > 0 && first - j <= kScan;) {
      size_t k = 0;
      while (k < n && rv.collectives[j + k].seq == rv.collectives[j].seq + k &&
             call(j + k) == mine[k])
        ++k;
      if (k == n) return rv.collectives[j].seq;
    }
    return std::nullopt;
  }

  // The seq of an earlier call of `waiter` that came right after a call like the one `gone`
  // issued last (seq - 1) and was like the waiter's call at `seq` (the same shape from the same
  // statement), looking back at most kScan calls: `gone` stopped where a step ends.
  static std::optional<uint64_t> StepBoundary(const TraceModel& m, const RankView& waiter,
                                              const RankView& gone, uint64_t seq) {
    constexpr size_t kScan = 4096;
    const CollectiveSlot* now = waiter.AtSeq(seq);
    const CollectiveSlot* last = seq > 0 ? gone.AtSeq(seq - 1) : nullptr;
    if (now == nullptr || last == nullptr || !waiter.has_file() || !gone.has_file())
      return std::nullopt;
    auto issue = [&](const CollectiveSlot& s) {
      const CallRecord r = m.call(s.call);
      std::string site = r.callsite ? m.file(s.call.file).String(r.callsite) : "";
      return std::make_pair(ShapeSignature(r), site.substr(0, site.find('<')));
    };
    const auto want_next = issue(*now), want_before = issue(*last);
    const size_t at = static_cast<size_t>(now - waiter.collectives.data());
    for (size_t j = at; j-- > 1 && at - j <= kScan;) {
      const CollectiveSlot &next = waiter.collectives[j], &before = waiter.collectives[j - 1];
      if (next.seq == before.seq + 1 && issue(next) == want_next && issue(before) == want_before)
        return next.seq;
    }
    return std::nullopt;
  }

  static std::string UnmatchedReceives(const TraceModel& m, const CommModel& c,
                                       const std::vector<int>& accused) {
    (void)m;
    for (int r : accused)
      if (c.ranks[r].p2p.empty()) return "";
    std::vector<std::string> unmatched;
    for (const RankView& rv : c.ranks) {
      if (!rv.has_file()) continue;
      std::map<int, std::pair<uint64_t, uint64_t>> by_peer;  // peer -> (its recvs, peer's sends)
      for (const P2pCall& p : rv.p2p)
        if (!p.send && p.peer >= 0 && p.peer < static_cast<int>(c.ranks.size()))
          ++by_peer[p.peer].first;
      for (auto& [peer, n] : by_peer)
        for (const P2pCall& p : c.ranks[peer].p2p)
          if (p.send && p.peer == rv.rank) ++n.second;
      for (const auto& [peer, n] : by_peer)
        if (c.ranks[peer].has_file() && n.first > n.second)
          unmatched.push_back("rank " + std::to_string(rv.rank) + " posted " +
                              std::to_string(n.first) + " Recvs from rank " + std::to_string(peer) +
                              ", which posted " + std::to_string(n.second) + " Sends to it");
    }
    if (unmatched.empty()) return "";
    std::string s = unmatched[0];
    if (unmatched.size() == 2) s += "; " + unmatched[1];
    if (unmatched.size() > 2) s += "; and " + std::to_string(unmatched.size() - 1) + " more such";
    return Capitalized(s) +
           " (see p2p_mismatch): a Recv without its Send never completes, so that rank's GPU "
           "waits in it, every later call of that rank waits behind it (the Sends its peers "
           "wait for too), and a host that syncs with its GPU blocks. " +
           Capitalized(RankList(accused)) +
           " most likely stopped for that: make the ranks post matching Sends and Recvs (a "
           "pipeline's stages the same number of micro-batches per step).";
  }

  // " (the last rooted call before it is seq 89, Broadcast(10 float32))", or "".
  static std::string LastRootedBefore(const TraceModel& m, const CommModel& c, uint64_t stuck) {
    for (const RankView& r : c.ranks) {
      if (!r.has_file()) continue;
      for (auto s = r.collectives.rbegin(); s != r.collectives.rend(); ++s) {
        const Api api = CanonicalApi(static_cast<Api>(m.call(s->call).api));
        if (s->seq < stuck && (api == Api::kBroadcast || api == Api::kReduce))
          return " (the last rooted call before it is seq " + std::to_string(s->seq) + ", " +
                 ShortCall(m.call(s->call)) + ")";
      }
      return "";
    }
    return "";
  }

  // The process's last collective or point-to-point call, when it is on another communicator.
  // The process's last call on any communicator, found once per file in a check.
  const std::optional<CallRecord>& LastCall(const TraceModel& m, uint32_t f) {
    auto it = last_calls_.find(f);
    if (it == last_calls_.end()) it = last_calls_.emplace(f, m.LastCommCall(f)).first;
    return it->second;
  }

  std::optional<CallRecord> LastCallElsewhere(const TraceModel& m, size_t ci, const RankView& rv) {
    const std::optional<CallRecord>& last = LastCall(m, static_cast<uint32_t>(rv.file));
    if (!last || last->comm_id == m.comms()[ci].id) return std::nullopt;
    return last;
  }

  // "comm 0x... seq 4" (no seq for a point-to-point call).
  static std::string CallPlace(const CallRecord& c) {
    return "comm " + Hex64(c.comm_id) + (c.seq != kNoSeq ? " seq " + std::to_string(c.seq) : "");
  }

  // "(its last call was AllReduce(...) on comm Y)" when the rank went on elsewhere.
  std::string ElsewhereNote(const TraceModel& m, size_t ci, const RankView& rv, bool of_several) {
    const std::optional<CallRecord> last = LastCallElsewhere(m, ci, rv);
    if (!last) return "";
    const std::string whose = of_several ? "rank " + std::to_string(rv.rank) + "'s" : "its";
    std::string s = ", and " + whose + " process's last call was " + ShortCall(*last) + " on " +
                    CallPlace(*last);
    if (last->flags & call_flags::kInFlight) s += ", in which it was blocked (it never returned)";
    return s;
  }

  // Every accused rank's process is blocked in a call on another communicator (it never
  // returned): the first such call (common timeline), which is where this hang starts. Not when
  // a waiter here is itself blocked here and belongs to that communicator: the two wait for each
  // other (cross_comm_order's case), neither follows from the other.
  std::optional<CallRecord> AllBlockedElsewhere(const TraceModel& m, size_t ci,
                                                const std::vector<int>& accused,
                                                const std::vector<int>& waiters) {
    std::optional<CallRecord> first;
    int64_t first_time = 0;
    for (int r : accused) {
      const RankView& rv = m.comms()[ci].ranks[r];
      if (!rv.has_file()) return std::nullopt;
      const std::optional<CallRecord> last = LastCallElsewhere(m, ci, rv);
      if (!last || !(last->flags & call_flags::kInFlight)) return std::nullopt;
      const int64_t t = m.CommonTime(static_cast<uint32_t>(rv.file), last->enter_ns);
      if (!first || t < first_time) {
        first = last;
        first_time = t;
      }
    }
    if (!first) return std::nullopt;
    for (int w : waiters) {
      const auto f = static_cast<uint32_t>(m.comms()[ci].ranks[w].file);
      const std::optional<CallRecord>& own = LastCall(m, f);
      const bool blocked_here =
          own && own->comm_id == m.comms()[ci].id && (own->flags & call_flags::kInFlight);
      bool member = false;
      for (const auto& [other, rank] : m.files()[f].ranks)
        member |= m.comms()[other].id == first->comm_id;
      if (blocked_here && member) return std::nullopt;
    }
    return first;
  }

  // " and 2 more calls after it", or " (rank 0 issued 2 more calls after it)" when only some of
  // the waiters went that far (the others' hosts waited for the GPU sooner).
  static std::string AfterIt(const CommModel& c, const std::vector<int>& waiters, uint64_t after) {
    if (after == 0) return "";
    std::vector<int> ahead;
    for (int w : waiters)
      if (c.ranks[w].issued() == c.max_issued()) ahead.push_back(w);
    const std::string more = Plural(after, "more call", "more calls") + " after it";
    if (ahead.size() == waiters.size()) return " and " + more;
    return " (" + RankList(ahead) + " issued " + more + ")";
  }

  // Why a call a rank stays blocked in never completes, for the kind of call it is.
  static std::string BlockedAdvice(const CallRecord& c) {
    if (IsP2p(static_cast<Api>(c.api))) {
      const bool send = c.api == static_cast<uint16_t>(Api::kSend);
      return std::string("a ") + (send ? "Send" : "Recv") +
             " completes only when its peer posts the matching " + (send ? "Recv" : "Send") +
             " (look for a p2p_mismatch there).";
    }
    return "a collective completes only when every rank issues it alike: either the ranks' calls "
           "at that seq did not match (look for a finding there) or one of its ranks never issued "
           "it.";
  }

  std::map<uint32_t, std::optional<CallRecord>> last_calls_;  // file -> LastCommCall
};

}  // namespace

std::shared_ptr<Checker> MakeMissingCallChecker() { return std::make_shared<MissingCallChecker>(); }

}  // namespace ncclrr::analysis
