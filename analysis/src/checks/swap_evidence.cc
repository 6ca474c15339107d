#include "checks/swap_evidence.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "model/call_sketches.h"
#include "ncclrr/sketch/race.h"

namespace ncclrr::analysis {

const SketchData* SendSketch(const TraceModel& m, const RankView& r, uint64_t seq) {
  const CollectiveSlot* slot = r.AtSeq(seq);
  if (!slot) return nullptr;
  const CallSketches s = SketchesOf(m, slot->call, slot->launch);
  const SketchData* best = nullptr;
  for (const SketchData* d : s.send)
    if (!best || d->first < best->first) best = d;
  return best;
}

std::string Cos(double c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.2f", c);
  return buf;
}

namespace {

struct Position {
  sketch::SwapEvidence ev;
  int rank = -1, peer = -1;
  uint64_t seq = 0, other_seq = 0;
};

// The seq nearest to `seq` (within kNearSlots slots of the reference rank's calls) at which the
// reference issued tensor `t` with the shape `shape`, if it did. A moved tensor of a reordering
// lies inside the event's window; a buffer seen at one position only (a mismatch) is looked for
// around it, where the step that issued it most likely is.
std::optional<uint64_t> NearestSeqOf(const SequenceContext& sc, uint32_t t, uint64_t shape,
                                     uint64_t seq) {
  constexpr int64_t kNearSlots = 1024;
  const CommIdentity& ci = sc.ctx.identity().comm(sc.ci);
  const RankView& ref = sc.ctx.model().comms()[sc.ci].ranks[sc.ref];
  const auto& cols = ref.collectives;
  const int64_t mid =
      std::lower_bound(cols.begin(), cols.end(), seq,
                       [](const CollectiveSlot& c, uint64_t s) { return c.seq < s; }) -
      cols.begin();
  auto holds = [&](int64_t k) {
    return k >= 0 && k < int64_t(cols.size()) && cols[k].seq != seq && ci.ids[sc.ref][k] == t &&
           ci.shapes[sc.ref][k] == shape;
  };
  for (int64_t d = 0; d <= kNearSlots; ++d) {
    if (holds(mid - d)) return cols[mid - d].seq;
    if (d > 0 && holds(mid + d)) return cols[mid + d].seq;
  }
  return std::nullopt;
}

std::string Sentence(const Position& p) {
  const bool swapped = p.ev.other.cosine >= p.ev.same.cosine;
  const uint64_t like = swapped ? p.other_seq : p.seq, unlike = swapped ? p.seq : p.other_seq;
  const double c_like = swapped ? p.ev.other.cosine : p.ev.same.cosine;
  const double c_unlike = swapped ? p.ev.same.cosine : p.ev.other.cosine;
  return "rank " + std::to_string(p.rank) + "'s seq " + std::to_string(p.seq) +
         " looks like rank " + std::to_string(p.peer) + "'s seq " + std::to_string(like) + " (" +
         Cos(c_like) + ") rather than its seq " + std::to_string(unlike) + " (" + Cos(c_unlike) +
         ")";
}

}  // namespace

DataSwapVerdict AssessSwapFromSketches(const SequenceContext& sc, const RawEvent& e,
                                       const std::vector<int>& peers) {
  DataSwapVerdict out;
  const TraceModel& m = sc.ctx.model();
  const CommModel& c = m.comms()[sc.ci];
  const LogicalIdentity& id = sc.ctx.identity();
  if (e.ranks.empty() || e.rank_slots.empty() || !TraceHasSketches(m)) return out;
  const int me = e.ranks[0];
  const std::vector<uint32_t>& mine = e.rank_slots[0];
  // Logical tensors of the reference side, by offset into the run.
  std::vector<uint32_t> ref_ids;
  for (uint32_t s : e.ref_slots) ref_ids.push_back(id.Of(sc.ci, sc.ref, s));
  // Per moved position, what does not depend on the peer: the deviating rank's sketch and where
  // the reference side issued the same tensor (agreeing peers issued it there too).
  struct Moved {
    size_t i = 0;
    uint64_t seq = 0;
    std::optional<uint64_t> other_seq;  // none: the peer side never issued the tensor near
    const SketchData* mine = nullptr;
  };
  std::vector<Moved> moved;
  for (size_t i = 0; i < mine.size() && i < ref_ids.size(); ++i) {
    const uint32_t t = id.Of(sc.ci, me, mine[i]);
    if (t == ref_ids[i]) continue;  // not moved
    Moved mv;
    mv.i = i;
    mv.seq = e.seq + i;
    mv.mine = SendSketch(m, c.ranks[me], mv.seq);
    if (!mv.mine) continue;
    const auto j = std::find(ref_ids.begin(), ref_ids.end(), t) - ref_ids.begin();
    mv.other_seq = size_t(j) < ref_ids.size()
                       ? e.ref_seq + size_t(j)
                       : NearestSeqOf(sc, t, id.comm(sc.ci).shapes[me][mine[i]], mv.seq);
    moved.push_back(mv);
  }
  std::vector<Position> seen;
  std::vector<sketch::Similarity> same_only;  // positions whose tensor the peer never issued near
  int same_only_peer = -1;
  for (int peer : peers) {
    for (const Moved& mv : moved) {
      const SketchData* same = SendSketch(m, c.ranks[peer], e.ref_seq + mv.i);
      if (!same) continue;
      if (!mv.other_seq) {
        const sketch::Similarity s = sketch::SampleCosine(*mv.mine, *same);
        if (s.valid) {
          same_only.push_back(s);
          same_only_peer = peer;
        }
        continue;
      }
      const SketchData* other = SendSketch(m, c.ranks[peer], *mv.other_seq);
      if (!other) continue;  // the other position was not sketched: it says nothing
      Position p;
      p.rank = me;
      p.peer = peer;
      p.seq = mv.seq;
      p.other_seq = *mv.other_seq;
      p.ev = sketch::AssessSwap(*mv.mine, *same, *other);
      if (p.ev.same.valid && p.ev.other.valid) seen.push_back(p);
    }
    if (!seen.empty() || !same_only.empty()) break;  // one peer with sketches is enough
  }
  if (seen.empty() && !same_only.empty()) {
    // Nothing to compare the other way: the data can only say that the peer's call at the same
    // position holds the same tensor (clearly correlated values, as data-parallel gradients of
    // one tensor are), which rules the swap out.
    const bool alike = std::all_of(same_only.begin(), same_only.end(), [](const auto& s) {
      return s.cosine >= 0.3 && s.cosine > 3.0 / std::sqrt(double(s.n));
    });
    const sketch::Similarity& s = same_only.front();
    out.sentence = "rank " + std::to_string(me) + "'s seq " + std::to_string(e.seq) +
                   " against rank " + std::to_string(same_only_peer) + "'s: cosine " +
                   Cos(s.cosine);
    out.kind = alike ? DataSwapVerdict::kContradicted : DataSwapVerdict::kUninformative;
    return out;
  }
  if (seen.empty()) return out;
  const Position& best =
      *std::max_element(seen.begin(), seen.end(),
                        [](const Position& a, const Position& b) { return a.ev.z < b.ev.z; });
  out.confidence = best.ev.confidence;
  out.sentence = Sentence(best);
  // The mirror of AssessSwap's rule: the same position is clearly the more alike everywhere.
  const bool all_contradict = std::all_of(seen.begin(), seen.end(), [](const Position& p) {
    return p.ev.confidence <= 0.01 && p.ev.same.cosine - p.ev.other.cosine >= 0.3;
  });
  // Data alike nowhere (no cosine 3 standard errors above 0) say nothing: one tensor's values
  // are alike across ranks, and being less unlike one position than another is no likeness
  // (gradients of different batches can anti-correlate).
  const bool informative = std::any_of(seen.begin(), seen.end(), [](const Position& p) {
    const double noise = 3.0 / std::sqrt(double(std::min(p.ev.same.n, p.ev.other.n)));
    return p.ev.same.cosine > noise || p.ev.other.cosine > noise;
  });
  out.kind = best.ev.suspected ? DataSwapVerdict::kConfirmed
             : all_contradict  ? DataSwapVerdict::kContradicted
             : informative     ? DataSwapVerdict::kWeak
                               : DataSwapVerdict::kUninformative;
  return out;
}

}  // namespace ncclrr::analysis
