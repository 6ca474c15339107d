// The sequence checker: per communicator, aligns every rank's collective sequence to the
// reference rank's (signature = op, count, dtype, reduction, root and logical identity) and
// reports each disagreement once, by its cause: a reordering (order_swap, or suspected_swap when
// only buffer identity tells the calls apart), calls a rank skipped or added mid-stream
// (missing_call), or a single mispaired call (op/count/dtype/redop/root mismatch).
#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include "checks/checkers.h"
#include "findings/sequence_findings.h"
#include "model/sequence_align.h"
#include "model/signature.h"
#include "report/text_util.h"

namespace ncclrr::analysis {
namespace {

// A rank's sequence from seq `lo` on, indexed by seq - lo (gaps hold kUnknownSignature); 20 bytes
// a call, spilled with the calls where a check holds more than fit (ncclrr/base/spill.h).
struct DenseSequence {
  uint64_t lo = 0;
  SpillVector<uint64_t> sig;
  SpillVector<uint64_t> shape;  // the shape part of sig alone (what a hang depends on)
  SpillVector<uint32_t> slot;
};

constexpr uint32_t kNoSlot = ~uint32_t{0};

class SequenceChecker : public Checker {
 public:
  std::string_view name() const override { return "sequence alignment"; }

  void Run(CheckContext& ctx, FindingSink& sink) override {
    for (size_t ci = 0; ci < ctx.model().comms().size(); ++ci)
      if (ctx.Owns(ci)) CheckComm(ctx, ci, sink);
  }

 private:
  static DenseSequence Dense(const SequenceContext& sc, const RankView& r, uint64_t lo) {
    DenseSequence d;
    d.lo = lo;
    const uint64_t hi = r.issued();
    if (hi <= lo) return d;
    d.sig.assign(hi - lo, kUnknownSignature);
    d.shape.assign(hi - lo, kUnknownSignature);
    d.slot.assign(hi - lo, kNoSlot);
    for (size_t k = 0; k < r.collectives.size(); ++k) {
      const uint64_t s = r.collectives[k].seq;
      if (s < lo) continue;
      d.sig[s - lo] = sc.Sig(r.rank, k);
      d.shape[s - lo] = sc.ctx.identity().comm(sc.ci).shapes[r.rank][k];
      d.slot[s - lo] = static_cast<uint32_t>(k);
    }
    return d;
  }

  // Does `r` issue exactly what the reference issued (same seqs, shapes and tensors)? The common
  // case, compared directly before any alignment.
  static bool SameAsReference(const CommIdentity& id, const RankView& r, const RankView& ref) {
    if (r.collectives.size() != ref.collectives.size() || r.first_seq() != ref.first_seq() ||
        r.issued() != ref.issued())
      return false;
    if (id.shapes[r.rank] != id.shapes[ref.rank] || id.ids[r.rank] != id.ids[ref.rank])
      return false;
    if (r.issued() - r.first_seq() == r.collectives.size()) return true;  // both without gaps
    for (size_t k = 0; k < r.collectives.size(); ++k)
      if (r.collectives[k].seq != ref.collectives[k].seq) return false;
    return true;
  }

