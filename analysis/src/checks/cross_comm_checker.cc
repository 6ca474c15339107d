// cross_comm_order: on one device, comm A's call before comm B's on one rank and B's before A's
// on another. Each device runs its collectives in issue order (one stream, or the host waiting
// in between), so each side waits for the other: the classic deadlock. Calls inside one group
// launch together and may come in either order.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "checks/checkers.h"
#include "checks/wait_cycle.h"
#include "ncclrr/trace/describe.h"
#include "report/text_util.h"

namespace ncclrr::analysis {
namespace {

struct Entry {
  int64_t time;
  CallRef call;
  uint32_t comm;
  uint64_t seq;
  uint64_t group;
};

// On one view, for a call of comm Y: the seqs of comm X issued before it, as [lo, hi): lo X
// calls certainly before, hi X calls before or in the same group (the next X seq is in between).
struct Before {
  uint64_t y_seq;
  uint64_t lo, hi;
  CallRef y_call;
  bool issued = true;  // false: the view never issued Y:y_seq (blocked before it)
};

// Had `r` issued `call` (op, count, type) on its communicator before seq `before`? The last
// kLookBack calls are read.
bool IssuedBefore(const TraceModel& m, const RankView& r, uint64_t before,
                  const std::string& call) {
  constexpr size_t kLookBack = 4096;
  const auto end = std::lower_bound(r.collectives.begin(), r.collectives.end(), before,
                                    [](const CollectiveSlot& s, uint64_t v) { return s.seq < v; });
  const size_t n = static_cast<size_t>(end - r.collectives.begin());
  for (size_t k = n; k-- > 0 && n - k <= kLookBack;)
    if (ShortCall(m.call(r.collectives[k].call)) == call) return true;
  return false;
}

// Per interval of a view's calls of one comm (key k: between its seq k - 1 and seq k), how many
// calls of the other comm it issued there. By X seq (calls of Y) or by Y seq (calls of X).
std::map<uint64_t, uint64_t> YCallsByX(const std::vector<Before>& view) {
  std::map<uint64_t, uint64_t> n;
  for (const Before& b : view)
    if (b.issued) ++n[b.lo];
  return n;
}
std::map<uint64_t, uint64_t> XCallsByY(const std::vector<Before>& view) {
  std::map<uint64_t, uint64_t> n;
  const Before* prev = nullptr;
  for (const Before& b : view) {
    if (!b.issued) continue;
    if (prev && prev->y_seq + 1 == b.y_seq) n[b.y_seq] = b.lo - prev->lo;
    if (!prev && b.y_seq == 0) n[0] = b.lo;
    prev = &b;
  }
  return n;
}

// Whether `skipped` issued nothing in interval `at` where every view of `others` issued the same
// number of calls (*calls), and in the last earlier interval where the others issued any, the
// same number as they did: the two sides went alike until one of them left calls out.
bool SkippedAt(const std::vector<std::map<uint64_t, uint64_t>>& skipped,
               const std::vector<std::map<uint64_t, uint64_t>>& others, uint64_t at,
               uint64_t* calls) {
  auto count = [](const std::map<uint64_t, uint64_t>& m, uint64_t k) {
    auto it = m.find(k);
    return it == m.end() ? uint64_t{0} : it->second;
  };
  auto alike = [&](uint64_t k, uint64_t* n) {  // every other view issued *n > 0 calls there
    *n = count(others.front(), k);
    for (const auto& o : others)
      if (count(o, k) != *n) return false;
    return *n > 0;
  };
  for (const auto& s : skipped)
    if (count(s, at) != 0) return false;
  if (others.empty() || skipped.empty() || !alike(at, calls)) return false;
  constexpr uint64_t kLookBack = 64;  // intervals
  for (uint64_t k = at; k-- > 0 && at - k <= kLookBack;) {
    uint64_t n = 0;
    if (!alike(k, &n)) continue;
    for (const auto& s : skipped)
      if (count(s, k) != n) return false;
    return true;
  }
  return false;
}

// A side that issued none of the calls the other side issued on one communicator between two
// calls of the other, and never those calls afterwards.
struct Skip {
  const std::vector<int>& who;
  const std::vector<int>& others;
  const CommModel& on;       // where the calls were left out
  uint64_t first, calls;     // the others' calls there
  const CommModel& between;  // ... issued between seq at - 1 and at of this one
  uint64_t at;
  bool went_on;  // every skipping rank issued later calls after `at`: its host was free
  bool blocked;  // one was blocked in `at` (it might have issued them after, in the other order)
  bool lacks;    // they never issued the others' first call there; else only later
};

// The finding's message with the skip reading: where the skipping side went on to later calls,
// the calls were left out (`mechanism` and the skip's advice); else both readings after
// `message` (the order's advice). Sets *short_text.
std::string SkipReading(const Skip& s, const std::string& mechanism, const std::string& message,
                        std::string* short_text) {
  const bool one = s.who.size() == 1, single = s.calls == 1;
  const std::string it = one ? "it" : "they";
  const std::string range =
      single ? "seq " + std::to_string(s.first) : "seqs " + SeqRange(s.first, s.calls);
  const std::string at = CommShortName(s.between) + " seq " + std::to_string(s.at);
  const std::string where = s.at == 0
                                ? "before " + at
                                : "between " + CommShortName(s.between) + " seq " +
                                      std::to_string(s.at - 1) + " and seq " + std::to_string(s.at);
  *short_text = RankList(s.who) +
                (single ? " did not issue the call"
                        : " issued none of the " + std::to_string(s.calls) + " calls") +
                " on " + CommShortName(s.on) + " (" + range + ") that " + RankList(s.others) +
                " issued " + where;
  const std::string seen = " But " + where + ", " + RankList(s.others) + " issued " +
                           Plural(s.calls, "call", "calls") + " on " + CommShortName(s.on) + " (" +
                           range + ") and " + RankList(s.who) + " none";
  const std::string branch = "a branch only " + it +
                             " took, such as an update skipped on a "
                             "condition only " +
                             it +
                             " saw (an overflow or a NaN found "
                             "locally) or a loop cut short";
  const std::string decide =
      "Take such a decision on every rank together (all-reduce the "
      "condition first), or issue the calls on every rank.";
  if (!s.lacks)  // they issued them, but only after `at`: from there on, a step behind
    return mechanism + seen + ", and " + it + " issued " + (single ? "it" : "them") +
           " only after " + at + ": " + RankList(s.who) + " left a step's " +
           (single ? "call" : "calls") + " on " + CommShortName(s.on) + " out -- " + branch +
           " -- so from " + range + " on " + it + (one ? " is " : " are ") +
           Plural(s.calls, "call", "calls") + " behind " + RankList(s.others) +
           " there, and NCCL pairs each of " + (one ? "its" : "their") +
           " calls with the others' from a step earlier (silently, where no other call waits in "
           "between). " +
           decide;
  if (s.went_on)
    return mechanism + seen + ", and " + it +
           " went on to later calls without them: rather than "
           "ordering the two communicators differently, " +
           RankList(s.who) + " left " + (single ? "that call" : "those calls") + " out -- " +
           branch + ". " + decide;
  return message + seen +
         (one ? ", and it issued nothing more after " + at
              : ", and not all of them issued anything after " + at) +
         (s.blocked ? " (blocked in it)" : "") + ": either " + RankList(s.who) + " left " +
         (single ? "that call" : "those calls") + " out -- " + branch +
         " (then take that decision on every rank together: all-reduce the condition first, or "
         "issue the calls on every rank) -- or " +
         it + " would have issued " + (single ? "it" : "them") + " after " + at +
         ", an order to fix as above.";
}

// Whether `skipped`, after leaving calls out in interval `at`, never made up for them over the
// next intervals while the others went on issuing: its running deficit stays what it was (a
// reordering issues the calls it held back later, and the deficit closes).
bool DeficitPersists(const std::vector<std::map<uint64_t, uint64_t>>& skipped,
                     const std::vector<std::map<uint64_t, uint64_t>>& others, uint64_t at,
                     uint64_t calls) {
  auto count = [](const std::map<uint64_t, uint64_t>& m, uint64_t k) {
    auto it = m.find(k);
    return it == m.end() ? uint64_t{0} : it->second;
  };
  constexpr uint64_t kLookAhead = 64;  // intervals
  bool went_on = false;
  for (size_t v = 0; v < skipped.size(); ++v) {
    int64_t deficit = static_cast<int64_t>(calls);
    for (uint64_t k = at + 1; k <= at + kLookAhead; ++k) {
      const uint64_t theirs = count(others.front(), k);
      deficit += static_cast<int64_t>(theirs) - static_cast<int64_t>(count(skipped[v], k));
      if (deficit != static_cast<int64_t>(calls)) return false;
      went_on |= theirs > 0;
    }
  }
  return went_on;
}

class CrossCommChecker : public Checker {
 public:
  std::string_view name() const override { return "cross-communicator order"; }

