// DiffTraces: per matched communicator and rank, the two runs' call sequences aligned
// (rank_alignment.h), then every paired call compared for call site, data and GPU time. Events
// are grouped per communicator and kind; the first position of each kind becomes a Divergence.
#include "ncclrr/analysis/trace_diff.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <set>

#include "diff/diff_events.h"
#include "model/call_sketches.h"
#include "model/comm_matching.h"
#include "model/gpu_time_index.h"
#include "model/rank_alignment.h"
#include "model/signature.h"
#include "ncclrr/analysis/check.h"
#include "ncclrr/trace/describe.h"
#include "report/text_util.h"

namespace ncclrr::analysis {
namespace {

constexpr size_t kDataOrderWindow = 8;  // same-shape calls searched for swapped data
constexpr size_t kMaxRows = 8;          // table rows of one divergence

uint64_t Signature(const CallRecord& c) {
  const uint64_t s = ShapeSignature(c);
  return IsP2p(static_cast<Api>(c.api)) ? Mix64(s, static_cast<uint32_t>(c.root_peer) + 1) : s;
}

// One rank's calls of one kind (collectives, or Send/Recv) in both runs, aligned.
struct Track {
  int rank = -1;
  bool p2p = false;
  std::vector<DiffSlot> a, b;
  std::vector<uint64_t> sig_a, sig_b;
  RankAlignment align;
  std::vector<ptrdiff_t> b_of_a;  // paired index of B per index of A, -1 when none
  std::vector<ptrdiff_t> a_of_b;