  // The signature a sequence would hold at `end`, judged from sig[0, end): the call that followed
  // the longest earlier repeat of the calls just before `end` (the most recent one of that
  // length). Training loops repeat their calls every step but with extras every few steps, so a
  // plain period does not hold, while the calls around any place of a step do. 0 (unknown) when
  // no earlier stretch of at least two calls matches. With `by_majority`, the call that more
  // than half of the repeats at least half as long were followed by (else 0): an extra every
  // few steps (a metrics gather, whose size varies) then does not pass for what follows a step.
  static uint64_t PredictAt(std::span<const uint64_t> sig, size_t end, bool by_majority = false) {
    constexpr size_t kLookBack = 4096, kLongest = 64, kShortest = 2;
    end = std::min(end, sig.size());
    size_t best_len = 0;
    uint64_t best = kUnknownSignature;
    std::vector<std::pair<size_t, uint64_t>> repeats;  // (length, call that followed)
    for (size_t j = end == 0 ? 0 : end - 1; j >= 1 && end - j <= kLookBack; --j) {
      size_t len = 0;
      while (len < kLongest && len < j && sig[j - 1 - len] == sig[end - 1 - len]) ++len;
      if (len > best_len) {
        best_len = len;
        best = sig[j];
      }
      if (by_majority && len >= kShortest) repeats.push_back({len, sig[j]});
    }
    if (best_len < kShortest) return kUnknownSignature;
    if (!by_majority) return best;
    std::map<uint64_t, size_t> votes;
    size_t total = 0;
    for (const auto& [len, next] : repeats)
      if (2 * len >= best_len) {
        ++votes[next];
        ++total;
      }
    for (const auto& [next, n] : votes)
      if (2 * n > total) return next;
    return kUnknownSignature;
  }

  // A rank blocked in a mispaired collective never issues the calls after it. When both sides
  // end in a mismatch: if each side's last call is what the other's own history puts at the
  // other's place, the two calls were issued in the opposite order (a swap cut short by the hang
  // it caused); if only the rank's last call is what the reference would have issued next, the
  // rank skipped the reference's last call: a missing call, not a mismatch.
  static void ExplainBlockedTail(std::vector<AlignOp>* ops, const DenseSequence& a,
                                 const DenseSequence& b) {
    if (ops->empty()) return;
    AlignOp& last = ops->back();
    if (last.type != AlignOp::kMismatch || last.pos + 1 != b.sig.size() ||
        last.ref_pos + 1 != a.sig.size())
      return;
    // The swap by shape: fresh buffers make the logical ids of the stretch before a hang
    // unreliable, and calls of different shapes are what hangs.
    const uint64_t next_shape = PredictAt(a.shape, a.shape.size());
    const uint64_t expected_shape = PredictAt(b.shape, last.pos);
    if (next_shape != kUnknownSignature && next_shape == b.shape[last.pos] &&
        expected_shape == a.shape[last.ref_pos] && expected_shape != b.shape[last.pos]) {
      last = {AlignOp::kBlockedSwap, last.pos, last.ref_pos, 1, 1};
      return;
    }
    // The skip by the whole signature: a call of the next call's shape but another tensor is a
    // mismatch, not the next call.
    const uint64_t next = PredictAt(a.sig, a.sig.size());
    if (next != kUnknownSignature && next == b.sig[last.pos])
      last = {AlignOp::kSkip, last.pos, last.ref_pos, 0, 1};
  }