  void Run(CheckContext& ctx, FindingSink& sink) override {
    const TraceModel& m = ctx.model();
    // Views: (file, device); the comms each holds, and the rank it has on them.
    std::map<std::pair<int32_t, int>, std::map<uint32_t, int>> rank_in;  // view -> comm -> rank
    for (size_t ci = 0; ci < m.comms().size(); ++ci)
      for (const RankView& r : m.comms()[ci].ranks)
        if (r.has_file()) rank_in[{r.file, r.device}][static_cast<uint32_t>(ci)] = r.rank;
    // Pairs of comms that share at least two views: only their calls are looked at.
    std::map<std::pair<uint32_t, uint32_t>, std::vector<std::pair<int32_t, int>>> shared;
    for (const auto& [view, comms] : rank_in)
      for (auto a = comms.begin(); a != comms.end(); ++a)
        for (auto b = std::next(a); b != comms.end(); ++b)
          shared[{a->first, b->first}].push_back(view);
    std::map<std::pair<int32_t, int>, std::set<uint32_t>> needed;
    for (const auto& [pair, vs] : shared)
      if (vs.size() >= 2 && ctx.ChecksPair(pair.first, pair.second))
        for (const auto& v : vs) needed[v].insert({pair.first, pair.second});
    std::map<std::pair<int32_t, int>, std::vector<Entry>> views;  // calls in issue order
    for (const auto& [view, comms] : needed) {
      auto& entries = views[view];
      for (uint32_t ci : comms)
        for (const CollectiveSlot& s : m.comms()[ci].ranks[rank_in[view][ci]].collectives)
          if (s.launch == 0)
            entries.push_back({m.CallTime(s.call), s.call, ci, s.seq, m.call(s.call).group_id});
      std::sort(entries.begin(), entries.end(), [](const Entry& x, const Entry& y) {
        return std::tie(x.time, x.call) < std::tie(y.time, y.call);
      });
    }
    for (const auto& [pair, vs] : shared) {
      if (vs.size() < 2 || !ctx.ChecksPair(pair.first, pair.second)) continue;
      std::vector<std::vector<Before>> per_view;
      const uint64_t y_issued = ctx.MaxIssued(pair.second);
      for (const auto& v : vs) {
        const FileView& fv = m.files()[v.first];
        per_view.push_back(Intervals(views[v], pair.first, pair.second,
                                     !fv.torn && !fv.ring_mode && fv.dropped == 0, y_issued));
      }
      CheckPair(ctx, pair.first, pair.second, vs, per_view, rank_in, sink);
    }
    if (ctx.Root()) FindWaitCycle(ctx, sink);
  }

