// suspected_swap from the sketched data alone. Gradients all-reduced as autograd produces them
// (per-parameter hooks, overlap) follow each rank's backward order; a rank that computes two
// same-shape tensors in the other order (a rank-dependent code path) all-reduces them in the
// other order at every step. Nothing in the metadata tells the calls apart: same shapes, one
// call site, and buffers allocated in the order the calls are issued, so each rank's buffer at a
// position is "the same" as its peers'. Only the values do: the send buffer's 256 samples sit at
// the same indices on every rank, and one tensor's values correlate across data-parallel ranks
// while different tensors' do not (sketch::AssessSwap). A pair of positions where each of a
// rank's calls looks like the peer's call at the other position, and not like its call at the
// same one, both ways, is a swap; the sequence checker's findings (claims) are left alone.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "checks/checkers.h"
#include "checks/swap_evidence.h"
#include "model/call_sketches.h"
#include "ncclrr/sketch/race.h"
#include "report/text_util.h"

namespace ncclrr::analysis {
namespace {

// How far apart (in positions) a call and the peer's call it is compared with may be.
constexpr int64_t kWindow = 16;
// How much better the data must match another position than the call's own, over every step
// that has the call (Stouffer's z of Fisher-transformed sample correlations), both ways of the
// pair. One step's gradients correlate only weakly across ranks (cosines of 0.1-0.6 at 256
// samples), and a tensor's gradients correlate from step to step as well, so a call is matched
// to the peer's call its data are most like, over all steps together.
constexpr double kMatchZ = 5.0;
// And at the variance the steps themselves show (steady_lean below): still beyond chance.
constexpr double kSteadyMatchZ = 3.0;

struct DataSwap {
  uint64_t seq = 0, other = 0;             // seq < other
  double cos_same = 0, cos_other = 0;      // the rank's call at seq vs the peer's at seq/other
  double cos_same_j = 0, cos_other_j = 0;  // its call at other vs the peer's at other/seq
  double z = 0;                            // the weaker side's match z over the steps
  uint64_t steps = 0;
  uint64_t place = 0, other_place = 0;  // the places of the step the two calls hold
};

// A longer reordering: the rank's calls at `seqs` hold the tensors the reference issued at
// `targets` (a permutation of them), e.g. a rotation of four same-shape gradients walked in a
// set's order.
struct DataCycle {
  std::vector<uint64_t> seqs, targets;  // from the earliest call, in the order the walk found
  std::vector<double> cos_target, cos_own;
  double z = 0;  // Stouffer's z over the cycle's calls
  uint64_t steps = 0;
};

struct DataOrders {
  std::vector<DataSwap> swaps;
  std::vector<DataCycle> cycles;
};

// The longest reordering followed call by call, and how clearly each of its calls must lean to
// its partner (a z of 3: beyond what 32 offsets' noise reaches by chance).
constexpr size_t kMaxCycle = 8;
constexpr double kCycleLeanZ = 3.0;

// One place of the loop's step (a call of a given shape among given neighbours) and how its
// calls' data on the rank compare with the peer's calls at each offset.
struct Place {
  std::map<int64_t, std::pair<double, uint64_t>> z;    // offset -> (sum of Fisher z, count)
  std::map<int64_t, std::pair<double, uint64_t>> cos;  // offset -> (sum of cosines, count)
  std::vector<uint64_t> seqs;                          // the rank's calls at this place
  // offset -> sums of (z at the offset - z at the call's own position) and of its square, and
  // over how many calls (those that have both): how much one step's difference varies from
  // step to step.
  std::map<int64_t, std::tuple<double, double, uint64_t>> diff;
};

// The shapes (numbers) that occur less than half as often as the loop's steps: with N the
// fewest occurrences among the most frequent shapes that together cover 3/4 of the calls.
std::set<uint64_t> UnsteadyShapes(const NarrowUints& shapes) {
  const size_t calls = shapes.size();
  std::map<uint64_t, uint64_t> count;
  for (size_t i = 0; i < calls; ++i) ++count[shapes[i]];
  std::vector<uint64_t> by_count;
  for (const auto& [sh, n] : count) by_count.push_back(n);
  std::sort(by_count.rbegin(), by_count.rend());
  uint64_t covered = 0, steps = 0;
  for (uint64_t n : by_count) {
    covered += n;
    steps = n;
    if (4 * covered >= 3 * calls) break;
  }
  std::set<uint64_t> out;
  for (const auto& [sh, n] : count)
    if (2 * n < steps) out.insert(sh);
  return out;
}

class DataOrderChecker : public Checker {
 public:
  std::string_view name() const override { return "issue order from the data (sketches)"; }

