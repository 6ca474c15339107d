// The exact data checks (`ncclrr record --capture`): for every collective position whose
// buffers were captured on every rank, and every Send/Recv pair captured on both sides, each
// output element is recomputed from the captured inputs (capture_verify.h) and compared with the
// captured output: wrong_sum names the rank, the first differing element, its expected and
// observed values. Verified calls are marked in the context so the sketch checks leave their
// outputs alone (max/min/prod and integer avg are no longer "unchecked" there). Calls captured on
// only some ranks, and side files that cannot be read, are counted in data_unchecked notes.
#include <map>
#include <set>

#include "checks/checkers.h"
#include "findings/capture_findings.h"
#include "model/call_sketches.h"
#include "model/signature.h"
#include "ncclrr/sketch/numeric.h"
#include "ncclrr/trace/capture_side_file.h"
#include "report/text_util.h"

namespace ncclrr::analysis {
namespace {

struct Refs {
  const CaptureRefData* send = nullptr;
  const CaptureRefData* recv = nullptr;
  const CaptureRefData* scalar = nullptr;
};

class CaptureChecker : public Checker {
 public:
  std::string_view name() const override { return "data checks (captured buffers)"; }

  void Run(CheckContext& ctx, FindingSink& sink) override {
    const TraceModel& m = ctx.model();
    for (uint32_t f = 0; f < m.dir().files.size(); ++f)
      for (const CaptureRefData& c : m.file(f).captures) {
        Refs& r = index_[{f, c.call_uid}];
        (c.which == SketchWhich::kRecvAfter ? r.recv
         : c.which == SketchWhich::kScalar  ? r.scalar
                                            : r.send) = &c;
      }
    if (index_.empty()) return;
    for (size_t ci = 0; ci < m.comms().size(); ++ci) {
      if (!ctx.Owns(ci)) continue;
      CheckCollectives(ctx, ci, sink);
      CheckP2p(ctx, ci, sink);
    }
    EmitNotes(sink);
  }

 private:
  const Refs* Find(const TraceModel& m, CallRef r) const {
    auto it = index_.find({r.file, m.call(r).uid});
    return it == index_.end() ? nullptr : &it->second;
  }

  // Reads what VerifyCaptured needs of one rank's call; false (counted) when it is missing.
  bool Gather(const TraceModel& m, CallRef ref, int rank, RankBuffers* out) {
    const CallRecord& c = m.call(ref);
    const Refs* refs = Find(m, ref);
    out->rank = rank;
    out->call = ref;
    if (refs == nullptr) return false;
    if (!Read(m, refs->send, &out->send) || !Read(m, refs->recv, &out->recv)) return false;
    if (c.flags & call_flags::kPreMulSum) {
      if (!(c.flags & call_flags::kScalarOnDevice)) {
        out->scalar = c.scalar;
      } else {
        std::string s;
        if (refs->scalar == nullptr || !Read(m, refs->scalar, &s) || s.size() < DtypeSize(c.dtype))
          return false;
        out->scalar = sketch::DecodeElement(c.dtype, s.data());
      }
    }
    return true;
  }

  bool Read(const TraceModel& m, const CaptureRefData* ref, std::string* out) {
    if (ref == nullptr) return true;  // absent: the size check below decides
    auto bytes = ReadCapturedBuffer(m.dir().dir, *ref);
    if (!bytes.ok()) {
      if (unreadable_first_.empty()) unreadable_first_ = bytes.status().message();
      ++unreadable_;
      read_failed_ = true;
      return false;
    }
    *out = std::move(*bytes);
    return true;
  }

  void Partial(const TraceModel& m, size_t ci, uint64_t key, const std::vector<int>& missing) {
    if (!partial_calls_.insert({ci, key}).second) return;
    for (int r : missing) partial_ranks_.insert({m.comms()[ci].id, r});
  }