 private:
  // `complete`: the view's file shows where it stopped (not torn, not a flight-recorder file),
  // so a call it never issued counts as "after everything it did issue".
  static std::vector<Before> Intervals(const std::vector<Entry>& e, uint32_t x, uint32_t y,
                                       bool complete, uint64_t y_issued) {
    std::vector<Before> out;
    uint64_t next_x = complete ? 0 : kNoSeq;  // seq of the next X call; unknown in a ring file
    for (const Entry& en : e)
      if (en.comm == x) {
        next_x = std::min(next_x, en.seq);
        break;
      }
    uint64_t next_y = complete ? 0 : kNoSeq;
    for (size_t i = 0; i < e.size();) {
      // A block: one call, or a run of calls of the same group.
      size_t j = i + 1;
      if (e[i].group)
        while (j < e.size() && e[j].group == e[i].group) ++j;
      uint64_t after = next_x;
      for (size_t k = i; k < j; ++k)
        if (e[k].comm == x) after = e[k].seq + 1;
      for (size_t k = i; k < j; ++k)
        if (e[k].comm == y) {
          if (next_x != kNoSeq) out.push_back({e[k].seq, next_x, after, e[k].call});
          next_y = e[k].seq + 1;
        }
      next_x = after;
      i = j;
    }
    // The first Y call this view never issued comes after all of its X calls.
    if (complete && next_x != kNoSeq && next_y != kNoSeq && next_y < y_issued)
      out.push_back({next_y, next_x, next_x, {}, false});
    return out;
  }