  void Run(CheckContext& ctx, FindingSink& sink) override {
    const TraceModel& m = ctx.model();
    if (!TraceHasSketches(m)) return;
    for (size_t ci = 0; ci < m.comms().size(); ++ci) {
      if (!ctx.Owns(ci)) continue;
      const CommModel& c = m.comms()[ci];
      const int ref = ctx.identity().comm(ci).reference_rank;
      if (c.ranks.size() < 2 || !HasSketches(m, c.ranks[ref])) continue;
      for (const RankView& r : c.ranks)
        if (r.rank != ref && HasSketches(m, r)) {
          const DataOrders found = Orders(ctx, ci, r, c.ranks[ref]);
          for (const DataSwap& s : found.swaps) Report(ctx, ci, r.rank, ref, s, sink);
          for (const DataCycle& y : found.cycles) ReportCycle(ctx, ci, r.rank, ref, y, sink);
        }
    }
  }

 private:
  static bool HasSketches(const TraceModel& m, const RankView& r) {
    return r.has_file() && !m.file(r.file).sketches.empty() && !r.collectives.empty();
  }

  // Same-shape pairs of positions where rank `r`'s data match the reference's the other way
  // round, at every step that has them.
  static DataOrders Orders(const CheckContext& ctx, size_t ci, const RankView& r,
                           const RankView& ref) {
    const TraceModel& m = ctx.model();
    const CommIdentity& id = ctx.identity().comm(ci);
    auto shape = [&](const RankView& v, int64_t seq) -> uint64_t {
      if (seq < 0) return 0;
      const CollectiveSlot* s = v.AtSeq(static_cast<uint64_t>(seq));
      return s ? id.shapes[v.rank][static_cast<size_t>(s - v.collectives.data())] : 0;
    };
    // Where a call sits in a step, as a key equal at every step of a training loop: the
    // reference's shapes of the calls from it on (a step and a bit). Tensor ids would not do:
    // real jobs allocate gradients afresh, and one tensor's ids change from step to step. The
    // first step's calls have the others' keys (the shapes before them are the job's setup);
    // the last step's run into what follows the loop, so a call whose key no other call has
    // takes the place of the calls with its shapes *before* it.
    // Shapes of calls that do not come once a step (a broadcast from a rotating root, tokens
    // gathered at each step's own length, an evaluation every few steps) would give one place
    // other keys at other steps; the keys skip them. The loop's step count is estimated as the
    // fewest occurrences among the shapes that cover most (3/4) of the reference's calls.
    const std::set<uint64_t> unsteady = UnsteadyShapes(id.shapes[ref.rank]);
    auto steady = [&](int64_t q) {
      const uint64_t sh = shape(ref, q);
      return std::make_pair(sh == 0 || !unsteady.count(sh), sh);
    };
    constexpr int64_t kContext = 8;
    constexpr int64_t kContextReach = 8 * kContext;  // how far the steady shapes are looked for
    // The call's shape and the kContext steady shapes after it (ahead) or before it.
    auto window = [&](int64_t k, bool ahead) {
      std::vector<uint64_t> seen;
      for (int64_t q = ahead ? k + 1 : k - 1;
           static_cast<int64_t>(seen.size()) < kContext && std::llabs(q - k) <= kContextReach;
           q += ahead ? 1 : -1)
        if (const auto [ok, sh] = steady(q); ok) seen.push_back(sh);
      if (!ahead) std::reverse(seen.begin(), seen.end());
      uint64_t h = 0x9e3779b97f4a7c15ull;
      auto mix = [&](uint64_t v) { h = (h ^ v) * 0x100000001b3ull; };
      if (ahead) mix(shape(ref, k));
      for (uint64_t v : seen) mix(v);
      if (!ahead) mix(shape(ref, k));
      return h;
    };
    std::map<uint64_t, int> ahead_count;
    for (const CollectiveSlot& slot : r.collectives) {
      const auto k = static_cast<int64_t>(slot.seq);
      ++ahead_count[window(k, true)];
    }
    std::map<uint64_t, uint64_t> place_behind;  // shapes before a call -> its place
    std::set<uint64_t> behind_ambiguous;
    for (const CollectiveSlot& slot : r.collectives) {
      const auto k = static_cast<int64_t>(slot.seq);
      const uint64_t ahead = window(k, true);
      if (ahead_count[ahead] < 2) continue;
      const auto [it, added] = place_behind.try_emplace(window(k, false), ahead);
      if (!added && it->second != ahead) behind_ambiguous.insert(it->first);
    }
    auto place_of = [&](int64_t k) {
      const uint64_t ahead = window(k, true);
      if (ahead_count[ahead] >= 2) return ahead;
      const uint64_t behind = window(k, false);
      const auto it = place_behind.find(behind);
      return it == place_behind.end() || behind_ambiguous.count(behind) ? ahead : it->second;
    };
    // The reference's send sketches by seq, looked up once (each is compared up to 33 times).
    std::map<uint64_t, const SketchData*> peer_sketch;
    auto peer_at = [&](int64_t j) {
      auto [it, added] = peer_sketch.try_emplace(static_cast<uint64_t>(j), nullptr);
      if (added) it->second = SendSketch(m, ref, static_cast<uint64_t>(j));
      return it->second;
    };
    std::map<uint64_t, Place> places;
    std::map<uint64_t, uint64_t> place_at;  // the rank's seq -> its place
    for (const CollectiveSlot& slot : r.collectives) {
      const auto k = static_cast<int64_t>(slot.seq);
      const uint64_t sk = shape(r, k);
      if (sk == 0 || sk != shape(ref, k) || ctx.Claimed(ci, slot.seq)) continue;
      const SketchData* mine = SendSketch(m, r, slot.seq);
      if (!mine) continue;
      const uint64_t key = place_of(k);
      Place& p = places[key];
      bool any = false;
      std::map<int64_t, double> z_at;  // this call's z at each offset
      for (int64_t d = -kWindow; d <= kWindow; ++d) {
        const int64_t j = k + d;
        if (j < 0 || shape(ref, j) != sk || ctx.Claimed(ci, static_cast<uint64_t>(j))) continue;
        const SketchData* peer = peer_at(j);
        if (!peer) continue;
        const sketch::Similarity sim = sketch::SampleCosine(*mine, *peer);
        if (!sim.valid || sim.n < 16) continue;
        const double c = std::fmax(-0.999999, std::fmin(0.999999, sim.cosine));
        auto& [zsum, zn] = p.z[d];
        const double z = std::atanh(c) * std::sqrt(sim.n - 3.0);
        zsum += z;
        ++zn;
        z_at[d] = z;
        auto& [csum, cn] = p.cos[d];
        csum += sim.cosine;
        ++cn;
        any = true;
      }
      if (!any) continue;
      if (const auto own = z_at.find(0); own != z_at.end())
        for (const auto& [d, z] : z_at) {
          auto& [sum, squares, count] = p.diff[d];
          sum += z - own->second;
          squares += (z - own->second) * (z - own->second);
          ++count;
        }
      p.seqs.push_back(slot.seq);
      place_at[slot.seq] = key;
    }
    // A pair of places (P, and Q at offset d from it) was swapped when P's data look more like
    // the peer's calls d later than like its own and Q's like the peer's d earlier: each side's
    // z (the difference of two sums of n unit-variance terms: variance 2n), and together.
    auto lean = [](const Place& p, int64_t d) -> std::optional<double> {
      auto own = p.z.find(0), to = p.z.find(d);
      if (own == p.z.end() || to == p.z.end() || own->second.second != to->second.second ||
          own->second.second < 2)
        return std::nullopt;
      return (to->second.first - own->second.first) / std::sqrt(2.0 * own->second.second);
    };
    // The same lean with the variance the steps show: the samples of one tensor are not
    // independent (a gradient's values move together), so one step's difference can vary far
    // more than 2 from step to step, and then the z above overstates the evidence (a clean
    // 100-step job gave z 6 from mean cosines of 0.06 against -0.02, its steps' variance 20).
    // Never above the lean itself.
    auto steady_lean = [&](const Place& p, int64_t d) -> double {
      const auto z = lean(p, d);
      if (!z) return 0;
      const auto dv = p.diff.find(d);
      if (dv == p.diff.end() || std::get<2>(dv->second) < 3) return *z;
      const auto& [sum, squares, count] = dv->second;
      const auto n = static_cast<double>(count);
      const double variance = std::max(2.0, (squares - sum * sum / n) / (n - 1));
      return *z * std::sqrt(2.0 / variance);
    };
    auto mean = [](const std::map<int64_t, std::pair<double, uint64_t>>& sums, int64_t d) {
      const auto& [sum, n] = sums.at(d);
      return sum / static_cast<double>(n);
    };
    std::vector<DataSwap> candidates;
    for (const auto& [key, p] : places)
      for (const auto& [d, unused] : p.z) {
        if (d <= 0) continue;  // each pair once, from its earlier call
        const auto zp = lean(p, d);
        if (!zp || *zp < 1) continue;
        for (uint64_t seq : p.seqs) {
          const uint64_t other = seq + static_cast<uint64_t>(d);
          auto there = place_at.find(other);
          // Two places of a step: one tensor's calls at consecutive steps (a single gradient
          // bucket per step) are no pair to swap, however their data compare.
          if (there == place_at.end() || there->second == key) continue;
          const Place& q = places.at(there->second);
          const auto zq = lean(q, -d);
          if (!zq || *zq < 1 || (*zp + *zq) / std::sqrt(2.0) < kMatchZ) continue;
          if ((steady_lean(p, d) + steady_lean(q, -d)) / std::sqrt(2.0) < kSteadyMatchZ) continue;
          DataSwap s;
          s.seq = seq;
          s.other = other;
          s.cos_same = mean(p.cos, 0);
          s.cos_other = mean(p.cos, d);
          s.cos_same_j = mean(q.cos, 0);
          s.cos_other_j = mean(q.cos, -d);
          s.z = (*zp + *zq) / std::sqrt(2.0);
          s.steps = p.seqs.size();
          s.place = key;
          s.other_place = there->second;
          // The data must look like each other, not only less unlike: over n steps of 256
          // samples a mean cosine has a standard error of about 1/sqrt(256 n).
          const double noise = 3.0 / std::sqrt(256.0 * static_cast<double>(s.steps));
          if (s.cos_other < noise || s.cos_other_j < noise) continue;
          candidates.push_back(s);
        }
      }
    // The nearest partner first: a tensor's data also correlate with its own next step's, so a
    // swap within a step also looks like one across steps; the pair that swapped is the nearer.
    std::sort(candidates.begin(), candidates.end(), [](const DataSwap& x, const DataSwap& y) {
      return std::make_tuple(x.other - x.seq, x.seq) < std::make_tuple(y.other - y.seq, y.seq);
    });
    DataOrders out;
    std::set<uint64_t> used;
    std::set<uint64_t> involved;  // places
    for (const DataSwap& s : candidates)
      if (!used.count(s.seq) && !used.count(s.other)) {
        used.insert(s.seq);
        used.insert(s.other);
        involved.insert(s.place);
        involved.insert(s.other_place);
        out.swaps.push_back(s);
      }
    std::sort(out.swaps.begin(), out.swaps.end(),
              [](const DataSwap& x, const DataSwap& y) { return x.seq < y.seq; });
    // Longer reorderings: each place's call looks like the peer's call at another offset (the
    // nearest one it leans to clearly: a tensor's data also look like its own at the next and
    // previous steps, often more than like the peer's in the same step); followed from call to
    // call, those close a cycle of different places (k tensors walked in another order), all
    // together by kMatchZ, as for a pair.
    std::map<uint64_t, std::pair<int64_t, double>> best;  // place -> (offset, lean z)
    for (const auto& [key, p] : places) {
      if (involved.count(key)) continue;
      const double noise = 3.0 / std::sqrt(256.0 * static_cast<double>(p.seqs.size()));
      int64_t bd = 0;
      double bz = 0;
      for (const auto& [d, unused] : p.z) {
        if (d == 0 || (bd != 0 && std::llabs(d) > std::llabs(bd))) continue;
        const auto z = lean(p, d);
        if (!z || *z < kCycleLeanZ || mean(p.cos, d) < noise) continue;
        if (bd == 0 || std::llabs(d) < std::llabs(bd) || *z > bz) {
          bz = *z;
          bd = d;
        }
      }
      if (bd != 0) best[key] = {bd, bz};
    }
    for (const auto& [start, unused_key] : place_at) {
      if (used.count(start)) continue;
      DataCycle y;
      std::set<uint64_t> keys;
      double zsum = 0, steady_sum = 0;
      uint64_t cur = start;
      bool closed = false;
      while (y.seqs.size() < kMaxCycle) {
        const auto at = place_at.find(cur);
        if (at == place_at.end() || used.count(cur)) break;
        const auto b = best.find(at->second);
        if (b == best.end() || !keys.insert(at->second).second) break;
        const int64_t next = static_cast<int64_t>(cur) + b->second.first;
        if (next < 0) break;
        const Place& p = places.at(at->second);
        y.seqs.push_back(cur);
        y.targets.push_back(static_cast<uint64_t>(next));
        y.cos_target.push_back(mean(p.cos, b->second.first));
        y.cos_own.push_back(mean(p.cos, 0));
        y.steps = std::max<uint64_t>(y.steps, p.seqs.size());
        zsum += b->second.second;
        steady_sum += steady_lean(p, b->second.first);
        if (static_cast<uint64_t>(next) == start) {
          closed = true;
          break;
        }
        cur = static_cast<uint64_t>(next);
      }
      if (!closed || y.seqs.size() < 3) continue;
      y.z = zsum / std::sqrt(static_cast<double>(y.seqs.size()));
      if (y.z < kMatchZ ||
          steady_sum / std::sqrt(static_cast<double>(y.seqs.size())) < kSteadyMatchZ)
        continue;
      for (uint64_t q : y.seqs) used.insert(q);
      involved.insert(keys.begin(), keys.end());
      out.cycles.push_back(std::move(y));
    }
    // The data tell tensors apart only where one tensor's data are alike across the ranks: a
    // place nothing found involves must show it (its calls alike the peer's at the same
    // position, by a mean cosine three standard errors above zero). Data that are alike
    // nowhere (uncorrelated gradients) tell nothing, whatever lines up by chance.
    const bool alike_somewhere = std::any_of(places.begin(), places.end(), [&](const auto& kv) {
      const auto own = kv.second.cos.find(0);
      if (involved.count(kv.first) || own == kv.second.cos.end() || own->second.second < 2)
        return false;
      const double n = static_cast<double>(own->second.second);
      return own->second.first / n >= 3.0 / std::sqrt(256.0 * n);
    });
    if (!alike_somewhere) return {};
    return out;
  }