  // Where the sequences part for good after the same calls on both sides: one side goes on with
  // what its own history says comes next, call after call to its end, while the other's first
  // call there is not that. Ranks that ran their loop a different number of times (uneven
  // inputs) part like this, as do ranks where one took a branch the other did not and the job
  // hung there; either way the side that went on is the one that did what its steps do. Shapes,
  // not tensors: fresh buffers every step make the ids of a cut-short stretch unreliable.
  // `weak(op)`: the op's two calls have one shape and differ only by buffers that cannot name
  // a tensor there (fresh allocations), not by call sites.
  template <typename Weak>
  static void ExplainParting(std::vector<AlignOp>* ops, const DenseSequence& a,
                             const DenseSequence& b, Weak&& weak) {
    if (ops->empty()) return;
    size_t first = ops->size() - 1;
    while (first > 0 && (*ops)[first - 1].type == AlignOp::kMismatch &&
           (*ops)[first - 1].pos + 1 == (*ops)[first].pos)
      --first;
    // Calls of the same shape that differ only by buffers before the first differing shape
    // (fresh buffers around the parting) are not where the ranks part.
    while (first + 1 < ops->size() && (*ops)[first].type == AlignOp::kMismatch &&
           (*ops)[first].pos < b.shape.size() && (*ops)[first].ref_pos < a.shape.size() &&
           a.shape[(*ops)[first].ref_pos] == b.shape[(*ops)[first].pos] && weak((*ops)[first]))
      ++first;
    const AlignOp& at = (*ops)[first];
    const AlignOp& last = ops->back();
    if (at.type != AlignOp::kMismatch || last.type != AlignOp::kMismatch || at.pos != at.ref_pos ||
        (last.pos + 1 != b.shape.size() && last.ref_pos + 1 != a.shape.size()))
      return;
    const size_t p = at.pos;
    for (size_t i = 0; i < p; ++i)
      if (a.shape[i] != b.shape[i] && a.shape[i] != kUnknownSignature &&
          b.shape[i] != kUnknownSignature)
        return;
    // The side that stopped may instead have skipped a step of the loop (the finding says so).
    const std::optional<AlignOp> skipped = SkippedStep(p, a, b);
    auto went_on = [p](const DenseSequence& d) {
      constexpr size_t kChecked = 256;  // calls of a long tail that must follow the steps
      for (size_t k = p; k < std::min(d.shape.size(), p + kChecked); ++k) {
        const uint64_t next = PredictAt(d.shape, k, /*by_majority=*/true);
        if (next == kUnknownSignature || next != d.shape[k]) return false;
      }
      return true;
    };
    const bool rank_on = went_on(b), ref_on = went_on(a);
    if (rank_on == ref_on) return;
    AlignOp op = at;
    op.type = rank_on ? AlignOp::kRankWentOn : AlignOp::kRefWentOn;
    if (skipped && skipped->ref_skipped == rank_on) {  // the side that stopped issued the block
      op.at = skipped->at;
      op.landmark = skipped->landmark;
      op.issued = skipped->issued;
      op.usual = skipped->usual;
      op.skip_pos = skipped->pos;
    }
    ops->resize(first);
    ops->push_back(op);
  }

  // Where the sides first differ at p (the same calls before), one of them may have issued the
  // block its loop issues every few steps (a validation, a metrics gather) a step early: between
  // the last such block and p it issued fewer steps than every earlier stretch between two of
  // them held, while the other side issued a step there. That side skipped a step of the loop (a
  // guard only it took; the steps between were paired with the other side's earlier ones), or
  // left the loop early: the parting's finding names both. Counted in steps: each step starts
  // with the call the other side issued at p. The op returned carries the numbers (pos: the
  // first step after the block before; at, landmark, issued, usual, ref_skipped).
  static std::optional<AlignOp> SkippedStep(size_t p, const DenseSequence& a,
                                            const DenseSequence& b) {
    for (const bool ref_skipped : {false, true}) {
      const DenseSequence& d = ref_skipped ? a : b;  // the side that may have skipped
      const DenseSequence& o = ref_skipped ? b : a;
      const uint64_t block = d.shape[p], step = o.shape[p];
      if (block == step || block == kUnknownSignature || step == kUnknownSignature) continue;
      std::vector<size_t> starts;  // where the block began before p
      for (size_t i = 0; i < p; ++i)
        if (d.shape[i] == block && (i == 0 || d.shape[i - 1] != block)) starts.push_back(i);
      if (starts.size() < 2) continue;
      auto steps_in = [&](const DenseSequence& s, size_t from, size_t to, size_t* first) {
        size_t n = 0;
        for (size_t i = from + 1; i < to && i < s.shape.size(); ++i)
          if (s.shape[i] == step) {
            if (n == 0 && first) *first = i;
            ++n;
          }
        return n;
      };
      // Every earlier stretch between two blocks held the same number of steps.
      const size_t usual = steps_in(d, starts[starts.size() - 2], starts.back(), nullptr);
      bool regular = usual >= 2;
      for (size_t j = 0; regular && j + 2 < starts.size(); ++j)
        regular = steps_in(d, starts[j], starts[j + 1], nullptr) == usual;
      size_t first_step = 0;
      const size_t issued = steps_in(d, starts.back(), p, &first_step);
      if (!regular || issued >= usual || issued == 0) continue;
      size_t next_step = first_step + 1;  // one step: up to the next call that starts one
      while (next_step < p && d.shape[next_step] != step) ++next_step;
      AlignOp op;
      op.type = AlignOp::kMismatch;
      op.pos = op.ref_pos = first_step;
      op.len = op.ref_len = next_step - first_step;
      op.at = p;
      op.landmark = starts.back();
      op.issued = issued;
      op.usual = usual;
      op.ref_skipped = ref_skipped;
      return op;
    }
    return std::nullopt;
  }