  void CheckCollectives(CheckContext& ctx, size_t ci, FindingSink& sink) {
    const TraceModel& m = ctx.model();
    const CommModel& c = m.comms()[ci];
    std::set<uint64_t> seqs;
    for (const RankView& r : c.ranks)
      for (const CollectiveSlot& s : r.collectives)
        if (s.launch == 0 && Find(m, s.call)) seqs.insert(s.seq);
    for (uint64_t seq : seqs) {
      std::vector<RankBuffers> ranks;
      std::vector<int> missing;
      uint64_t shape = 0;
      bool agree = true;
      const CollectiveSlot* any = nullptr;
      read_failed_ = false;
      for (const RankView& r : c.ranks) {
        const CollectiveSlot* slot = r.AtSeq(seq);
        if (slot && !any) any = slot;
        RankBuffers b;
        if (!slot || !Gather(m, slot->call, r.rank, &b)) {
          missing.push_back(r.rank);
          continue;
        }
        const uint64_t sig = ShapeSignature(m.call(slot->call));
        if (ranks.empty()) shape = sig;
        agree = agree && sig == shape;
        b.time_ns = m.SlotTime(*slot);
        ranks.push_back(std::move(b));
      }
      // A mispaired position (a structural finding) has no meaningful result to verify; an
      // unreadable side file is noted by itself.
      if (!agree || ctx.Claimed(ci, seq) || read_failed_) continue;
      const CallRecord& first = m.call(any->call);
      CapturedCall cc{static_cast<Api>(first.api),
                      c.nranks,
                      first.root_peer,
                      first.op,
                      first.flags,
                      first.dtype,
                      first.count,
                      {},
                      {},
                      {}};
      if (missing.empty() && !Sized(cc, ranks, &missing)) missing.push_back(-1);
      if (!missing.empty()) {
        Partial(m, ci, seq, missing);
        continue;
      }
      for (const RankBuffers& b : ranks) {
        cc.send.push_back(b.send);
        cc.recv.push_back(b.recv);
        cc.scalars.push_back(b.scalar);
      }
      ctx.MarkCaptureVerified(ci, seq);
      ++verified_;
      Report(ctx, ci, seq, {-1, -1}, ranks, VerifyCaptured(cc), sink);
    }
  }

  // Every rank holds at least the bytes the plan needs; the views are cut to exactly that.
  static bool Sized(const CapturedCall& cc, std::vector<RankBuffers>& ranks,
                    std::vector<int>* short_ranks) {
    for (RankBuffers& b : ranks) {
      const NeededBytes need =
          CapturedBytesNeeded(cc.api, cc.dtype, cc.count, cc.nranks, b.rank, cc.root);
      if (b.send.size() < need.send || b.recv.size() < need.recv) short_ranks->push_back(b.rank);
      b.send.resize(std::min<size_t>(b.send.size(), need.send));
      b.recv.resize(std::min<size_t>(b.recv.size(), need.recv));
    }
    return short_ranks->empty();
  }