  void CheckPair(CheckContext& ctx, uint32_t x, uint32_t y,
                 const std::vector<std::pair<int32_t, int>>& vs,
                 const std::vector<std::vector<Before>>& per_view,
                 const std::map<std::pair<int32_t, int>, std::map<uint32_t, int>>& rank_in,
                 FindingSink& sink) {
    // Walk Y seqs; at the first one where two views' intervals are disjoint, report.
    std::map<uint64_t, std::vector<std::pair<size_t, const Before*>>> by_seq;
    for (size_t v = 0; v < per_view.size(); ++v)
      for (const Before& b : per_view[v]) by_seq[b.y_seq].push_back({v, &b});
    for (const auto& [yseq, list] : by_seq) {
      uint64_t max_lo = 0, min_hi = kNoSeq;
      for (const auto& [v, b] : list) {
        max_lo = std::max(max_lo, b->lo);
        min_hi = std::min(min_hi, b->hi);
      }
      if (max_lo <= min_hi) continue;  // every pair of intervals overlaps
      // X seq `a` = min_hi: issued before Y:yseq where lo > a, after it where hi <= a.
      const uint64_t a = min_hi;
      std::vector<size_t> before, after;
      for (const auto& [v, b] : list) {
        if (b->lo > a) before.push_back(v);
        if (b->hi <= a) after.push_back(v);
      }
      Report(ctx, x, y, a, yseq, vs, per_view, list, before, after, rank_in, sink);
      return;  // the first conflict deadlocks; later ones are consequences
    }
  }

