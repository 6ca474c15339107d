#include "findings/sequence_findings.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "checks/checkers.h"
#include "checks/swap_evidence.h"
#include "model/signature.h"
#include "ncclrr/analysis/collective_shape.h"
#include "report/text_util.h"

namespace ncclrr::analysis {
namespace {

// Everything one finding needs about its two sides.
class EventView {
 public:
  EventView(const SequenceContext& sc, const RawEvent& e)
      : sc_(sc), e_(e), m_(sc.ctx.model()), c_(m_.comms()[sc.ci]) {}

  CallRecord Call(int rank, uint32_t slot) const {
    return m_.call(c_.ranks[rank].collectives[slot].call);
  }
  CallRecord Mine(size_t k) const { return Call(e_.ranks[0], e_.rank_slots[0][k]); }
  CallRecord Ref(size_t k) const { return Call(sc_.ref, e_.ref_slots[k]); }
  uint32_t Tensor(int rank, uint32_t slot) const {
    return sc_.ctx.identity().Of(sc_.ci, rank, slot);
  }

  std::string Describe(int rank, uint32_t slot, bool tags) const {
    std::string s = ShortCall(Call(rank, slot));
    const uint32_t t = Tensor(rank, slot);
    if (tags && t != kNoLogicalId) s += " [tensor #" + std::to_string(t + 1) + "]";
    return s;
  }
  std::string Side(int rank, const std::vector<uint32_t>& slots, bool tags) const {
    // Long runs are abbreviated: the first calls tell the story, the table gives the range.
    constexpr size_t kShown = 4;
    std::string s;
    for (size_t k = 0; k < slots.size() && k < kShown; ++k)
      s += (k ? " then " : "") + Describe(rank, slots[k], tags);
    if (slots.size() > kShown) s += " then " + std::to_string(slots.size() - kShown) + " more";
    return s;
  }

  // Ranks other than the deviating ones that issued what the reference issued at ref_seq.
  std::vector<int> Agreeing() const {
    std::vector<int> out;
    const RankView& ref = c_.ranks[sc_.ref];
    const CollectiveSlot* at = ref.AtSeq(e_.ref_seq);
    if (!at) return {sc_.ref};
    const uint64_t want = sc_.Sig(sc_.ref, static_cast<size_t>(at - ref.collectives.data()));
    for (const RankView& r : c_.ranks) {
      if (!r.has_file() || std::count(e_.ranks.begin(), e_.ranks.end(), r.rank)) continue;
      if (r.rank == sc_.ref) {
        out.push_back(r.rank);
        continue;
      }
      const CollectiveSlot* s = r.AtSeq(e_.ref_seq);
      if (s && sc_.Sig(r.rank, static_cast<size_t>(s - r.collectives.data())) == want)
        out.push_back(r.rank);
    }
    return out;
  }

  // Do recorded call sites tell the two sides apart (some position where they differ)?
  bool SitesTellApart() const {
    const auto& mine = e_.rank_slots[0];
    bool differ = false;
    for (size_t k = 0; k < mine.size() && k < e_.ref_slots.size(); ++k) {
      const CallRecord& a = Mine(k);
      const CallRecord& b = Ref(k);
      if (a.callsite == 0 || b.callsite == 0) return false;
      differ |= Site(e_.ranks[0], mine[k]) != Site(sc_.ref, e_.ref_slots[k]);
    }
    return differ;
  }
  // Where the first deviating call's call site and the reference's part (their callers).
  std::pair<std::string, std::string> PartingCallers() const {
    return PartingFrames(Site(e_.ranks[0], e_.rank_slots[0][0]), Site(sc_.ref, e_.ref_slots[0]));
  }
  // Do the first deviating call and the reference's share their innermost frame (statement)?
  bool SameStatement() const {
    const std::string a = Site(e_.ranks[0], e_.rank_slots[0][0]),
                      b = Site(sc_.ref, e_.ref_slots[0]);
    return a.substr(0, a.find('<')) == b.substr(0, b.find('<'));
  }
  // Did call sites, not buffers, tell the deviating calls from the reference's?
  bool BySites() const {
    for (size_t i = 0; i < e_.ranks.size(); ++i)
      for (uint32_t s : e_.rank_slots[i])
        if (sc_.ctx.identity().Evidence(sc_.ci, e_.ranks[i], s) != IdentityEvidence::kCallSite)
          return false;
    return !e_.ranks.empty();
  }
  // Did crossed buffers (rather than votes over the steps) decide the deviating calls' identity?
  bool Crossed() const {
    for (size_t i = 0; i < e_.ranks.size(); ++i)
      for (uint32_t s : e_.rank_slots[i])
        if (sc_.ctx.identity().Evidence(sc_.ci, e_.ranks[i], s) == IdentityEvidence::kCrossed)
          return true;
    return false;
  }
  // Is the first deviating call the first on its rank's communicator to use its buffer (the
  // identity's key: the same address, count, type and operation)? Beyond kFirstUseScan earlier
  // calls it does not say so.
  bool FirstUseOfItsBuffer() const {
    constexpr size_t kFirstUseScan = 1 << 16;
    const int r = e_.ranks[0];
    const uint32_t slot = e_.rank_slots[0][0];
    if (slot > kFirstUseScan) return false;
    const TraceModel& m = sc_.ctx.model();
    const RankView& rv = c_.ranks[r];
    const CallRecord mine = m.call(rv.collectives[slot].call);
    for (uint32_t k = 0; k < slot; ++k) {
      const CallRecord c = m.call(rv.collectives[k].call);
      const uint64_t a = c.sendbuff ? c.sendbuff : c.recvbuff;
      const uint64_t b = mine.sendbuff ? mine.sendbuff : mine.recvbuff;
      if (a == b && c.count == mine.count && c.dtype == mine.dtype && c.api == mine.api)
        return false;
    }
    return true;
  }
  // The share of calls at which the first deviating rank used the reference's buffers.
  std::pair<float, uint32_t> BufferAgreement() const {
    const CommIdentity& id = sc_.ctx.identity().comm(sc_.ci);
    const int r = e_.ranks[0];
    if (r < 0 || static_cast<size_t>(r) >= id.buffer_agreement.size()) return {0.0f, 0};
    return {id.buffer_agreement[r], id.aligned_calls[r]};
  }

  // Buffers that cannot name a tensor here: a buffer the reference used only once (an
  // allocator's one-off choice), or one it used for most of its calls (a staging buffer that
  // every collective passes through, as XLA's are). Then a differing buffer tells nothing.
  bool BuffersCannotTell() const {
    const CommIdentity& id = sc_.ctx.identity().comm(sc_.ci);
    const auto& ref_ids = id.ids[sc_.ref];
    if (ref_ids.empty()) return true;
    auto count = [&](uint32_t t) {
      size_t n = 0;
      for (size_t k = 0; k < ref_ids.size(); ++k) n += ref_ids[k] == t;
      return n;
    };
    for (uint32_t s : e_.ref_slots)
      if (count(ref_ids[s]) < 2 || count(ref_ids[s]) * 2 > ref_ids.size()) return true;
    for (uint32_t s : e_.rank_slots[0])
      if (count(Tensor(e_.ranks[0], s)) * 2 > ref_ids.size()) return true;
    return false;
  }