  static void Report(CheckContext& ctx, size_t ci, int rank, int ref, const DataSwap& s,
                     FindingSink& sink) {
    const TraceModel& m = ctx.model();
    const CommModel& c = m.comms()[ci];
    const CollectiveSlot* a = c.ranks[rank].AtSeq(s.seq);
    const CollectiveSlot* b = c.ranks[rank].AtSeq(s.other);
    const CollectiveSlot* ra = c.ranks[ref].AtSeq(s.seq);
    const CollectiveSlot* rb = c.ranks[ref].AtSeq(s.other);
    const std::string call = ShortCall(m.call(a->call));
    const std::string who = "rank " + std::to_string(rank), peer = "rank " + std::to_string(ref);
    const std::string k = std::to_string(s.seq), j = std::to_string(s.other);
    Finding f = FindingOn(FindingKind::kSuspectedSwap, m, ci);
    f.seq = s.seq;
    f.ranks = {rank};
    f.first_time = m.SlotTime(*a);
    f.confidence = 0.5 * std::erfc(-s.z / std::sqrt(2.0));
    f.pattern = std::string(kDataSwapPattern) + call + "+" + std::to_string(s.other - s.seq);
    f.calls = {{ra->call, ref, s.seq},
               {rb->call, ref, s.other},
               {a->call, rank, s.seq},
               {b->call, rank, s.other}};
    f.table = {{std::to_string(ref), k + ", " + j, call + " at both", false},
               {std::to_string(rank), k + ", " + j,
                call + " at both; the data of each look like " + peer + "'s other one", true}};
    f.short_text = who + " issued two " + call + " at seq " + k + " and " + j +
                   " in the opposite order of " + peer + " (told by their data)";
    f.message =
        "The sketched data of the calls say " + who + " issued them in the opposite order of " +
        peer + ": over the " + std::to_string(s.steps) + " steps that issue them, " + who +
        "'s call at this place looks like " + peer + "'s call " + std::to_string(s.other - s.seq) +
        " positions later (mean cosine " + Cos(s.cos_other) + ") rather than its own (" +
        Cos(s.cos_same) + "), and " + who + "'s later call like " + peer + "'s earlier one (" +
        Cos(s.cos_other_j) + ", own " + Cos(s.cos_same_j) +
        "). One tensor's values correlate across data-parallel ranks; different tensors' do "
        "not. NCCL pairs the k-th collective of every rank, so each of the two sums mixed both "
        "tensors (A0+B1): no error, no hang, wrong values. Nothing else in the trace tells these "
        "calls apart (same shape, one call site, and buffers allocated in the order the calls "
        "were issued look the same on every rank). The usual cause: collectives issued as each "
        "rank produces its tensors (per-parameter gradient hooks, overlap of communication with "
        "the backward pass) where the ranks produce them in different orders (a rank-dependent "
        "code path). Issue them in one order on every rank: all-reduce in a fixed order (e.g. "
        "DDP's buckets, or by parameter after the backward pass), or make every rank take the "
        "same code path.";
    ctx.Claim(ci, s.seq);
    ctx.Claim(ci, s.other);
    ctx.NoteDataOrder(ci, rank, s.seq, s.other);
    ctx.NoteDataOrder(ci, rank, s.other, s.seq);
    sink.Add(std::move(f));
  }