  uint64_t APos(size_t i) const {  // A's position of index i (one past the end: next seq)
    if (i < a.size()) return a[i].pos;
    return a.empty() ? 0 : a.back().pos + 1;
  }
  uint64_t BPos(size_t i) const {
    if (i < b.size()) return b[i].pos;
    return b.empty() ? 0 : b.back().pos + 1;
  }
};

std::vector<DiffSlot> Slots(const RankView& r, bool p2p) {
  std::vector<DiffSlot> out;
  if (p2p) {
    for (size_t i = 0; i < r.p2p.size(); ++i) out.push_back({i, r.p2p[i].call, 0});
  } else {
    for (const CollectiveSlot& s : r.collectives)
      out.push_back({s.seq, s.call, static_cast<uint32_t>(s.launch)});
  }
  return out;
}

std::vector<DiffSlot> Range(const std::vector<DiffSlot>& v, size_t from, size_t len) {
  return {v.begin() + static_cast<ptrdiff_t>(std::min(from, v.size())),
          v.begin() + static_cast<ptrdiff_t>(std::min(from + len, v.size()))};
}

// A call site compared across runs: its frames, without those outside any loaded object
// (absolute addresses, which move between runs).
std::string NormalizedSite(const TraceModel& m, CallRef r) {
  const CallRecord& c = m.call(r);
  if (c.callsite == 0) return "";
  const std::string text = m.file(r.file).String(c.callsite);
  std::string out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('<', start);
    if (end == std::string::npos) end = text.size();
    const std::string frame = text.substr(start, end - start);
    if (!frame.empty() && frame.rfind("0x", 0) != 0) out += (out.empty() ? "" : "<") + frame;
    start = end + 1;
  }
  return out;
}

bool HasCallSites(const TraceModel& m) {
  for (const TraceFile& f : m.dir().files)
    for (const CallRecord& c : f.calls)
      if (c.callsite != 0) return true;
  return false;
}

// `check`'s suspected_swap findings of a run: same-shape reorderings across ranks.
std::vector<Finding> SuspectedSwaps(const TraceModel& m) {
  std::vector<Finding> out;
  for (Finding& f : Check(m).findings)
    if (f.kind == FindingKind::kSuspectedSwap) out.push_back(std::move(f));
  return out;
}

int64_t Median(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

class Differ {
 public:
  Differ(const TraceModel& a, const TraceModel& b, const DiffOptions& o)
      : a_(a), b_(b), o_(o), gpu_a_(a), gpu_b_(b) {}

  DiffReport Run() {
    DiffReport r;
    r.summary.comms_a = a_.comms().size();
    r.summary.comms_b = b_.comms().size();
    const bool sketches_a = TraceHasSketches(a_), sketches_b = TraceHasSketches(b_);
    const bool sites_a = HasCallSites(a_), sites_b = HasCallSites(b_);
    data_ = r.summary.data_compared = sketches_a && sketches_b;
    timing_ = r.summary.timing_compared = !gpu_a_.empty() && !gpu_b_.empty();
    sites_ = r.summary.call_sites_compared = sites_a && sites_b;
    OneSidedNote(sketches_a, sketches_b, "data sketches (`record --sketch`)", "data", &r);
    OneSidedNote(!gpu_a_.empty(), !gpu_b_.empty(), "GPU times (`record --gpu-timing`)", "timing",
                 &r);
    OneSidedNote(sites_a, sites_b, "call sites (Python frames, or `record --stacks`)", "call sites",
                 &r);
    suspected_a_ = SuspectedSwaps(a_);
    suspected_b_ = SuspectedSwaps(b_);
    r.comms = MatchComms(a_, b_);
    for (const CommPair& p : r.comms) {
      if (p.a >= 0 && p.b >= 0) {
        ++r.summary.matched;
        DiffComm(p, &r);
      } else {
        r.divergences.push_back(Unmatched(p));
      }
    }
    return r;
  }

 private:
  void OneSidedNote(bool in_a, bool in_b, const std::string& what, const std::string& kind,
                    DiffReport* r) const {
    if (in_a == in_b) return;
    r->notes.push_back("only run " + std::string(in_a ? "A" : "B") + " has " + what + ": " + kind +
                       " not compared");
  }

  Divergence Unmatched(const CommPair& p) const {
    const bool in_a = p.a >= 0;
    const TraceModel& m = in_a ? a_ : b_;
    const CommModel& c = m.comms()[in_a ? p.a : p.b];
    Divergence d;
    d.kind = DiffKind::kUnmatchedComm;
    d.comm_a = p.a;
    d.comm_b = p.b;
    uint64_t calls = 0;
    for (const RankView& rv : c.ranks) calls += rv.collectives.size() + rv.p2p.size();
    const std::string run = in_a ? "A" : "B", other = in_a ? "B" : "A";
    d.short_text = CommLabel(c) + " of run " + run + " has no counterpart in run " + other;
    d.message = "Run " + run + "'s " + CommLabel(c) + " (" + CommOriginText(m, c) + ", " +
                Plural(calls, "call", "calls") + ") matches no communicator of run " + other +
                " by how it was made (origin, size, name, parent, split color). Run " + other +
                " did not create it, or created it differently; its calls are not compared.";
    return d;
  }

  void DiffComm(const CommPair& p, DiffReport* r) {
    const CommModel& ca = a_.comms()[p.a];
    const CommModel& cb = b_.comms()[p.b];
    if (p.loose)
      r->notes.push_back(CommLabel(ca) + " of run A and " + CommLabel(cb) +
                         " of run B were matched on origin, size and name only (" +
                         CommOriginText(a_, ca) + " in run A; " + CommOriginText(b_, cb) +
                         " in run B)");
    const int n = std::min(CommSize(ca), CommSize(cb));
    for (bool p2p : {false, true}) {
      std::vector<Track> tracks;
      for (int rank = 0; rank < n; ++rank) {
        const RankView* ra = rank < static_cast<int>(ca.ranks.size()) ? &ca.ranks[rank] : nullptr;
        const RankView* rb = rank < static_cast<int>(cb.ranks.size()) ? &cb.ranks[rank] : nullptr;
        const bool file_a = ra && ra->has_file(), file_b = rb && rb->has_file();
        if (!file_a || !file_b) {
          if (!p2p && file_a != file_b)
            r->notes.push_back("rank " + std::to_string(rank) + " of " + CommLabel(ca) +
                               " has a trace file only in run " + (file_a ? "A" : "B") +
                               ": its calls are not compared");
          continue;
        }
        tracks.push_back(MakeTrack(rank, p2p, *ra, *rb));
        r->summary.calls_a += tracks.back().a.size();
        r->summary.calls_b += tracks.back().b.size();
        r->summary.paired += tracks.back().align.pairs.size();
      }
      CollectEvents(p, p2p, n, tracks, r);
    }
  }

  Track MakeTrack(int rank, bool p2p, const RankView& ra, const RankView& rb) const {
    Track t;
    t.rank = rank;
    t.p2p = p2p;
    t.a = Slots(ra, p2p);
    t.b = Slots(rb, p2p);
    for (const DiffSlot& s : t.a) t.sig_a.push_back(Signature(a_.call(s.call)));
    for (const DiffSlot& s : t.b) t.sig_b.push_back(Signature(b_.call(s.call)));
    t.align = AlignRuns(t.sig_a, t.sig_b, o_.reorder_window);
    t.b_of_a.assign(t.a.size(), -1);
    t.a_of_b.assign(t.b.size(), -1);
    for (const CallPair& cp : t.align.pairs) {
      t.b_of_a[cp.a] = static_cast<ptrdiff_t>(cp.b);
      t.a_of_b[cp.b] = static_cast<ptrdiff_t>(cp.a);
    }
    return t;
  }

  using ByPosition = std::map<uint64_t, std::vector<DiffEvent>>;

  void CollectEvents(const CommPair& p, bool p2p, int nranks, const std::vector<Track>& tracks,
                     DiffReport* r) {
    std::map<DiffKind, ByPosition> events;
    for (const Track& t : tracks) {
      EditEvents(t, &events);
      PairEvents(t, &events);
    }
    if (!p2p) {
      for (const Finding& f : suspected_b_) SuspectedSwapEvent(f, p.b, false, tracks, &events);
      for (const Finding& f : suspected_a_) SuspectedSwapEvent(f, p.a, true, tracks, &events);
    }
    TimingGroup timing;
    if (timing_ && !p2p) timing = TimingEvents(tracks, &events[DiffKind::kTiming]);
    if (data_) {
      InputNote(p, r);
      TakeDataEvents(&events);
    }
    for (DiffKind k : {DiffKind::kMissingCall, DiffKind::kExtraCall}) MergeTails(&events[k]);
    for (auto& [kind, by_pos] : events) {
      std::erase_if(by_pos, [](const auto& kv) { return kv.second.empty(); });
      if (by_pos.empty()) continue;
      EventGroup g;
      g.kind = kind;
      g.p2p = p2p;
      g.nranks = nranks;
      // Later positions, plus the repeats `check` grouped into a suspected_swap.
      g.more = by_pos.size() - 1;
      uint64_t repeats = 0;
      for (const auto& [pos, evs] : by_pos)
        for (const DiffEvent& e : evs) repeats = std::max(repeats, e.extra_more);
      g.more += repeats;
      g.events = std::move(by_pos.begin()->second);
      std::stable_sort(g.events.begin(), g.events.end(),
                       [](const DiffEvent& x, const DiffEvent& y) { return x.rank < y.rank; });
      if (kind == DiffKind::kTiming) {
        const TimingCost& c = timing.at(by_pos.begin()->first);
        g.cost_a = c.a;
        g.cost_b = c.b;
        g.median_a = c.median_a;
        g.median_b = c.median_b;
      }
      r->divergences.push_back(MakeDivergence(p, g, tracks));
    }
  }

  void EditEvents(const Track& t, std::map<DiffKind, ByPosition>* events) const {
    for (const RankEdit& e : t.align.edits) {
      DiffEvent ev;
      ev.rank = t.rank;
      ev.a = Range(t.a, e.a, e.a_len);
      ev.b = Range(t.b, e.b, e.b_len);
      ev.a_pos = t.APos(e.a);
      ev.b_pos = t.BPos(e.b);
      DiffKind kind = DiffKind::kArguments;
      switch (e.type) {
        case RankEdit::kReorder:
          kind = DiffKind::kOrder;
          break;
        case RankEdit::kArguments:
          break;
        case RankEdit::kMissing:
        case RankEdit::kExtra:
          kind = e.type == RankEdit::kMissing ? DiffKind::kMissingCall : DiffKind::kExtraCall;
          ev.at_end = e.type == RankEdit::kMissing ? e.b == t.b.size() : e.a == t.a.size();
          if (ev.at_end) ev.short_side_unclean = ShortSideUnclean(t, e.type == RankEdit::kMissing);
          if (!ev.at_end) {
            RepeatsBefore(t, e, &ev);
            AgreementAfter(t, e, &ev);
          }
          break;
      }
      (*events)[kind][ev.a_pos].push_back(std::move(ev));
    }
  }

  // The skipped (or added) calls are a whole step of a loop when the same calls, two or more,
  // repeat whole just before them: the alignment put them at the last repeat, but they may be
  // any of them.
  static void RepeatsBefore(const Track& t, const RankEdit& e, DiffEvent* ev) {
    const bool missing = e.type == RankEdit::kMissing;
    const std::vector<uint64_t>& sig = missing ? t.sig_a : t.sig_b;
    const size_t at = missing ? e.a : e.b, len = missing ? e.a_len : e.b_len;
    size_t from = at;
    while (from > 0 && from - 1 + len < sig.size() && sig[from - 1] == sig[from - 1 + len]) --from;
    if (len < 2 || from + len > at) return;
    ev->repeats_before = true;
    ev->earliest_pos = missing ? t.APos(from) : t.BPos(from);
  }

  // How far the run without the calls agrees again after them: up to the next edit, or to its
  // end, where it ends without another edit (the other run's tail, an edit at that end, does
  // not count).
  void AgreementAfter(const Track& t, const RankEdit& e, DiffEvent* ev) const {
    const bool missing = e.type == RankEdit::kMissing;
    const size_t from = missing ? e.b : e.a;
    const size_t size = missing ? t.b.size() : t.a.size();
    size_t until = size;
    // Edits are in A's order: the one after `e` is the next on either side.
    const auto next = std::next(t.align.edits.begin(), &e - t.align.edits.data() + 1);
    if (next != t.align.edits.end()) until = std::min(until, missing ? next->b : next->a);
    ev->agree_after = until - from;
    ev->short_ends = until == size;
    ev->agree_launched = until > from;
    for (size_t i = from; i < until; ++i)
      ev->agree_launched = ev->agree_launched && (missing ? t.b[i] : t.a[i]).launch != 0;
    if (ev->short_ends) ev->short_ends_unclean = ShortSideUnclean(t, missing);
  }

  // Where ranks stopped is one divergence, however the ranks' stops differ: the tail events
  // move to the earliest of their positions.
  static void MergeTails(ByPosition* by_pos) {
    std::vector<DiffEvent> tails;
    std::optional<uint64_t> first;
    for (auto it = by_pos->begin(); it != by_pos->end();) {
      auto& evs = it->second;
      for (auto e = evs.begin(); e != evs.end();) {
        if (!e->at_end) {
          ++e;
          continue;
        }
        first = first ? std::min(*first, it->first) : it->first;
        tails.push_back(std::move(*e));
        e = evs.erase(e);
      }
      it = evs.empty() ? by_pos->erase(it) : std::next(it);
    }
    if (!first) return;
    std::sort(tails.begin(), tails.end(),
              [](const DiffEvent& x, const DiffEvent& y) { return x.rank < y.rank; });
    auto& at = (*by_pos)[*first];
    at.insert(at.end(), tails.begin(), tails.end());
    std::stable_sort(at.begin(), at.end(),
                     [](const DiffEvent& x, const DiffEvent& y) { return x.rank < y.rank; });
  }

  // The run that issued fewer calls: does this rank's file there end without a clean close?
  bool ShortSideUnclean(const Track& t, bool b_is_short) const {
    const TraceModel& m = b_is_short ? b_ : a_;
    const auto& slots = b_is_short ? t.b : t.a;
    if (slots.empty()) return false;
    const FileView& f = m.files()[slots.back().call.file];
    return !f.clean;
  }

  // Call sites and data of the calls the alignment paired.
  void PairEvents(const Track& t, std::map<DiffKind, ByPosition>* events) {
    std::set<std::pair<size_t, size_t>> data_orders;  // (first, last) A indices reported
    for (const CallPair& cp : t.align.pairs) {
      if (!cp.same_signature) continue;
      const DiffSlot& sa = t.a[cp.a];
      const DiffSlot& sb = t.b[cp.b];
      if (sites_) {
        const std::string x = NormalizedSite(a_, sa.call), y = NormalizedSite(b_, sb.call);
        if (!x.empty() && !y.empty() && x != y) {
          DiffEvent ev = PairEvent(t, cp);
          ev.site_a = x;
          ev.site_b = y;
          (*events)[DiffKind::kCallSite][sa.pos].push_back(std::move(ev));
        }
      }
      if (!data_) continue;
      const DataComparison dc = CompareCallData({&a_, sa.call, sa.launch},
                                                {&b_, sb.call, sb.launch}, o_.data_tolerance_floor);
      if (dc.inputs == Agreement::kDiffer) {
        if (auto j = DataSwapPartner(t, cp); j && data_orders.insert(*j).second) {
          DiffEvent ev;
          ev.rank = t.rank;
          ev.evidence = DiffEvent::Evidence::kData;
          ev.a = Range(t.a, j->first, j->second - j->first + 1);
          for (size_t i = j->first; i <= j->second; ++i)
            if (t.b_of_a[i] >= 0) ev.b.push_back(t.b[static_cast<size_t>(t.b_of_a[i])]);
          std::sort(ev.b.begin(), ev.b.end(),
                    [](const DiffSlot& x, const DiffSlot& y) { return x.pos < y.pos; });
          ev.a_pos = t.a[j->first].pos;
          ev.b_pos = ev.b.empty() ? 0 : ev.b.front().pos;
          (*events)[DiffKind::kOrder][ev.a_pos].push_back(std::move(ev));
        }
      }
      if (dc.outputs == Agreement::kDiffer || dc.inputs == Agreement::kDiffer) {
        DiffEvent ev = PairEvent(t, cp);
        ev.data = dc;
        data_events_[sa.pos].push_back(std::move(ev));
      }
    }
  }

  // A suspected_swap `check` finds in one run (`in_a`: run A) and not at the same place in the
  // other: same-shape calls reordered on some ranks, told apart by buffers or call sites.
  void SuspectedSwapEvent(const Finding& f, int comm, bool in_a, const std::vector<Track>& tracks,
                          std::map<DiffKind, ByPosition>* events) const {
    if (static_cast<int>(f.comm_index) != comm || !f.seq) return;
    for (const Track& t : tracks) {
      if (std::find(f.ranks.begin(), f.ranks.end(), t.rank) == f.ranks.end()) continue;
      const std::vector<DiffSlot>& own = in_a ? t.a : t.b;
      const std::vector<ptrdiff_t>& other_of = in_a ? t.b_of_a : t.a_of_b;
      DiffEvent ev;
      ev.rank = t.rank;
      ev.evidence = DiffEvent::Evidence::kIdentity;
      ev.in_run_a = in_a;
      ev.confidence = f.confidence.value_or(0);
      ev.extra_more = f.repeats;
      for (const InvolvedCall& c : f.calls) {
        if (c.rank != t.rank) continue;
        auto it = std::lower_bound(own.begin(), own.end(), c.seq,
                                   [](const DiffSlot& s, uint64_t v) { return s.pos < v; });
        if (it == own.end() || it->pos != c.seq) continue;
        const ptrdiff_t k = other_of[static_cast<size_t>(it - own.begin())];
        (in_a ? ev.a : ev.b).push_back(*it);
        if (k >= 0) (in_a ? ev.b : ev.a).push_back((in_a ? t.b : t.a)[static_cast<size_t>(k)]);
      }
      if (ev.a.size() < 2 || ev.b.size() < 2) continue;  // one call moves nowhere
      for (auto* v : {&ev.a, &ev.b})
        std::sort(v->begin(), v->end(),
                  [](const DiffSlot& x, const DiffSlot& y) { return x.pos < y.pos; });
      ev.a_pos = ev.a.front().pos;
      ev.b_pos = ev.b.front().pos;
      // The other run suspects the same reordering there: no difference between the runs.
      const auto& other = in_a ? suspected_b_ : suspected_a_;
      const uint64_t other_pos = in_a ? ev.b_pos : ev.a_pos;
      const bool both = std::any_of(other.begin(), other.end(), [&](const Finding& g) {
        return g.seq == other_pos &&
               std::find(g.ranks.begin(), g.ranks.end(), t.rank) != g.ranks.end();
      });
      ByPosition& orders = (*events)[DiffKind::kOrder];
      auto at = orders.find(ev.a_pos);
      // Sketches or signatures already show a reordering there: that says more.
      const bool known = at != orders.end() &&
                         std::any_of(at->second.begin(), at->second.end(), [&](const DiffEvent& e) {
                           return e.evidence != DiffEvent::Evidence::kIdentity || e.rank == t.rank;
                         });
      if (!both && !known) orders[ev.a_pos].push_back(std::move(ev));
    }
  }

  static DiffEvent PairEvent(const Track& t, const CallPair& cp) {
    DiffEvent ev;
    ev.rank = t.rank;
    ev.a = {t.a[cp.a]};
    ev.b = {t.b[cp.b]};
    ev.a_pos = t.a[cp.a].pos;
    ev.b_pos = t.b[cp.b].pos;
    return ev;
  }

  bool InputsAgree(const Track& t, size_t ia, size_t ib) const {
    const CallSketches x = SketchesOf(a_, t.a[ia].call, t.a[ia].launch);
    const CallSketches y = SketchesOf(b_, t.b[ib].call, t.b[ib].launch);
    return CompareBlocks(x.send, y.send, o_.data_tolerance_floor) == Agreement::kAgree;
  }

  // Same-shape calls swapped: B's call at A's index i carries the inputs A issued at j, and B's
  // call at j those A issued at i. Returns (min, max) of i and j.
  std::optional<std::pair<size_t, size_t>> DataSwapPartner(const Track& t,
                                                           const CallPair& cp) const {
    const size_t i = cp.a;
    const size_t lo = i > kDataOrderWindow ? i - kDataOrderWindow : 0;
    const size_t hi = std::min(t.a.size(), i + kDataOrderWindow + 1);
    for (size_t j = lo; j < hi; ++j) {
      if (j == i || t.sig_a[j] != t.sig_a[i] || t.b_of_a[j] < 0) continue;
      const size_t jb = static_cast<size_t>(t.b_of_a[j]);
      if (InputsAgree(t, j, cp.b) && InputsAgree(t, i, jb))
        return std::make_pair(std::min(i, j), std::max(i, j));
    }
    return std::nullopt;
  }

  // Comm-level data events: at a position where some rank's output differs although its own
  // inputs agree; every rank with a data difference there is part of the event.
  void TakeDataEvents(std::map<DiffKind, ByPosition>* events) {
    for (auto& [pos, evs] : data_events_) {
      const bool any = std::any_of(evs.begin(), evs.end(), [](const DiffEvent& e) {
        return e.data.inputs == Agreement::kAgree && e.data.outputs == Agreement::kDiffer;
      });
      if (any) (*events)[DiffKind::kData][pos] = std::move(evs);
    }
    data_events_.clear();
  }

  struct TimingCost {
    int64_t a = -1, b = -1, median_a = 0, median_b = 0;
  };
  using TimingGroup = std::map<uint64_t, TimingCost>;

  // A position's cost in a run is its shortest GPU duration over the ranks (see DiffOptions).
  TimingGroup TimingEvents(const std::vector<Track>& tracks, ByPosition* out) const {
    TimingGroup cost;
    std::map<uint64_t, std::vector<DiffEvent>> per_pos;
    std::map<uint64_t, uint64_t> sig_of;
    for (const Track& t : tracks) {
      std::set<uint64_t> warm;  // signatures this rank issued before
      for (const CallPair& cp : t.align.pairs) {
        // The first call of a signature sets up NCCL's connections for it (lazily), so its time
        // varies from run to run by orders of magnitude: it is left out.
        if (!cp.same_signature || warm.insert(t.sig_a[cp.a]).second) continue;
        const GpuTimeRecord* ga = gpu_a_.Of(t.a[cp.a].call, t.a[cp.a].launch);
        const GpuTimeRecord* gb = gpu_b_.Of(t.b[cp.b].call, t.b[cp.b].launch);
        if (!ga || !gb) continue;
        DiffEvent ev = PairEvent(t, cp);
        ev.gpu_a = ga->end_ns - ga->start_ns;
        ev.gpu_b = gb->end_ns - gb->start_ns;
        TimingCost& c = cost[ev.a_pos];
        c.a = c.a < 0 ? ev.gpu_a : std::min(c.a, ev.gpu_a);
        c.b = c.b < 0 ? ev.gpu_b : std::min(c.b, ev.gpu_b);
        sig_of[ev.a_pos] = t.sig_a[cp.a];
        per_pos[ev.a_pos].push_back(std::move(ev));
      }
    }
    std::map<uint64_t, std::pair<std::vector<int64_t>, std::vector<int64_t>>> by_sig;
    for (const auto& [pos, c] : cost) {
      by_sig[sig_of[pos]].first.push_back(c.a);
      by_sig[sig_of[pos]].second.push_back(c.b);
    }
    std::map<uint64_t, std::pair<int64_t, int64_t>> medians;
    for (const auto& [sig, v] : by_sig) medians[sig] = {Median(v.first), Median(v.second)};
    for (auto& [pos, c] : cost) {
      std::tie(c.median_a, c.median_b) = medians[sig_of[pos]];
      const bool b_slow = c.b > c.a;
      const int64_t slow = b_slow ? c.b : c.a;
      const int64_t base = std::max(b_slow ? c.a : c.b, b_slow ? c.median_a : c.median_b);
      if (static_cast<double>(slow) >= o_.timing_ratio * static_cast<double>(base) &&
          slow - base >= o_.timing_floor_ns)
        (*out)[pos] = std::move(per_pos[pos]);
    }
    return cost;
  }

  // Where inputs first differ between the runs (information: data is compared where they agree).
  void InputNote(const CommPair& p, DiffReport* r) const {
    for (const auto& [pos, evs] : data_events_)
      for (const DiffEvent& e : evs)
        if (e.data.inputs == Agreement::kDiffer) {
          r->notes.push_back(
              CommLabel(a_.comms()[p.a]) + ": inputs first differ between the runs at " +
              (e.a.empty() ? "" : SlotsText(a_, e.a, false)) + " on rank " +
              std::to_string(e.rank) + "; outputs are compared only where a rank's inputs agree");
          return;
        }
  }

  Divergence MakeDivergence(const CommPair& p, const EventGroup& g,
                            const std::vector<Track>& tracks) const {
    Divergence d;
    d.kind = g.kind;
    d.comm_a = p.a;
    d.comm_b = p.b;
    d.p2p = g.p2p;
    d.more = g.more;
    const DiffEvent& first = g.events.front();
    d.seq_a = first.a_pos;
    d.seq_b = first.b_pos;
    for (const DiffEvent& e : g.events) {
      d.seq_a = std::min(*d.seq_a, e.a_pos);
      d.seq_b = std::min(*d.seq_b, e.b_pos);
      if (d.ranks.empty() || d.ranks.back() != e.rank) d.ranks.push_back(e.rank);
      for (const DiffSlot& s : e.a) d.calls_a.push_back(s.call);
      for (const DiffSlot& s : e.b) d.calls_b.push_back(s.call);
    }
    DescribeDivergence(g, {&a_, p.a}, {&b_, p.b}, &d);
    if (d.table.size() > kMaxRows) {
      d.message += " The table shows " + std::to_string(kMaxRows) + " of the " +
                   std::to_string(d.table.size()) + " ranks.";
      d.table.resize(kMaxRows);
    }
    AddContextRows(g, tracks, &d);
    return d;
  }

  // Rows of the ranks without an event here: what each run issued at that position.
  void AddContextRows(const EventGroup& g, const std::vector<Track>& tracks, Divergence* d) const {
    const uint64_t pos = *d->seq_a;
    for (const Track& t : tracks) {
      if (d->table.size() >= kMaxRows) break;
      if (std::find(d->ranks.begin(), d->ranks.end(), t.rank) != d->ranks.end()) continue;
      auto it = std::lower_bound(t.a.begin(), t.a.end(), pos,
                                 [](const DiffSlot& s, uint64_t v) { return s.pos < v; });
      DiffRow row;
      row.rank = t.rank;
      if (it != t.a.end() && it->pos == pos) {
        const size_t i = static_cast<size_t>(it - t.a.begin());
        row.a = SlotsText(a_, {*it}, g.p2p);
        if (t.b_of_a[i] >= 0) row.b = SlotsText(b_, {t.b[static_cast<size_t>(t.b_of_a[i])]}, g.p2p);
      }
      d->table.push_back(std::move(row));
    }
    std::sort(d->table.begin(), d->table.end(),
              [](const DiffRow& x, const DiffRow& y) { return x.rank < y.rank; });
  }

  const TraceModel& a_;
  const TraceModel& b_;
  const DiffOptions& o_;
  GpuTimeIndex gpu_a_, gpu_b_;
  bool data_ = false, timing_ = false, sites_ = false;
  ByPosition data_events_;  // one communicator's data differences, by A position
  std::vector<Finding> suspected_a_, suspected_b_;
};

}  // namespace

DiffReport DiffTraces(const TraceModel& a, const TraceModel& b, const DiffOptions& options) {
  return Differ(a, b, options).Run();
}

}  // namespace ncclrr::analysis