  // A skipped run of `len` reference calls at `pos` aligns as well anywhere further back that the
  // same calls repeat (a whole step of a loop): the earliest such start.
  static size_t EarliestSkip(const DenseSequence& a, size_t pos, size_t len) {
    while (pos > 0 && pos - 1 + len < a.shape.size() &&
           a.shape[pos - 1] == a.shape[pos - 1 + len] && a.shape[pos - 1] != kUnknownSignature)
      --pos;
    return pos;
  }

  // The rank's last collective never returned: the job hung there (the watchdog's or a signal's
  // record, or a Flight Recorder entry not completed).
  static bool EndsInFlight(const TraceModel& m, const RankView& r) {
    return !r.collectives.empty() &&
           (m.call(r.collectives.back().call).flags & call_flags::kInFlight) != 0;
  }

  // Elements a sketch samples of a buffer: fewer leave nothing for the data to correlate.
  static constexpr uint64_t kSketchSamples = 256;

  // What the identity could not decide: calls that reached the reference's statements by a path
  // only their rank took, with buffers that name no tensor (CommIdentity::other_paths).
  static void NoteOtherPaths(const CheckContext& ctx, size_t ci, FindingSink& sink) {
    const TraceModel& m = ctx.model();
    const CommModel& c = m.comms()[ci];
    const CommIdentity& ident = ctx.identity().comm(ci);
    for (const CommIdentity::OtherPath& o : ident.other_paths) {
      const RankView& r = c.ranks[o.rank];
      const RankView& ref = c.ranks[ident.reference_rank];
      const CallRef mine = r.collectives[o.slot].call, theirs = ref.collectives[o.ref_slot].call;
      const std::string site = m.file(mine.file).String(m.call(mine).callsite);
      const std::string ref_site = m.file(theirs.file).String(m.call(theirs).callsite);
      const auto [caller, ref_caller] = PartingFrames(site, ref_site);
      const std::string who = "rank " + std::to_string(o.rank);
      const std::string them = "rank " + std::to_string(ref.rank);
      Note n;
      n.kind = NoteKind::kDataUnchecked;
      n.count = o.calls;
      n.ranks = {{c.id, o.rank}};
      n.comm_index = static_cast<int64_t>(ci);
      n.file = r.file;
      n.message = CommLabel(c) + ": " + who + " issued " + Plural(o.calls, "call", "calls") +
                  ", the first at seq " + std::to_string(r.collectives[o.slot].seq) +
                  ", from the statements " + them + " issued at the same seqs (" +
                  site.substr(0, site.find('<')) + ") but reached them another way: from " +
                  caller + ", where " + them + " came from " + ref_caller + ", a path " + them +
                  " never took. Their buffers (new every step, or seen too rarely) name no "
                  "tensor there, so whether these calls carry the tensors " +
                  them +
                  "'s carried cannot be told from the trace: if the two paths issue "
                  "different tensors (a helper called for two of them in the other order), NCCL "
                  "mixed them silently. " +
                  (o.max_count >= kSketchSamples
                       ? "Record with `ncclrr record --sketch` to have their data compared."
                       : "Their data could not tell either (too few elements to correlate): "
                         "compare what the two callers pass.");
      sink.AddNote(std::move(n));
    }
  }