  void Report(CheckContext& ctx, uint32_t x, uint32_t y, uint64_t a, uint64_t yseq,
              const std::vector<std::pair<int32_t, int>>& vs,
              const std::vector<std::vector<Before>>& per_view,
              const std::vector<std::pair<size_t, const Before*>>& list,
              const std::vector<size_t>& before, const std::vector<size_t>& after,
              const std::map<std::pair<int32_t, int>, std::map<uint32_t, int>>& rank_in,
              FindingSink& sink) {
    const TraceModel& m = ctx.model();
    const CommModel& cx = m.comms()[x];
    const CommModel& cy = m.comms()[y];
    auto ranks_of = [&](const std::vector<size_t>& views) {
      std::vector<int> r;
      for (size_t v : views) r.push_back(rank_in.at(vs[v]).at(x));
      std::sort(r.begin(), r.end());
      return r;
    };
    const std::vector<int> rb = ranks_of(before), ra = ranks_of(after);
    const bool tie = rb.size() == ra.size();
    const std::vector<int>& minority = rb.size() < ra.size() ? rb : ra;
    Finding f = FindingOn(FindingKind::kCrossCommOrder, m, x);
    f.seq = a;
    f.ranks = minority;
    if (tie) {
      f.ranks.insert(f.ranks.end(), ra.begin(), ra.end());
      std::sort(f.ranks.begin(), f.ranks.end());
    }
    f.pattern = Hex64(cy.id);
    f.first_time = INT64_MAX;
    std::string xcall = "a call", ycall = "a call";
    // What each side issued first: the X call of `before`, the Y call of `after`.
    std::set<std::string> first_before, first_after;
    for (const auto& [v, b] : list) {
      const bool is_before = std::find(before.begin(), before.end(), v) != before.end();
      const bool is_after = std::find(after.begin(), after.end(), v) != after.end();
      const CollectiveSlot* sx = cx.ranks[rank_in.at(vs[v]).at(x)].AtSeq(a);
      if (is_before && sx) first_before.insert(ShortCall(m.call(sx->call)));
      if (is_after && b->issued) first_after.insert(ShortCall(m.call(b->y_call)));
    }
    for (const auto& [v, b] : list) {
      const RankView& rx = cx.ranks[rank_in.at(vs[v]).at(x)];
      const CollectiveSlot* sx = rx.AtSeq(a);
      if (b->issued) {
        f.calls.push_back({b->y_call, rank_in.at(vs[v]).at(y), yseq});
        ycall = ShortCall(m.call(b->y_call));
        f.first_time = std::min(f.first_time, m.CallTime(b->y_call));
      }
      if (sx) {
        f.calls.push_back({sx->call, rx.rank, a});
        xcall = ShortCall(m.call(sx->call));
        f.first_time = std::min(f.first_time, m.SlotTime(*sx));
      }
    }
    // Did every view of a group issue the call it should have issued second?
    auto all_issued = [&](const std::vector<size_t>& views, bool want_y) {
      for (size_t v : views) {
        const auto& view_ranks = rank_in.at(vs[v]);
        const CommModel& c = want_y ? cy : cx;
        if (!c.ranks[view_ranks.at(want_y ? y : x)].AtSeq(want_y ? yseq : a)) return false;
      }
      return true;
    };
    const std::string xs = CommShortName(cx) + " seq " + std::to_string(a);
    const std::string ys = CommShortName(cy) + " seq " + std::to_string(yseq);
    const bool b_done = all_issued(before, true), a_done = all_issued(after, false);
    auto second = [](const std::string& s, bool done) {
      return done ? " then " + s : ", then blocked (never issued " + s + ")";
    };
    f.table.push_back({CompactRanks(rb), "-", xs + second(ys, b_done), rb == minority || tie});
    f.table.push_back({CompactRanks(ra), "-", ys + second(xs, a_done), ra == minority || tie});
    f.short_text = RankList(rb) + " issued " + xs + " before " + ys + ", " + RankList(ra) +
                   " the other way round";
    const std::string mechanism =
        "On " + RankList(rb) + ", " + CommLabel(cx) + " seq " + std::to_string(a) + " (" + xcall +
        ") was issued before " + CommLabel(cy) + " seq " + std::to_string(yseq) + " (" + ycall +
        ")" + (b_done ? "" : ", which never came") + "; on " + RankList(ra) + " (ranks of " +
        CommShortName(cx) + ") the opposite" + (a_done ? "" : ", and the first never came") +
        ". Each device runs its collectives in issue order (one stream, or the host waiting "
        "between them), so each side waits in one communicator for ranks that wait in the other: "
        "a deadlock, or one waiting to happen where separate streams happen to overlap.";
    f.message = mechanism +
                " Issue the collectives of different communicators in one global order on every "
                "rank, or put both in one ncclGroupStart/ncclGroupEnd.";
    // One side issued its first call on a communicator where it had never issued that call,
    // while it had issued it, until now, on the other one, with every rank: not an order of two
    // communicators, but a call sent to the wrong one.
    auto moved = [&](const std::vector<size_t>& views, bool to_x) {
      const std::set<std::string>& first = to_x ? first_before : first_after;
      if (views.empty() || first.size() != 1) return false;
      for (size_t v : views) {
        const auto& in = rank_in.at(vs[v]);
        const RankView& here = to_x ? cx.ranks[in.at(x)] : cy.ranks[in.at(y)];
        const RankView& there = to_x ? cy.ranks[in.at(y)] : cx.ranks[in.at(x)];
        if (IssuedBefore(m, here, to_x ? a : yseq, *first.begin()) ||
            !IssuedBefore(m, there, to_x ? yseq : a, *first.begin()))
          return false;
      }
      return true;
    };
    // ... and the other side had issued it on its own communicator before too.
    auto as_before = [&](const std::vector<size_t>& views, bool on_x) {
      for (size_t v : views) {
        const auto& in = rank_in.at(vs[v]);
        const RankView& own = on_x ? cx.ranks[in.at(x)] : cy.ranks[in.at(y)];
        if (!IssuedBefore(m, own, on_x ? a : yseq, *first_before.begin())) return false;
      }
      return true;
    };
    const bool b_moved = moved(before, true), a_moved = moved(after, false);
    const bool one_moved = b_moved != a_moved && first_before == first_after &&
                           (b_moved ? as_before(after, false) : as_before(before, true));
    const std::vector<int>& who = b_moved ? rb : ra;
    const std::vector<int>& others = b_moved ? ra : rb;
    const CommModel& to = b_moved ? cx : cy;
    const CommModel& from = b_moved ? cy : cx;
    // Where a call goes when `group=` is left out: the default group, which the others were
    // split from. Sent anywhere else, a group used for the first time in a different order per
    // rank looks the same: both readings then.
    const bool to_default = from.parent_id == to.id && to.id != 0;
    const bool same_call_first = cx.nranks == cy.nranks &&
                                 vs.size() == static_cast<size_t>(cx.nranks) &&
                                 first_before.size() == 1 && first_before == first_after;
    if (one_moved && !to_default) {
      f.message += " But until then " + RankList(who) + " had issued " + *first_before.begin() +
                   " only on " + CommShortName(from) + ", as " + RankList(others) +
                   " did, and never on " + CommShortName(to) +
                   ": rather than an order of two communicators, the call may have been sent to "
                   "the wrong one (another group's handle on the path " +
                   RankList(who) + (who.size() == 1 ? " takes" : " take") + "); if it belongs on " +
                   CommShortName(to) +
                   ", issue the two communicators' collectives in one order on every rank.";
    } else if (one_moved) {
      f.message =
          "On " + RankList(rb) + ", " + CommLabel(cx) + " seq " + std::to_string(a) + " (" + xcall +
          ") was issued" + (b_done ? "" : " and never followed by " + ys) + "; on " + RankList(ra) +
          ", " + CommLabel(cy) + " seq " + std::to_string(yseq) + " (" + ycall + ")" +
          (a_done ? "" : ", and never " + xs) + ". Until then " + RankList(who) + " had issued " +
          *first_before.begin() + " on " + CommShortName(from) + ", as " + RankList(others) +
          " did, and never on " + CommShortName(to) +
          ": here it sent that call to another communicator. NCCL pairs calls only within a "
          "communicator, so " +
          RankList(others) + " wait" + (others.size() == 1 ? "s" : "") + " on " +
          CommShortName(from) + " for a call that went to " + CommShortName(to) +
          ", where nobody else issues it: a hang. A process group passed wrongly on the path " +
          RankList(who) + (who.size() == 1 ? " takes" : " take") +
          " does this: `group=` left out sends a call to the default group, and " +
          CommShortName(from) + " was split from " + CommShortName(to) +
          ". Pass the same group on every rank.";
      f.short_text = RankList(who) + " issued " + *first_before.begin() + " on " +
                     CommShortName(to) + " where " + RankList(others) + " issued it on " +
                     CommShortName(from) + ", the communicator every rank had used for it";
    } else if (same_call_first)
      // Both sides issued the same call first, each on its own communicator over the same
      // ranks: the ranks may not disagree on the order at all but on which communicator is
      // which.
      f.message += " But both sides issued the same call first, " + *first_before.begin() +
                   ", each on its own communicator over the same ranks: the ranks may rather "
                   "disagree on which communicator is which, " +
                   RankList(ra) + "'s " + CommShortName(cy) + " being " + RankList(rb) + "'s " +
                   CommShortName(cx) +
                   " in purpose. That happens when process groups (or ncclCommSplit colors) "
                   "are created in a different order on different ranks -- new_group called "
                   "while iterating a set or dict of group names (Python's string hashing "
                   "differs per process), or in a rank-dependent branch: create the groups in "
                   "one fixed order on every rank (a sorted list).";
    if (!one_moved && !same_call_first) {
      // The side that never issued the other call may have left calls out rather than ordered
      // them differently: compare how many each side issued in the same interval.
      auto maps = [&](const std::vector<size_t>& views, bool by_x) {
        std::vector<std::map<uint64_t, uint64_t>> out;
        for (size_t v : views)
          out.push_back(by_x ? YCallsByX(per_view[v]) : XCallsByY(per_view[v]));
        return out;
      };
      // How the views of `views` went on from their call at X:a (skipped Y) or Y:yseq.
      struct Stop {
        bool went_on = true;   // every one issued its next call there: its host was free
        bool blocked = false;  // one was blocked in it
        bool lacks = true;     // none issued the other communicator's call (Y:yseq, or X:a)
      };
      auto stop_of = [&](const std::vector<size_t>& views, bool skipped_y) {
        Stop st;
        for (size_t v : views) {
          const auto& in = rank_in.at(vs[v]);
          const RankView& lacking = skipped_y ? cy.ranks[in.at(y)] : cx.ranks[in.at(x)];
          const RankView& at = skipped_y ? cx.ranks[in.at(x)] : cy.ranks[in.at(y)];
          const uint64_t seq = skipped_y ? a : yseq;
          st.lacks = st.lacks && !lacking.AtSeq(skipped_y ? yseq : a);
          const CollectiveSlot* s = at.AtSeq(seq);
          const bool blocked = s && (m.call(s->call).flags & call_flags::kInFlight);
          st.blocked = st.blocked || blocked;
          st.went_on = st.went_on && !blocked && at.AtSeq(seq + 1);
        }
        return st;
      };
      std::optional<Skip> skip;
      uint64_t calls = 0;
      // `before` issued X:a and no Y since X:a-1; or `after` issued Y:yseq and no X since Y-1.
      // Where the side issued the other call later, only a deficit that stays tells a skip from
      // a reordering.
      auto skipped = [&](const std::vector<size_t>& side, const std::vector<size_t>& rest,
                         bool by_x, uint64_t at, const Stop& st) {
        const auto mine = maps(side, by_x), theirs = maps(rest, by_x);
        return SkippedAt(mine, theirs, at, &calls) &&
               (st.lacks || (st.went_on && DeficitPersists(mine, theirs, at, calls)));
      };
      if (const Stop st = stop_of(before, true); skipped(before, after, true, a, st))
        skip.emplace(Skip{rb, ra, cy, yseq, calls, cx, a, st.went_on, st.blocked, st.lacks});
      else if (const Stop st2 = stop_of(after, false); skipped(after, before, false, yseq, st2))
        skip.emplace(Skip{ra, rb, cx, a, calls, cy, yseq, st2.went_on, st2.blocked, st2.lacks});
      if (skip) f.message = SkipReading(*skip, mechanism, f.message, &f.short_text);
    }
    // The hang that follows on both communicators is this finding's consequence.
    ctx.Claim(x, a, kNoSeq);
    ctx.Claim(y, yseq, kNoSeq);
    sink.Add(std::move(f));
  }
};

}  // namespace

std::shared_ptr<Checker> MakeCrossCommChecker() { return std::make_shared<CrossCommChecker>(); }

}  // namespace ncclrr::analysis