  static void ReportCycle(CheckContext& ctx, size_t ci, int rank, int ref, const DataCycle& y,
                          FindingSink& sink) {
    const TraceModel& m = ctx.model();
    const CommModel& c = m.comms()[ci];
    const size_t n = y.seqs.size();
    const uint64_t first = *std::min_element(y.seqs.begin(), y.seqs.end());
    const uint64_t last = *std::max_element(y.seqs.begin(), y.seqs.end());
    const CollectiveSlot* a = c.ranks[rank].AtSeq(first);
    const std::string call = ShortCall(m.call(a->call));
    const std::string who = "rank " + std::to_string(rank), peer = "rank " + std::to_string(ref);
    Finding f = FindingOn(FindingKind::kSuspectedSwap, m, ci);
    f.seq = first;
    f.last_seq = last;
    f.ranks = {rank};
    f.first_time = m.SlotTime(*a);
    f.confidence = 0.5 * std::erfc(-y.z / std::sqrt(2.0));
    // The same reordering at every step: one pattern, offsets relative to its first call.
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t x, size_t z) { return y.seqs[x] < y.seqs[z]; });
    f.pattern = std::string(kDataSwapPattern) + call + " cycle";
    std::string ref_order, my_order, pairs;
    for (size_t i : order) {
      f.pattern +=
          " +" + std::to_string(y.seqs[i] - first) + ">+" + std::to_string(y.targets[i] - first);
      f.calls.push_back({c.ranks[ref].AtSeq(y.seqs[i])->call, ref, y.seqs[i]});
      pairs += (pairs.empty() ? "" : "; at ") + std::string("seq ") + std::to_string(y.seqs[i]) +
               (pairs.empty() ? " looks" : "") + " like " + peer + "'s at seq " +
               std::to_string(y.targets[i]) + " (mean cosine " + Cos(y.cos_target[i]) +
               ", its own position " + Cos(y.cos_own[i]) + ")";
      my_order += (my_order.empty() ? "" : " ") + std::string("T") +
                  std::to_string(y.targets[i] - first + 1);
      ref_order +=
          (ref_order.empty() ? "" : " ") + std::string("T") + std::to_string(y.seqs[i] - first + 1);
    }
    for (size_t i : order)
      f.calls.push_back({c.ranks[rank].AtSeq(y.seqs[i])->call, rank, y.seqs[i]});
    const std::string range = std::to_string(first) + "-" + std::to_string(last);
    f.table = {
        {std::to_string(ref), range, std::to_string(n) + " x " + call + ": " + ref_order, false},
        {std::to_string(rank), range,
         std::to_string(n) + " x " + call + ": " + my_order + "  (told by their data)", true}};
    f.short_text = who + " issued " + std::to_string(n) + " " + call + " at seq " + range +
                   " in another order than " + peer + " (told by their data)";
    f.message =
        "The sketched data of the calls say " + who + " issued the same " + std::to_string(n) +
        " tensors as " + peer + " at seq " + range + ", in another order: over the " +
        std::to_string(y.steps) + " steps that issue them, " + who + "'s call at " + pairs +
        ". One tensor's values correlate across data-parallel ranks; different tensors' do "
        "not. NCCL pairs the k-th collective of every rank, so every one of these sums mixed "
        "two tensors: no error, no hang, wrong values. Nothing else in the trace tells these "
        "calls apart (same shape, one call site, buffers allocated in the order the calls were "
        "issued). The usual cause: tensors walked in an order each process decides for itself "
        "(a Python set, or a dict built from one, whose order follows each process's hash "
        "seed; tensors reduced as each rank produces them). Issue them in one order on every "
        "rank: sort them (by name) before reducing.";
    for (size_t i = 0; i < n; ++i) {
      ctx.Claim(ci, y.seqs[i]);
      ctx.NoteDataOrder(ci, rank, y.seqs[i], y.targets[i]);
    }
    sink.Add(std::move(f));
  }
};

}  // namespace

std::shared_ptr<Checker> MakeDataOrderChecker() { return std::make_shared<DataOrderChecker>(); }

}  // namespace ncclrr::analysis