  void CheckComm(CheckContext& ctx, size_t ci, FindingSink& sink) {
    const CommModel& c = ctx.model().comms()[ci];
    NoteOtherPaths(ctx, ci, sink);
    if (c.ranks.size() < 2) return;
    const int ref = ctx.identity().comm(ci).reference_rank;
    const RankView& rv_ref = c.ranks[ref];
    if (!rv_ref.has_file() || rv_ref.collectives.empty()) return;
    SequenceContext sc{ctx, ci, ref};
    const CommIdentity& ident = ctx.identity().comm(ci);
    AlignParams params;
    params.reorder_window = ctx.options().reorder_window;
    std::map<std::tuple<int, uint64_t, uint64_t, size_t, size_t, std::string>, RawEvent> merged;
    for (const RankView& r : c.ranks) {
      if (r.rank == ref || !r.has_file() || r.collectives.empty()) continue;
      if (SameAsReference(ident, r, rv_ref)) continue;  // the common case
      const uint64_t lo = std::max(r.first_seq(), rv_ref.first_seq());
      const DenseSequence a = Dense(sc, rv_ref, lo);
      const DenseSequence b = Dense(sc, r, lo);
      params.ends_in_hang = EndsInFlight(ctx.model(), r) || EndsInFlight(ctx.model(), rv_ref);
      // The rank's calls whose tensor only weak buffer votes name (fresh buffers every step).
      SpillVector<uint8_t> weak_id(b.slot.size(), 0);
      for (size_t k = 0; k < b.slot.size(); ++k)
        weak_id[k] =
            b.slot[k] != kNoSlot && ident.evidence[r.rank][b.slot[k]] == IdentityEvidence::kVotes &&
            ctx.identity().ConfidenceLowerBound(ci, r.rank, b.slot[k]) < kMismatchIdentityFloor;
      params.ref_shape = a.shape;
      params.seq_shape = b.shape;
      params.seq_weak = weak_id;
      std::vector<AlignOp> ops = AlignSequences(a.sig, b.sig, params);
      ExplainBlockedTail(&ops, a, b);
      auto weak = [&](const AlignOp& op) {
        const uint32_t i = b.slot[op.pos], j = a.slot[op.ref_pos];
        if (i == kNoSlot || j == kNoSlot) return false;
        return ident.evidence[r.rank][i] == IdentityEvidence::kVotes &&
               ident.evidence[ref][j] == IdentityEvidence::kVotes &&
               ctx.identity().ConfidenceLowerBound(ci, r.rank, i) < kMismatchIdentityFloor;
      };
      ExplainParting(&ops, a, b, weak);
      for (AlignOp& op : ops)
        if (op.type == AlignOp::kSkip) op.skip_pos = EarliestSkip(a, op.ref_pos, op.ref_len);
      for (const AlignOp& op : ops) {
        RawEvent e;
        e.op = op;
        e.seq = lo + op.pos;
        e.ref_seq = lo + op.ref_pos;
        for (size_t k = 0; k < op.len; ++k) e.slots.push_back(b.slot[op.pos + k]);
        for (size_t k = 0; k < op.ref_len; ++k) e.ref_slots.push_back(a.slot[op.ref_pos + k]);
        // For a skip, show what the rank issued instead (the call NCCL paired it with).
        if (op.type == AlignOp::kSkip && op.pos < b.slot.size()) e.slots.push_back(b.slot[op.pos]);
        if (std::count(e.slots.begin(), e.slots.end(), kNoSlot) ||
            std::count(e.ref_slots.begin(), e.ref_slots.end(), kNoSlot))
          continue;  // a gap in the records: nothing to say
        const std::string pattern = EventPattern(sc, r.rank, e);
        auto key = std::make_tuple(static_cast<int>(op.type), e.seq, e.ref_seq, op.len, op.ref_len,
                                   pattern);
        auto [it, added] = merged.try_emplace(key, e);
        it->second.ranks.push_back(r.rank);
        it->second.rank_slots.push_back(e.slots);
        it->second.pattern = pattern;
      }
    }
    for (auto& [key, e] : merged) EmitFinding(sc, e, sink);
  }
};

}  // namespace

std::shared_ptr<Checker> MakeSequenceChecker() { return std::make_shared<SequenceChecker>(); }

}  // namespace ncclrr::analysis