  // The least identity confidence of the deviating ranks' calls.
  float Confidence() const { return LeastOverSlots(&LogicalIdentity::Confidence); }
  // The same over ConfidenceLowerBound: what the confidence is worth given how often the
  // buffers were seen.
  float ConfidenceLowerBound() const {
    return LeastOverSlots(&LogicalIdentity::ConfidenceLowerBound);
  }

  int64_t FirstTime() const {
    int64_t t = INT64_MAX;
    for (size_t i = 0; i < e_.ranks.size(); ++i)
      for (uint32_t s : e_.rank_slots[i])
        t = std::min(t, m_.SlotTime(c_.ranks[e_.ranks[i]].collectives[s]));
    for (uint32_t s : e_.ref_slots) t = std::min(t, m_.SlotTime(c_.ranks[sc_.ref].collectives[s]));
    return t == INT64_MAX ? 0 : t;
  }

  std::vector<InvolvedCall> Calls() const {
    std::vector<InvolvedCall> out;
    auto add = [&](int rank, uint32_t slot) {
      const CollectiveSlot& s = c_.ranks[rank].collectives[slot];
      out.push_back({s.call, rank, s.seq});
    };
    for (uint32_t s : e_.ref_slots) add(sc_.ref, s);
    for (size_t i = 0; i < e_.ranks.size(); ++i)
      for (uint32_t s : e_.rank_slots[i]) add(e_.ranks[i], s);
    return out;
  }

  const CommModel& comm() const { return c_; }

 private:
  float LeastOverSlots(float (LogicalIdentity::*of)(size_t, int, size_t) const) const {
    float least = 1.0f;
    for (size_t i = 0; i < e_.ranks.size(); ++i)
      for (uint32_t s : e_.rank_slots[i])
        least = std::min(least, (sc_.ctx.identity().*of)(sc_.ci, e_.ranks[i], s));
    return least;
  }

  std::string Site(int rank, uint32_t slot) const {
    const CallRef ref = c_.ranks[rank].collectives[slot].call;
    return m_.file(ref.file).String(m_.call(ref).callsite);
  }