  void CheckP2p(CheckContext& ctx, size_t ci, FindingSink& sink) {
    const TraceModel& m = ctx.model();
    const CommModel& c = m.comms()[ci];
    for (const RankView& src : c.ranks) {
      for (const P2pCall& s : src.p2p) {
        if (!s.send || !Find(m, s.call) || s.peer < 0 || s.peer >= int(c.ranks.size())) continue;
        const P2pCall* r = nullptr;
        for (const P2pCall& p : c.ranks[s.peer].p2p)
          if (!p.send && p.peer == src.rank && p.pair_seq == s.pair_seq) r = &p;
        const uint64_t key = Mix64(uint64_t(src.rank) << 32 | uint32_t(s.peer), s.pair_seq);
        std::vector<RankBuffers> both(2);
        read_failed_ = false;
        const CallRecord& a = m.call(s.call);
        if (r && (a.count != m.call(r->call).count || a.dtype != m.call(r->call).dtype))
          continue;  // a p2p_mismatch, reported there
        const bool ok =
            Gather(m, s.call, src.rank, &both[0]) && r && Gather(m, r->call, s.peer, &both[1]);
        const uint64_t bytes = a.count * DtypeSize(a.dtype);
        if (read_failed_) continue;
        if (!ok || both[0].send.size() < bytes || both[1].recv.size() < bytes) {
          Partial(m, ci, ~key, {ok ? s.peer : src.rank});
          continue;
        }
        both[0].time_ns = s.time_ns;
        both[1].time_ns = r->time_ns;
        CapturedCall cc{Api::kSend, 2, -1, 0, 0, a.dtype, a.count, {}, {}, {}};
        cc.send = {std::string_view(both[0].send).substr(0, bytes), {}};
        cc.recv = {{}, std::string_view(both[1].recv).substr(0, bytes)};
        ctx.MarkCaptureVerified(ci, s.pair_seq, src.rank, s.peer);
        ++verified_;
        std::vector<OutputCheck> checks = VerifyCaptured(cc);
        for (OutputCheck& o : checks) o.rank = s.peer;
        Report(ctx, ci, s.pair_seq, {src.rank, s.peer}, both, checks, sink);
      }
    }
  }

  // `pair`: (sender, receiver) of a Send/Recv pair, (-1, -1) for a collective.
  static void Report(CheckContext& ctx, size_t ci, uint64_t seq, std::pair<int, int> pair,
                     const std::vector<RankBuffers>& ranks, const std::vector<OutputCheck>& checks,
                     FindingSink& sink) {
    std::vector<const OutputCheck*> wrong;
    for (const OutputCheck& o : checks)
      if (o.wrong > 0) wrong.push_back(&o);
    if (wrong.empty()) return;
    const std::optional<int> peer =
        pair.second >= 0 ? std::optional<int>(pair.second) : std::nullopt;
    Finding f = CaptureWrongSum(ctx.model(), ci, seq, peer, ranks, checks, wrong);
    if (TraceHasSketches(ctx.model())) {  // a race the sketches show explains it (data checks)
      ctx.DeferCaptureWrongSum(ci, seq, pair.first, pair.second, std::move(f));
    } else {
      sink.Add(std::move(f));
    }
  }

  void EmitNotes(FindingSink& sink) const {
    if (!partial_calls_.empty()) {
      Note n;
      n.kind = NoteKind::kDataUnchecked;
      n.count = partial_calls_.size();
      n.ranks.assign(partial_ranks_.begin(), partial_ranks_.end());
      n.message = Plural(partial_calls_.size(), "call was", "calls were") +
                  " captured only in part (on some ranks, or without all of their buffers): "
                  "their outputs were not verified from captured data. The --capture budget "
                  "or --capture-filter stopped at different calls on different ranks, or a "
                  "buffer could not be copied (see the trace's capture notes: ncclrr dump). " +
                  Plural(verified_, "call was", "calls were") + " verified from captures.";
      sink.AddNote(std::move(n));
    }
    if (unreadable_ > 0) {
      Note n;
      n.kind = NoteKind::kDataUnchecked;
      n.count = unreadable_;
      n.message =
          Plural(unreadable_, "captured buffer", "captured buffers") +
          " could not be read, so their calls were not verified; first: " + unreadable_first_ + ".";
      sink.AddNote(std::move(n));
    }
  }

  std::map<std::pair<uint32_t, uint64_t>, Refs> index_;  // (file, call uid) -> its captures
  std::set<std::pair<size_t, uint64_t>> partial_calls_;
  std::set<std::pair<uint64_t, int>> partial_ranks_;
  uint64_t unreadable_ = 0, verified_ = 0;
  bool read_failed_ = false;  // a side file of the call being gathered could not be read
  std::string unreadable_first_;
};

}  // namespace

std::shared_ptr<Checker> MakeCaptureChecker() { return std::make_shared<CaptureChecker>(); }

}  // namespace ncclrr::analysis