  const SequenceContext& sc_;
  const RawEvent& e_;
  const TraceModel& m_;
  const CommModel& c_;
};

FindingKind MismatchKind(const CallRecord& a, const CallRecord& b) {
  if (CanonicalApi(static_cast<Api>(a.api)) != CanonicalApi(static_cast<Api>(b.api)))
    return FindingKind::kOpMismatch;
  if (a.dtype != b.dtype) return FindingKind::kDtypeMismatch;
  if (a.count != b.count) return FindingKind::kCountMismatch;
  if (PairingOp(a) != PairingOp(b)) return FindingKind::kRedopMismatch;
  if (IsRooted(static_cast<Api>(a.api)) && a.root_peer != b.root_peer)
    return FindingKind::kRootMismatch;
  return FindingKind::kSuspectedSwap;  // same shape: only the logical identity differs
}

std::string ApiStr(const CallRecord& c) { return std::string(ApiName(static_cast<Api>(c.api))); }

// For a parting whose stopping side issued its every-few-steps block a step early and whose
// trace ends there: it may as well have skipped a step of the loop (the trace cannot tell).
std::string SkipAlternative(const RawEvent& e, const std::string& off, const std::string& on) {
  if (e.op.usual == 0) return "";
  const uint64_t base = e.seq - e.op.pos;
  return " Or " + off + " skipped a step of the loop: " + off + " issued the calls at seq " +
         std::to_string(base + e.op.at) + " after " + Plural(e.op.issued, "step", "steps") +
         " where every earlier stretch between them held " + std::to_string(e.op.usual) + " and " +
         on + " issued another step; a step skipped somewhere in seq " +
         std::to_string(base + e.op.skip_pos) + "-" + std::to_string(base + e.op.at - 1) +
         " pairs each later step with the other ranks' step before it (the sums silently mix "
         "steps) until here. A guard that skips a step on some ranks only (such as `if not "
         "torch.isfinite(loss): continue`) does this: decide to skip on every rank together.";
}

bool IsFloating(int32_t dtype) {
  const std::string_view n = DtypeName(dtype);
  return n.find("float") != std::string_view::npos || n.rfind("fp8", 0) == 0;
}

// The `n` calls a rank skipped were issued by autograd's hooks: gradient reductions (AllReduce,
// ReduceScatter) without a Python call site, where the rank's next call has one (so the trace
// records sites, and the hooks' calls are the ones without).
bool SkippedGradientHooks(const EventView& v, const RawEvent& e, size_t n) {
  if (e.rank_slots.empty() || e.rank_slots[0].empty() || v.Mine(0).callsite == 0) return false;
  for (size_t k = 0; k < n && k < e.ref_slots.size(); ++k) {
    const CallRecord r = v.Ref(k);
    const Api api = CanonicalApi(static_cast<Api>(r.api));
    if (r.callsite != 0 || (api != Api::kAllReduce && api != Api::kReduceScatter)) return false;
  }
  return n > 0;
}

// A rank's call at `seq` and its call site ("" without one), for comparing calls by what
// issued them.
struct IssuedCall {
  uint64_t shape = 0;
  std::string site;
  std::string text;  // ShortCall
  uint16_t api = 0;
  uint64_t count = 0;
};
std::optional<IssuedCall> IssuedAt(const TraceModel& m, const RankView& rv, uint64_t seq) {
  const CollectiveSlot* s = rv.AtSeq(seq);
  if (!s) return std::nullopt;
  const CallRecord c = m.call(s->call);
  IssuedCall out{ShapeSignature(c), "", ShortCall(c), c.api, c.count};
  if (c.callsite != 0) {
    out.site = m.file(s->call.file).String(c.callsite);
    out.site = out.site.substr(0, out.site.find('<'));
  }
  return out;
}
bool SameIssue(const std::optional<IssuedCall>& a, const std::optional<IssuedCall>& b) {
  return a && b && a->shape == b->shape && a->site == b->site;
}

// " It is the loop's call again: ..." when, at the mismatch at `seq`, rank `longer` issued the
// call it (and rank `shorter`) had issued just before, once more, where `shorter` went on with
// another call: a loop that ran more times on one rank (a per-batch collective over shards of
// different lengths). "" otherwise.
std::string LoopRanLonger(const TraceModel& m, const CommModel& c, uint64_t seq, int longer,
                          int shorter, const std::string& lw, const std::string& sw) {
  if (seq == 0) return "";
  const RankView &l = c.ranks[longer], &sh = c.ranks[shorter];
  const auto again = IssuedAt(m, l, seq), before = IssuedAt(m, l, seq - 1);
  const auto other_before = IssuedAt(m, sh, seq - 1), other_now = IssuedAt(m, sh, seq);
  if (!SameIssue(again, before) || !SameIssue(before, other_before) ||
      SameIssue(other_now, other_before))
    return "";
  uint64_t first = seq - 1;  // the loop's first call both ranks issued
  // A per-batch loop runs a bounded number of times; a run longer than this is the whole
  // job's repetition (one bucket per step), which the parting of the steps tells better.
  constexpr uint64_t kLongestLoop = 1000;
  while (first > 0 && seq - first <= kLongestLoop &&
         SameIssue(IssuedAt(m, sh, first - 1), before) &&
         SameIssue(IssuedAt(m, l, first - 1), before))
    --first;
  uint64_t last = seq;  // the longer rank's last call of the loop
  while (last - seq <= kLongestLoop && SameIssue(IssuedAt(m, l, last + 1), before)) ++last;
  const uint64_t both = seq - first, extra = last - seq + 1;
  if (both < 2 || both > kLongestLoop || extra > kLongestLoop) return "";  // no loop, or no end
  if (!other_now) return "";
  // The same operation and size with another reduction, type or root: one call's parameter.
  if (other_now->api == before->api && other_now->count == before->count) return "";
  // A loop that ran once more shifts every later call: ranks that agree again right after
  // differ at this one position only.
  if (SameIssue(IssuedAt(m, l, seq + 1), IssuedAt(m, sh, seq + 1))) return "";
  const std::string where = before->site.empty() ? "" : " (at " + before->site + ")";
  return " It is the loop's call again: " + lw + " issued " + before->text + where + " " +
         std::to_string(both + extra) + " times in a row (seq " + std::to_string(first) + "-" +
         std::to_string(last) + "), " + sw + " " + std::to_string(both) +
         (both == 1 ? " time" : " times") + " (seq " + SeqRange(first, both) + ") before " +
         (sw.rfind("ranks", 0) == 0 ? "they" : "it") + " went on with " + other_now->text +
         ". The loop that issues it ran " +
         (extra == 1 ? "once" : std::to_string(extra) + " times") + " more on " + lw + " than on " +
         sw +
         ". A loop over each rank's share of the data runs a different number of times "
         "when the shares differ in length (uneven inputs: a data set that does not divide "
         "evenly among the ranks, shards sliced by hand): give every rank the same number of "
         "batches (DistributedSampler pads the shards to one length, drop_last=True drops the "
         "rest) or reduce once after the loop rather than per batch. So does a loop whose count "
         "each rank decides alone (micro-batches, rounds or chunks counted from its own data): "
         "agree on the count first (all-reduce it with MAX) and run that many on every rank. "
         "The sizes passed are not the fault.";
}

// Whether the call rank `rv` issued at `seq` comes from a call site (or, without sites, has a
// shape) that none of its earlier calls on the communicator had: code that ran there for the
// first time.
// Scans at most kFirstSiteScan earlier calls (a few ms): beyond them it does not claim.
bool FirstFromItsSite(const TraceModel& m, const RankView& rv, uint64_t seq) {
  constexpr size_t kFirstSiteScan = 1 << 20;
  const auto now = IssuedAt(m, rv, seq);
  if (!now || rv.collectives.empty() || rv.file < 0) return false;
  const auto at = std::lower_bound(rv.collectives.begin(), rv.collectives.end(), seq,
                                   [](const CollectiveSlot& s, uint64_t v) { return s.seq < v; });
  const auto earlier = static_cast<size_t>(at - rv.collectives.begin());
  if (earlier > kFirstSiteScan) return false;
  const TraceFile& file = m.file(static_cast<uint32_t>(rv.file));
  std::unordered_map<uint32_t, bool> same_site;  // interned site id -> its line is now's
  for (size_t k = 0; k < earlier; ++k) {
    const CallRecord c = m.call(rv.collectives[k].call);
    if (now->site.empty()) {
      if (ShapeSignature(c) == now->shape) return false;
      continue;
    }
    if (c.callsite == 0) continue;
    auto [it, added] = same_site.try_emplace(c.callsite, false);
    if (added) {
      const std::string site = file.String(c.callsite);
      it->second = site.substr(0, site.find('<')) == now->site;
    }
    if (it->second) return false;
  }
  return true;
}

// Every rank that issued the collective at `seq` named itself its root.
bool EveryRankItsOwnRoot(const TraceModel& m, const CommModel& c, uint64_t seq) {
  int named = 0;
  for (const RankView& rv : c.ranks) {
    const CollectiveSlot* s = rv.AtSeq(seq);
    if (!s) continue;
    if (m.call(s->call).root_peer != rv.rank) return false;
    ++named;
  }
  return named >= 2;
}

// What goes wrong when NCCL pairs `a` with `b`.
std::string PairingConsequence(const CallRecord& a, const CallRecord& b) {
  switch (MismatchKind(a, b)) {
    case FindingKind::kOpMismatch:
      return "two different collectives, which hangs or produces garbage";
    case FindingKind::kDtypeMismatch:
      return "calls of different datatypes: each rank reads the other's bytes as its own type";
    case FindingKind::kCountMismatch:
      return "calls of different sizes, which hangs or reads and writes past the smaller buffer";
    case FindingKind::kRedopMismatch:
      return "calls with different reduction ops, so no rank gets the result it asked for";
    case FindingKind::kRootMismatch:
      return "calls with different roots, which hangs or moves data from the wrong rank";
    default:
      return "two different tensors of the same shape: no error and no hang, just silently "
             "wrong values (A0+B1 instead of A0+A1)";
  }
}

std::string PerPositionMessage(FindingKind kind, uint64_t seq, const CallRecord& mine,
                               const CallRecord& ref, const std::string& who,
                               const std::string& others, bool others_plural, int nranks) {
  const std::string s = others_plural ? "" : "s";  // verb agreement for `others`
  std::string m;
  switch (kind) {
    case FindingKind::kOpMismatch:
      m = "The ranks took different code paths: make every rank issue the same collective at "
          "this point.";
      break;
    case FindingKind::kDtypeMismatch:
      m = "The element sizes (" + std::to_string(DtypeSize(mine.dtype)) + " vs " +
          std::to_string(DtypeSize(ref.dtype)) +
          " bytes) also make the transfer sizes disagree. Use the same datatype on every rank.";
      break;
    case FindingKind::kCountMismatch: {
      const CollectiveShape a = ShapeOf(mine, nranks), b = ShapeOf(ref, nranks);
      m = "For " + ApiStr(ref) + ", " + CountRelationship(static_cast<Api>(ref.api)) + ": " + who +
          " sends " + Thousands(a.send_elems) + " and receives " + Thousands(a.recv_elems) +
          " elements where " + others + " send" + s + " " + Thousands(b.send_elems) +
          " and receive" + s + " " + Thousands(b.recv_elems) +
          ". NCCL does not compare counts across ranks. Pass the same count on every rank.";
      const Api api = CanonicalApi(static_cast<Api>(ref.api));
      if (api == Api::kAllGather || api == Api::kReduceScatter)
        m += " Per-rank data of different lengths (a last batch or a shard smaller on some "
             "ranks) does this: pad every rank's tensor to one length, or gather the lengths "
             "first (all_gather_object handles uneven sizes).";
      break;
    }
    case FindingKind::kRedopMismatch:
      m = "Use the same reduction op on every rank (for PreMulSum, the same scalar).";
      break;
    case FindingKind::kRootMismatch:
      m = "The ranks disagree on which rank is the root: pass the same root everywhere.";
      break;
    default:
      break;
  }
  return "At seq " + std::to_string(seq) + " NCCL paired " + ShortCall(mine) + " on " + who +
         " with " + ShortCall(ref) + " on " + others + ": " + PairingConsequence(mine, ref) + ". " +
         m;
}

// What the buffer evidence for a same-shape suspicion is.
struct BufferEvidence {
  float confidence = 0;  // identity confidence of the deviating calls
  bool crossed = false;  // crossed buffers decided it (else votes over the steps)
  float agreement = 0;   // crossed: the share of calls with the reference's buffer
  uint32_t calls = 0;    // ... out of this many
};

// Why a same-shape reordering is only suspected, and what the sketched data say about it.
std::string SuspicionText(const BufferEvidence& ev, const std::string& who,
                          const DataSwapVerdict& data) {
  const std::string pct = fmt::format("{:.0f}%", 100.0 * ev.confidence);
  std::string buffers =
      "The calls are told apart only by their buffers (logical "
      "identity): " +
      who + "'s buffers hold these positions in " + pct + " of the steps. ";
  if (ev.crossed) {
    const std::string agree = fmt::format("{:.1f}%", 100.0 * ev.agreement);
    buffers = "The calls are told apart by their buffers: elsewhere " + who +
              " used the same buffer as the others at the same position (" + agree + " of " +
              Thousands(ev.calls) +
              " calls, as ranks of one program allocate alike), but here the buffers crossed: "
              "each call used the buffer the others used at the other position. ";
  }
  switch (data.kind) {
    case DataSwapVerdict::kConfirmed:
      return buffers + "The sketched data confirm it: " + data.sentence +
             " (cosines of the sampled values). ";
    case DataSwapVerdict::kUninformative:
      return buffers +
             "The sketched data cannot tell: the ranks' sampled values are not clearly alike (" +
             data.sentence +
             "), as data-parallel gradients of one tensor would be; replay with "
             "`ncclrr replay --order canonical` to be sure. ";
    case DataSwapVerdict::kWeak:
      if (data.confidence >= 0.99)  // significant, but different tensors correlate too
        return buffers + "The sketched data lean toward it (" + data.sentence +
               "), but this program's tensors also correlate with each other, so it is no "
               "proof; replay with `ncclrr replay --order canonical` to be sure. ";
      return buffers + "The sketched data neither confirm nor rule it out (" + data.sentence +
             "), which lowers the confidence; replay with `ncclrr replay --order canonical` "
             "to be sure. ";
    default:
      return buffers +
             "Without data this is a suspicion: record with `ncclrr record --sketch` to have the "
             "sampled values compared across positions, or replay with `ncclrr replay --order "
             "canonical`. ";
  }
}

// A same-shape suspicion (only the buffers tell the calls apart) weighed with the sketched data,
// when recorded: false when the data rule it out or its confidence stays below the floor;
// otherwise `conf` is the finding's confidence.
bool WeighSuspicion(const SequenceContext& sc, const RawEvent& e, const std::vector<int>& agreeing,
                    double meta_confidence, DataSwapVerdict* data, double* conf) {
  std::vector<int> peers = {sc.ref};
  for (int r : agreeing)
    if (r != sc.ref) peers.push_back(r);
  *data = AssessSwapFromSketches(sc, e, peers);
  *conf = meta_confidence;
  switch (data->kind) {
    case DataSwapVerdict::kConfirmed:
      *conf = data->confidence;
      return true;
    case DataSwapVerdict::kContradicted:
      return false;
    case DataSwapVerdict::kWeak:
      *conf = std::min(*conf, data->confidence);
      break;
    default:
      break;
  }
  return *conf >= sc.ctx.options().swap_confidence_floor;
}

}  // namespace

std::string EventPattern(const SequenceContext& sc, int rank, const RawEvent& e) {
  const TraceModel& m = sc.ctx.model();
  const CommModel& c = m.comms()[sc.ci];
  std::string p = std::to_string(static_cast<int>(e.op.type)) + ":";
  // Tensors are named by their place on the reference side ("r0" = the reference's first call
  // here), not by id: a loop that allocates its tensors afresh each step repeats the same swap
  // with new ids every time, and that is one pattern with repeats.
  std::vector<uint32_t> ref_ids;
  for (uint32_t s : e.ref_slots) ref_ids.push_back(sc.ctx.identity().Of(sc.ci, sc.ref, s));
  auto side = [&](int r, const std::vector<uint32_t>& slots) {
    for (uint32_t s : slots) {
      const uint32_t id = sc.ctx.identity().Of(sc.ci, r, s);
      const auto at = std::find(ref_ids.begin(), ref_ids.end(), id);
      p += ShortCall(m.call(c.ranks[r].collectives[s].call)) + "#" +
           (at == ref_ids.end() ? std::string("x") : "r" + std::to_string(at - ref_ids.begin())) +
           ";";
    }
  };
  side(rank, e.slots);
  p += "|";
  side(sc.ref, e.ref_slots);
  return p;
}

// The seq where `rank` last issued, before the calls at `slots` (consecutive), the same calls in
// the same order: a stretch (two calls or more: a single call has an earlier twin in almost any
// loop) that repeats the rank's own loop. The same call: the same shape, and the same statement
// (the innermost frame of the call site; an evaluation's forward reaches the training forward's
// line by another path) or, without sites, the same tensor told by buffers that name it (an
// allocator handing a fresh tensor a freed one's address proves nothing). Looks back at most
// kRepeatScan calls.
std::optional<uint64_t> EarlierRepeat(const SequenceContext& sc, int rank,
                                      const std::vector<uint32_t>& slots) {
  constexpr size_t kRepeatScan = 4096;
  if (slots.size() < 2) return std::nullopt;
  const TraceModel& m = sc.ctx.model();
  const RankView& rv = m.comms()[sc.ci].ranks[rank];
  const CommIdentity& id = sc.ctx.identity().comm(sc.ci);
  const size_t first = slots[0], n = slots.size();
  for (size_t i = 1; i < n; ++i)
    if (slots[i] != first + i) return std::nullopt;
  auto statement = [&](size_t k) {
    const CallRecord r = m.call(rv.collectives[k].call);
    if (r.callsite == 0) return std::string();
    const std::string site = m.file(rv.collectives[k].call.file).String(r.callsite);
    return site.substr(0, site.find('<'));
  };
  std::vector<std::string> mine(n);
  for (size_t i = 0; i < n; ++i) mine[i] = statement(first + i);
  auto same = [&](size_t j, size_t i) {
    if (id.shapes[rank][j] != id.shapes[rank][first + i]) return false;
    if (mine[i].empty())
      return id.ids[rank][j] == id.ids[rank][first + i] &&
             sc.ctx.identity().ConfidenceLowerBound(sc.ci, rank, first + i) >=
                 kMismatchIdentityFloor;
    return statement(j) == mine[i];
  };
  for (size_t j = first >= n ? first - n + 1 : 0; j-- > 0 && first - j <= kRepeatScan;) {
    size_t k = 0;
    while (k < n && same(j + k, k) && rv.collectives[j + k].seq == rv.collectives[j].seq + k) ++k;
    if (k == n) return rv.collectives[j].seq;
  }
  return std::nullopt;
}

// Are the reference's `n` calls of an event all-gathers or reduce-scatters (what a sharded
// model's forward and backward issue)?
bool GathersOrScatters(const EventView& v, size_t n) {
  for (size_t k = 0; k < n; ++k) {
    const Api api = CanonicalApi(static_cast<Api>(v.Ref(k).api));
    if (api != Api::kAllGather && api != Api::kReduceScatter) return false;
  }
  return n > 0;
}

// "Rank 0's call at seq S is the first from SITE ..." when the rank that left the loop issued a
// call from code that had issued none before (a branch only it took?); "" otherwise.
std::string BranchFirst(const SequenceContext& sc, int off_rank, uint64_t seq,
                        const std::string& off, bool known_first = false) {
  const TraceModel& m = sc.ctx.model();
  const RankView& rv = m.comms()[sc.ci].ranks[off_rank];
  if (!known_first && !FirstFromItsSite(m, rv, seq)) return "";
  const auto now = IssuedAt(m, rv, seq);
  return Capitalized(off) + "'s call at seq " + std::to_string(seq) +
         (now->site.empty() ? " has a shape none of its earlier calls had"
                            : " is the first from " + now->site) +
         ": code that ran there for the first time, on " + off + " only.";
}

// " Rank 0's call at seq S is the first from SITE ..." when one side of the communicator's first
// mismatch is a lone rank whose call comes from a statement that never issued one before, while
// the other side's call is one its steps issued before (at the communicator's first calls every
// side's would be new: nothing is said). When the lone rank's next call is the others' next one,
// it took a branch only it took; otherwise it may as well have left the loop there (it ran fewer
// steps), and both readings are given. Without call sites a new shape is what any count mismatch
// shows, and after an earlier mismatch a rank may be somewhere new only because the ranks had
// parted: "" then.
std::string LoneFirstFromItsSite(const SequenceContext& sc, uint64_t seq, int rank, size_t n_mine,
                                 const std::string& who, size_t n_others,
                                 const std::string& others) {
  const TraceModel& m = sc.ctx.model();
  if (sc.ctx.FirstClaimed(sc.ci).value_or(seq) < seq) return "";
  const CommModel& c = m.comms()[sc.ci];
  const auto mine_at = IssuedAt(m, c.ranks[rank], seq), ref_at = IssuedAt(m, c.ranks[sc.ref], seq);
  if (!mine_at || !ref_at || mine_at->site.empty() || ref_at->site.empty()) return "";
  const bool mine_new = FirstFromItsSite(m, c.ranks[rank], seq);
  const bool ref_new = FirstFromItsSite(m, c.ranks[sc.ref], seq);
  if (mine_new == ref_new) return "";
  const bool lone_mine = mine_new && n_mine == 1;
  if (!lone_mine && !(ref_new && n_others == 1)) return "";
  const int lone = lone_mine ? rank : sc.ref, other = lone_mine ? sc.ref : rank;
  const std::string& lone_name = lone_mine ? who : others;
  const std::string& other_names = lone_mine ? others : who;
  // Back to the others' calls right after (a call in place of theirs, or one inserted before
  // theirs): a branch only the lone rank took.
  const auto lone_next = IssuedAt(m, c.ranks[lone], seq + 1);
  if (SameIssue(lone_next, IssuedAt(m, c.ranks[other], seq + 1)) ||
      SameIssue(lone_next, IssuedAt(m, c.ranks[other], seq)))
    return " " + BranchFirst(sc, lone, seq, lone_name, true);
  const std::string site = lone_mine ? mine_at->site : ref_at->site;
  return " " + Capitalized(lone_name) + "'s call at seq " + std::to_string(seq) +
         " is the first from " + site + ", where rank " + std::to_string(other) +
         " issued a call its earlier steps issued too: either " + lone_name +
         " left the loop there (the loop ran fewer times on " + lone_name +
         ": uneven inputs, or a step count of its own, such as a per-node setting) or took a "
         "branch " +
         other_names + " did not.";
}

void EmitFinding(SequenceContext& sc, const RawEvent& e, FindingSink& sink) {
  // Explained already by a check that runs first (a graph launched more often on some ranks).
  if (sc.ctx.Claimed(sc.ci, std::min(e.seq, e.ref_seq))) return;
  const EventView v(sc, e);
  const CommModel& c = v.comm();
  const bool call_sites = v.SitesTellApart();
  std::vector<int> agreeing = v.Agreeing();
  BufferEvidence evidence{v.Confidence(), v.Crossed(), 0, 0};
  std::tie(evidence.agreement, evidence.calls) = v.BufferAgreement();
  Finding f = FindingOn(FindingKind::kOrderSwap, sc.ctx.model(), sc.ci);
  f.seq = e.seq;
  f.ranks = e.ranks;
  if (e.ranks.size() >= agreeing.size())  // a tie: nobody is the majority
    f.ranks.insert(f.ranks.end(), agreeing.begin(), agreeing.end());
  std::sort(f.ranks.begin(), f.ranks.end());
  f.first_time = v.FirstTime();
  f.calls = v.Calls();
  f.pattern = e.pattern;
  const std::string who = RankList(e.ranks), others = RankList(agreeing);
  const int r0 = e.ranks[0];
  const auto& mine = e.rank_slots[0];

  // Same shape at every position: only the logical identity tells the calls apart.
  bool same_shape = e.op.type == AlignOp::kReorder || e.op.type == AlignOp::kMismatch;
  for (size_t k = 0; same_shape && k < mine.size() && k < e.ref_slots.size(); ++k)
    same_shape = ShapeSignature(v.Mine(k)) == ShapeSignature(v.Ref(k));
  const bool tags = same_shape;
  f.table.push_back({CompactRanks(agreeing), SeqRange(e.ref_seq, e.ref_slots.size()),
                     v.Side(sc.ref, e.ref_slots, tags), false});
  f.table.push_back(
      {CompactRanks(e.ranks), SeqRange(e.seq, mine.size()), v.Side(r0, mine, tags), true});
  const std::string my_side = v.Side(r0, mine, tags), ref_side = v.Side(sc.ref, e.ref_slots, tags);

  switch (e.op.type) {
    case AlignOp::kReorder: {
      const bool suspected = same_shape && !call_sites;
      DataSwapVerdict data;
      double conf = 0;
      if (suspected) {
        if (!evidence.crossed && v.BuffersCannotTell()) return;
        if (!WeighSuspicion(sc, e, agreeing, v.Confidence(), &data, &conf)) return;
        f.confidence = conf;
      }
      sc.ctx.Claim(sc.ci, e.seq, e.seq + mine.size() - 1);
      f.kind = suspected ? FindingKind::kSuspectedSwap : FindingKind::kOrderSwap;
      f.short_text = mine.size() == 2
                         ? who + " issued " + my_side + "; " + others + " the opposite order"
                         : who + " issued " + std::to_string(mine.size()) +
                               " calls in a different order than " + others;
      f.message = "From seq " + std::to_string(e.seq) + ", " + who + " issued " + my_side +
                  " while " + others + " issued " + ref_side +
                  ". NCCL pairs the k-th collective of every rank, so seq " +
                  std::to_string(e.seq) + " paired " + v.Describe(sc.ref, e.ref_slots[0], tags) +
                  " with " + v.Describe(r0, mine[0], tags) + ": " +
                  PairingConsequence(v.Mine(0), v.Ref(0)) +
                  ". The alignment of the whole sequence explains the mismatches at seq " +
                  SeqRange(e.seq, mine.size()) +
                  " as this one reordering, so they are not reported one by one. ";
      if (suspected) {
        f.message += SuspicionText(evidence, who, data);
      } else if (same_shape) {
        f.message += "The call sites recorded with --stacks tell the calls apart. ";
      }
      f.message +=
          "Issue these collectives in one order on every rank (e.g. launch gradient "
          "buckets in a fixed order rather than as they become ready).";
      break;
    }
    case AlignOp::kBlockedSwap: {
      sc.ctx.Claim(sc.ci, e.seq, kNoSeq);
      f.kind = FindingKind::kOrderSwap;
      f.short_text = who + " issued " + my_side + " at seq " + std::to_string(e.seq) + " before " +
                     ref_side + "; " + others + " the opposite order (hung there)";
      f.table[0].what = ref_side + " (next in its steps: " + my_side + ")";
      f.table[1].what = my_side + " (" + ref_side + " never issued)";
      f.message =
          "At seq " + std::to_string(e.seq) + " " + who + " issued " + my_side + " while " +
          others + " issued " + ref_side +
          ". Each is the call the other side issues next: in the " + "earlier steps " + others +
          " issued " + my_side + " right after " + ref_side + ", and " + who + " issued " +
          ref_side + " where it now issued " + my_side +
          ". So the two calls were issued in the opposite order, and NCCL paired " +
          v.Describe(sc.ref, e.ref_slots[0], false) + " with " + v.Describe(r0, mine[0], false) +
          ": " + PairingConsequence(v.Mine(0), v.Ref(0)) +
          ". The job hung in that call, so the second call of the pair never reached NCCL and "
          "the trace ends here. The counts are right; the order is not: issue these collectives "
          "in one order on every rank (e.g. reduce gradients in a fixed order rather than as "
          "they become ready).";
      break;
    }
    case AlignOp::kRankWentOn:
    case AlignOp::kRefWentOn: {
      // A per-position mismatch (its kind as such) from which the ranks never agree again: who
      // went on with the loop, who did not, and that the later calls are part of it.
      const bool rank_on = e.op.type == AlignOp::kRankWentOn;
      const std::string& on = rank_on ? who : others;
      const std::string& off = rank_on ? others : who;
      const std::string on_call = rank_on ? my_side : ref_side;
      const std::string off_call = rank_on ? ref_side : my_side;
      const uint64_t later = c.ranks[rank_on ? r0 : sc.ref].issued() - e.seq - 1;
      const bool on_one = (rank_on ? e.ranks.size() : agreeing.size()) == 1;
      const bool off_one = (rank_on ? agreeing.size() : e.ranks.size()) == 1;
      const std::string ref_its = (rank_on ? off_one : on_one) ? "its" : "their";
      const std::string my_its = (rank_on ? on_one : off_one) ? "its" : "their";
      sc.ctx.Claim(sc.ci, e.seq, kNoSeq);
      f.kind = MismatchKind(v.Mine(0), v.Ref(0));
      if (f.kind == FindingKind::kSuspectedSwap) f.kind = FindingKind::kOpMismatch;
      f.pattern = "parting:" + e.pattern;
      f.table[0].what = ref_side + (rank_on ? "  (not what " + ref_its + " steps issue here)"
                                            : "  (what " + ref_its + " steps issue next)");
      f.table[1].what = my_side + (rank_on ? "  (what " + my_its + " steps issue next)"
                                           : "  (not what " + my_its + " steps issue here)");
      f.short_text = on + " went on with the loop at seq " + std::to_string(e.seq) + " (" +
                     on_call + ") where " + off + " issued " + off_call;
      f.message =
          "Every rank issued the same calls up to seq " + std::to_string(e.seq) + ". There " + on +
          " issued " + on_call + ", the call " + (on_one ? "its" : "their") +
          " earlier steps issue next (and went on that way to the end of the trace), while " + off +
          " issued " + off_call + ", which " + (off_one ? "its" : "their") +
          " steps do not issue there, and the ranks " +
          "never agreed again. NCCL paired the two: " + PairingConsequence(v.Mine(0), v.Ref(0)) +
          (later == 1 ? "; " + on + "'s next call had no partner: a hang"
           : later    ? "; " + on + "'s " + Plural(later, "later call", "later calls") +
                         " had no partner: a hang"
                   : "") +
          ". So " + off + " left the loop or took a branch " + on + " did not take.";
      // A lone rank off the loop, the others on it: its new code is a branch only it took. A
      // lone rank on the loop: the others' new code is what follows the loop (uneven inputs).
      // One against one: either.
      const size_t n_off = rank_on ? agreeing.size() : e.ranks.size();
      const size_t n_on = rank_on ? e.ranks.size() : agreeing.size();
      const int off_rank = rank_on ? sc.ref : r0, on_rank = rank_on ? r0 : sc.ref;
      const std::string branch =
          n_off == 1 && n_on >= 1 ? BranchFirst(sc, off_rank, e.seq, off) : std::string();
      // Against several ranks, a branch only when the lone rank went back to the loop after
      // its extra call (its next call is the others' call here); a lone rank that left the
      // loop for good, its new code what follows the loop, is uneven inputs.
      const TraceModel& tm = sc.ctx.model();
      const bool back_to_loop = SameIssue(IssuedAt(tm, c.ranks[off_rank], e.seq + 1),
                                          IssuedAt(tm, c.ranks[on_rank], e.seq));
      // The call the ranks issued just before, again, on the rank that went on: a loop within
      // the step (rounds, micro-batches) that ran more times there, not the step's loop.
      // (Calls of two threads that each agree across the ranks are told by their timing, not
      // by a loop: the thread paragraph below says so.)
      const std::string inner = ThreadsInterleaved(sc, r0, e.seq, e.ref_seq).empty()
                                    ? LoopRanLonger(tm, c, e.seq, on_rank, off_rank, on, off)
                                    : std::string();
      if (!inner.empty()) {
        f.message = "Every rank issued the same calls up to seq " + std::to_string(e.seq) +
                    ". There NCCL paired " + on_call + " on " + on + " with " + off_call + " on " +
                    off + ": " + PairingConsequence(v.Mine(0), v.Ref(0)) +
                    (later == 1 ? "; " + on + "'s next call had no partner: a hang"
                     : later    ? "; " + on + "'s " + Plural(later, "later call", "later calls") +
                                   " had no partner: a hang"
                             : "") +
                    "." + inner;
        break;
      }
      if (!branch.empty() && n_on > 1 && back_to_loop) {
        f.message += " " + branch +
                     " A collective inside a rank-dependent branch is the likely cause (a barrier "
                     "or broadcast under `if rank == 0:` next to a checkpoint save or a log "
                     "line): move it out of the branch so that every rank issues it.";
        break;
      }
      f.message +=
          std::string(" Ranks that run the loop a different number of times do this: ") +
          "uneven inputs (one rank's share of the data holds more batches) or a stopping " +
          "condition each rank decides alone (a loss threshold, a time limit); give every rank " +
          "the same number of steps (shard the data evenly, e.g. DistributedSampler with " +
          "drop_last=True; decide to stop on one rank and broadcast it) or use DDP's join() for " +
          "uneven inputs. If " + off + " took a rank-dependent branch instead, make every rank " +
          "issue the same collectives there." + SkipAlternative(e, off, on);
      if (!branch.empty())
        f.message += " " + branch +
                     " If that line is not the code that follows the loop, it is "
                     "a collective inside a branch only " +
                     off +
                     " took (a barrier or broadcast "
                     "under `if rank == 0:` next to a checkpoint save or a log line): move it out "
                     "of the branch.";
      break;
    }
    case AlignOp::kSkip:
    case AlignOp::kExtra: {
      const bool skip = e.op.type == AlignOp::kSkip;
      const size_t n = skip ? e.op.ref_len : e.op.len;
      for (size_t i = 0; i < e.ranks.size(); ++i)
        sc.ctx.ExplainIssuedDifference(sc.ci, e.ranks[i], skip ? int64_t(n) : -int64_t(n));
      sc.ctx.Claim(sc.ci, std::min(e.seq, e.ref_seq), kNoSeq);
      f.kind = FindingKind::kMissingCall;
      if (skip) f.seq = e.ref_seq;
      if (skip) {
        f.table[1].what = mine.empty() ? "(nothing)" : "(skipped) next: " + my_side;
        f.table[1].seq = std::to_string(e.seq);
        f.short_text = who + " never issued " + ref_side + ", which " + others + " issued at seq " +
                       std::to_string(e.ref_seq);
        f.message = who + " skipped " + ref_side + " that " + others + " issued at seq " +
                    std::to_string(e.ref_seq) +
                    (mine.empty() ? ""
                                  : "; its next call, " + my_side + ", took seq " +
                                        std::to_string(e.seq) + " instead") +
                    ". NCCL pairs by position, so from there every call of " + who +
                    " was paired with the call after it on the other ranks, and at the end the "
                    "other ranks' last " +
                    (n == 1 ? std::string("call") : Plural(n, "call", "calls")) +
                    " had no partner: a hang, preceded by wrong results or a crash where the "
                    "mispaired calls differ. A collective inside a rank-dependent branch is the "
                    "usual cause: make every rank issue it.";
        const bool hooks = SkippedGradientHooks(v, e, n);
        if (hooks)
          f.message +=
              " The skipped " + std::string(n == 1 ? "call carries" : "calls carry") +
              " no Python call site while " + who +
              "'s next call does: " + (n == 1 ? "it was" : "they were") +
              " issued from autograd's backward hooks, as DDP's gradient buckets (FSDP's "
              "reduce-scatters) are. A bucket missing on one rank at one step is what DDP does "
              "when a parameter in it got no gradient there -- a branch that leaves a layer "
              "out of the forward on some ranks (an auxiliary head, an expert, a condition on "
              "the batch) with find_unused_parameters=False, the default -- or when that rank "
              "ran no backward at that step. Use every parameter on every rank at every step "
              "(add 0 * the unused output to the loss) or pass find_unused_parameters=True.";
        if (e.op.ref_len >= 2 && e.op.skip_pos + e.op.ref_len <= e.op.ref_pos) {
          // The same calls repeat, whole, before the place the alignment chose: a step.
          const uint64_t earliest = e.ref_seq - (e.op.ref_pos - e.op.skip_pos);
          f.message += " The same calls repeat before seq " + std::to_string(e.ref_seq) + ", so " +
                       who + " may have skipped them anywhere from seq " +
                       std::to_string(earliest) +
                       " on (the trace cannot tell which): from there each of its steps was "
                       "paired with the others' step before it, the same calls, so the sums "
                       "silently mixed steps. A step skipped on some ranks only does this (a "
                       "guard such as `if not torch.isfinite(loss): continue`): decide to skip "
                       "on every rank together.";
        }
        // No more ranks issued a stretch of calls than skipped it, and it repeats the issuers'
        // own loop (not gradient buckets: those are told above): the issuers may as well have
        // run that part once more.
        if (agreeing.size() <= e.ranks.size() && n >= 2 && !hooks)
          if (const std::optional<uint64_t> repeat = EarlierRepeat(sc, sc.ref, e.ref_slots))
            f.message += " Or the other way round: " + others + " issued " +
                         (n == 1 ? std::string("this call") : "these calls") + " once more where " +
                         who + " did not (" + others + " had issued the same " +
                         (n == 1 ? std::string("call") : "calls, in the same order,") + " at seq " +
                         SeqRange(*repeat, n) +
                         "): an evaluation or an extra forward under a rank-dependent "
                         "condition such as `if rank == 0:` does this." +
                         (GathersOrScatters(v, n) ? " Under FSDP or ZeRO-3 even a forward "
                                                    "issues collectives: run it on every rank."
                                                  : "");
      } else {
        f.table[0].what = "(nothing)";
        f.short_text = who + " issued " + my_side + " at seq " + std::to_string(e.seq) +
                       ", which " + others + " never issued";
        f.message = who + " issued " + Plural(n, "extra call", "extra calls") + ", " + my_side +
                    ", at seq " + std::to_string(e.seq) + " that " + others +
                    " never issued. NCCL pairs by position, so from there every call of " + others +
                    " was paired with an earlier call of " + who + ", and " + who + "'s last " +
                    (n == 1 ? std::string("call") : Plural(n, "call", "calls")) +
                    " had no partner: a hang.";
        const std::optional<uint64_t> repeat = EarlierRepeat(sc, r0, mine);
        if (!repeat) {
          f.message += " A collective inside a rank-dependent branch is the usual cause.";
          break;
        }
        // Calls of the loop itself, issued once more: not a branch's own code, but the rank
        // being elsewhere in its loop than the others.
        f.message += " " + std::string(n == 1 ? "This call repeats" : "These calls repeat") + " " +
                     (e.ranks.size() == 1 ? "its" : "their") + " own loop: " + who +
                     " had issued the same " +
                     (n == 1 ? std::string("call") : "calls, in the same order,") + " at seq " +
                     SeqRange(*repeat, n) + " as part of " +
                     (e.ranks.size() == 1 ? "its" : "their") + " steps. So either " + who +
                     " skipped the rest of a step and began the next one early while " + others +
                     " went on with that step (a guard such as `if not torch.isfinite(loss): "
                     "continue`, or a bad batch skipped, decided on some ranks only), or " +
                     who + " ran that part of the loop once more where " + others +
                     " did not (an evaluation or an extra forward under a rank-dependent "
                     "condition). Decide such branches on every rank together "
                     "(all-reduce the flag first).";
      }
      break;
    }
    case AlignOp::kMismatch: {
      const CallRecord& a = v.Mine(0);
      const CallRecord& b = v.Ref(0);
      f.kind = MismatchKind(a, b);
      if (f.kind == FindingKind::kSuspectedSwap) {
        DataSwapVerdict data;
        double conf = 0;
        // Call sites that differ at one position are no proof on their own: a rank-dependent
        // branch can issue the same tensor from two lines (a Flight Recorder dump of a
        // two-group deadlock gave an order_swap from that alone). The buffers and data must
        // make the case, as without call sites.
        // No reordering explains this position: the rank's buffer here is one the others did
        // not use here. Buffers allocated afresh each step (a compressing comm hook's) do
        // that all the time, and then even the data can look alike across steps by chance:
        // only a buffer that almost always sits beside one tensor makes this a suspicion.
        // A dropped suspicion claims nothing: the data checks go on checking the position.
        if (v.Confidence() < kMismatchIdentityFloor) return;
        if (v.BuffersCannotTell()) return;
        if (!WeighSuspicion(sc, e, agreeing, v.Confidence(), &data, &conf)) return;
        // Unless the data confirm it, the buffers must have been seen often enough for the
        // floor to hold at 95%: a fresh buffer seen 4 times, 3 of them at one position, is
        // an allocator's choice, not a tensor's place (a 1000-step AMP job with a compressing
        // hook gave two such errors).
        if (data.kind != DataSwapVerdict::kConfirmed &&
            v.ConfidenceLowerBound() < kMismatchIdentityFloor)
          return;
        // A rank whose buffers sit where the reference's do at under half the positions
        // allocates unlike it (rank 0 alone keeping diagnostics on the GPU): its fresh buffers
        // come back in patterns of its own, mostly at one position and now and then at another
        // (a 100-step job gave four such errors). Without the data confirming it, no suspicion.
        if (const auto [agreement, aligned] = v.BufferAgreement();
            data.kind != DataSwapVerdict::kConfirmed && aligned >= kAgreementSample &&
            agreement < 0.5f)
          return;
        // Nor, where buffer votes alone name the tensor, where the rank used the buffer here for
        // the first time and beside another tensor ever after: an allocator still settling (the
        // first step's buffers land elsewhere than every later step's; a 60-step pipeline job gave
        // such an error at its first loss broadcast).
        if (data.kind != DataSwapVerdict::kConfirmed && !v.BySites() && !v.Crossed() &&
            v.FirstUseOfItsBuffer())
          return;
        f.confidence = conf;
        sc.ctx.Claim(sc.ci, e.seq);
        f.short_text = who + " issued " + my_side + " where " + others + " issued " + ref_side;
        f.message = "At seq " + std::to_string(e.seq) + " NCCL paired " + ref_side + " on " +
                    others + " with " + my_side + " on " + who + ": " + PairingConsequence(a, b) +
                    ". ";
        if (v.BySites() && v.SameStatement() && data.kind != DataSwapVerdict::kConfirmed) {
          const auto [mine_from, ref_from] = v.PartingCallers();
          f.message +=
              "The call sites tell the calls apart (the buffers do not): the same "
              "statement, reached here from " +
              ref_from + " on " + others + " and from " + mine_from + " on " + who +
              ", callers every rank runs: a helper called for two tensors, in another "
              "order on " +
              who + ". ";
        } else {
          f.message += SuspicionText(evidence, who, data) +
                       (call_sites ? "The call sites differ as well. " : "");
        }
        f.message += "Make every rank issue the same tensor at this point.";
        break;
      }
      sc.ctx.Claim(sc.ci, e.seq);
      switch (f.kind) {
        case FindingKind::kOpMismatch:
          f.short_text = who + " issued " + ApiStr(a) + " where " + others + " issued " + ApiStr(b);
          break;
        case FindingKind::kDtypeMismatch:
          f.short_text = who + " passed " + std::string(DtypeName(a.dtype)) + " to " + ApiStr(a) +
                         " where " + others + " passed " + std::string(DtypeName(b.dtype));
          break;
        case FindingKind::kCountMismatch:
          f.short_text = who + " passed count " + Thousands(a.count) + " to " + ApiStr(a) +
                         " where " + others + " passed " + Thousands(b.count);
          break;
        case FindingKind::kRedopMismatch:
          f.short_text = who + " passed op " + std::string(RedOpName(a.op, a.flags)) + " to " +
                         ApiStr(a) + " where " + others + " passed " +
                         std::string(RedOpName(b.op, b.flags));
          break;
        default:
          f.short_text = who + " passed root " + std::to_string(a.root_peer) + " to " + ApiStr(a) +
                         ", " + others + " root " + std::to_string(b.root_peer);
          break;
      }
      f.message =
          PerPositionMessage(f.kind, e.seq, a, b, who, others, agreeing.size() > 1, c.nranks);
      if (f.kind != FindingKind::kRootMismatch) {
        const TraceModel& m = sc.ctx.model();
        std::string loop = LoopRanLonger(m, c, e.seq, r0, sc.ref, who, others);
        if (loop.empty()) loop = LoopRanLonger(m, c, e.seq, sc.ref, r0, others, who);
        if (!loop.empty())
          f.message = "At seq " + std::to_string(e.seq) + " NCCL paired " + ref_side + " on " +
                      others + " with " + my_side + " on " + who + ": " + PairingConsequence(a, b) +
                      "." + loop;
        else
          f.message +=
              LoneFirstFromItsSite(sc, e.seq, r0, e.ranks.size(), who, agreeing.size(), others);
      }
      if (f.kind == FindingKind::kRootMismatch) {
        // One mistake however many tensors it moves: the roots, not the sizes, make the
        // pattern, so the broadcasts of a model's parameters are one finding with repeats.
        const bool self = EveryRankItsOwnRoot(sc.ctx.model(), c, e.seq);
        f.pattern = "root:" + ApiStr(a) + ":" +
                    (self ? std::string("self")
                          : std::to_string(a.root_peer) + "|" + std::to_string(b.root_peer));
        if (self) {
          // No rank is the odd one out: every rank is, so the table shows them all.
          const TraceModel& m = sc.ctx.model();
          f.table.clear();
          f.ranks.clear();
          f.calls.clear();
          for (const RankView& rv : c.ranks)
            if (const CollectiveSlot* slot = rv.AtSeq(e.seq)) {
              f.table.push_back({std::to_string(rv.rank), std::to_string(e.seq),
                                 ShortCall(m.call(slot->call)), true});
              f.ranks.push_back(rv.rank);
              f.calls.push_back({slot->call, rv.rank, e.seq});
            }
          f.short_text = "every rank passed its own rank as the root of " + ApiStr(a) + " (" +
                         RankList(f.ranks) + ")";
          f.message = "At seq " + std::to_string(e.seq) + " every rank (" + RankList(f.ranks) +
                      ") passed its own rank as the root of " + ApiStr(a) +
                      ", so each claims to be the sender: NCCL pairs the calls anyway, which "
                      "hangs or leaves the data where it was. A root computed from the rank "
                      "itself does this (src=rank, or a local rank where a global one was "
                      "meant): pass the one rank that holds the data (e.g. src=0) on every "
                      "rank.";
        }
      }
      if (f.kind == FindingKind::kDtypeMismatch && a.count == b.count) {
        // The same tensors in another precision: one pattern whatever the bucket's size, so
        // that every bucket of the step is one finding with repeats.
        f.pattern = "dtype:" + ApiStr(a) + ":" + std::string(DtypeName(a.dtype)) + "|" +
                    std::string(DtypeName(b.dtype));
        // A 16- or 8-bit float against a wider one: a reduced-precision path on some ranks.
        if (IsFloating(a.dtype) && IsFloating(b.dtype) &&
            std::min(DtypeSize(a.dtype), DtypeSize(b.dtype)) <= 2)
          f.message += " Same element counts in two floating-point precisions: " + who +
                       " reduced the same tensors in another precision, a setting that differs "
                       "between the ranks (gradient compression such as DDP's bf16/fp16 "
                       "compress hooks, autocast or a mixed-precision option read from each "
                       "node's environment or config). Configure every rank alike.";
      }
      break;
    }
  }
  // Calls of two threads that each agree across the ranks: the interleaving is the cause the
  // rest of the message cannot see.
  const std::string threads = ThreadsInterleaved(sc, r0, e.seq, e.ref_seq);
  if (!threads.empty() && !f.message.empty()) {
    f.message[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(f.message[0])));
    f.message = threads + f.message;
    f.short_text = "threads interleaved: " + f.short_text;
  }
  if (f.kind != FindingKind::kSuspectedSwap) NoteMismatch(sc.ctx, f);
  sink.Add(std::move(f));
}

}  // namespace ncclrr::analysis
