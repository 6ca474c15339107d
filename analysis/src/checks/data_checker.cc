// The data checks (docs/sketches.md "Integration → Analysis"): for every call that carries
// sketches (`ncclrr record --sketch`), the identity check of its outputs (wrong_sum), the
// comparison of outputs that must be identical on every rank (output_divergence), the race
// check of its send buffer (buffer_race), and notes counting what could not be checked. Calls
// without sketches cost nothing: files without sketches are skipped whole.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "checks/checkers.h"
#include "checks/data_tally.h"
#include "findings/data_findings.h"
#include "model/call_sketches.h"
#include "model/flat_map.h"
#include "model/signature.h"

namespace ncclrr::analysis {
namespace {

// "AllReduce max", "Broadcast": how the notes group the calls they could not check.
std::string CallKind(const CallRecord& c) {
  const Api api = static_cast<Api>(c.api);
  std::string s(ApiName(api));
  if (Reduces(api)) s += " " + std::string(RedOpName(c.op, c.flags));
  return s;
}

// Fills `race` when the rank's send buffer changed between its before- and after-sketches.
void CheckRace(const CallSketches& s, RankDataOutcome* out) {
  bool twin = false;
  const SketchData* before = RaceBaseline(s, &twin);
  if (!before || !s.send_after) return;
  sketch::RaceEvidence ev = sketch::CompareRaceSamples(*before, *s.send_after, twin);
  if (ev.changed) out->race = std::move(ev);
}

class DataChecker : public Checker {
 public:
  std::string_view name() const override { return "data checks (sketches)"; }

  void Run(CheckContext& ctx, FindingSink& sink) override {
    const TraceModel& m = ctx.model();
    if (!TraceHasSketches(m)) return;
    DataTally tally;
    for (size_t ci = 0; ci < m.comms().size(); ++ci) {
      if (!ctx.Owns(ci)) continue;
      const CommModel& c = m.comms()[ci];
      std::vector<int> ranks;  // ranks whose file holds sketches
      for (const RankView& r : c.ranks)
        if (r.has_file() && !m.file(r.file).sketches.empty()) ranks.push_back(r.rank);
      if (ranks.empty()) continue;
      CheckCollectives(ctx, ci, ranks, tally, sink);
      CheckP2p(ctx, ci, ranks, tally, sink);
    }
    // Captured wrong sums of calls no sketch check visited stand as they are.
    for (Finding& f : ctx.TakeAllCaptureWrongSums()) sink.Add(std::move(f));
    tally.EmitNotes(sink);
  }

 private:
  static void CheckCollectives(CheckContext& ctx, size_t ci, const std::vector<int>& with_sketches,
                               DataTally& tally, FindingSink& sink) {
    const TraceModel& m = ctx.model();
    const CommModel& c = m.comms()[ci];
    std::set<uint64_t> seqs;
    for (int r : with_sketches)
      for (const CollectiveSlot& s : c.ranks[r].collectives)
        if (!m.Sketches(s.call).empty()) seqs.insert(s.seq);
    for (uint64_t seq : seqs) {
      CallDataOutcome o;
      o.comm_index = ci;
      o.seq = seq;
      std::vector<CallSketches> sk;
      bool complete = true, agree = true;
      uint64_t shape = 0;
      for (const RankView& r : c.ranks) {
        const CollectiveSlot* slot = r.AtSeq(seq);
        if (!slot) {
          complete = false;
          continue;
        }
        const uint64_t sig = ShapeSignature(m.call(slot->call));
        if (o.ranks.empty()) shape = sig;
        agree = agree && sig == shape;
        RankDataOutcome ro;
        ro.rank = r.rank;
        ro.call = slot->call;
        ro.seq = seq;
        ro.time_ns = m.SlotTime(*slot);
        sk.push_back(SketchesOf(m, slot->call, slot->launch));
        CheckRace(sk.back(), &ro);
        o.ranks.push_back(std::move(ro));
      }
      // Outputs are compared only where every rank issued the same call and no structural
      // finding explains the position (a mispaired call has no meaningful identity).
      // Outputs verified exactly from captured buffers need no sketch identity.
      const bool comparable = complete && agree && !ctx.Claimed(ci, seq);
      if (comparable && !ctx.CaptureVerified(ci, seq)) CheckIdentity(m, ci, sk, &o, tally);
      const std::optional<Finding> captured = ctx.TakeCaptureWrongSum(ci, seq);
      // Outputs NCCL makes identical on every rank are compared across ranks, bit for bit
      // (after the identity check, whose verdicts can tell which of two outputs is right).
      if (comparable) CompareAcrossRanks(ctx, ci, sk, captured ? &*captured : nullptr, &o);
      for (Finding& f : DataFindings(m, o, captured ? &*captured : nullptr)) sink.Add(std::move(f));
    }
  }

  // `captured_wrong`: the wrong_sum the captured buffers prove for this call, if any.
  static void CompareAcrossRanks(const CheckContext& ctx, size_t ci,
                                 const std::vector<CallSketches>& sk, const Finding* captured_wrong,
                                 CallDataOutcome* o) {
    const TraceModel& m = ctx.model();
    const Api api = static_cast<Api>(m.call(o->ranks[0].call).api);
    if (!OutputsIdentical(api)) return;
    const bool exact = ctx.CaptureVerified(ci, o->seq);
    std::vector<int> ranks;
    std::vector<OutputProof> proof;
    for (const RankDataOutcome& r : o->ranks) {
      ranks.push_back(r.rank);
      OutputProof p = OutputProof::kNone;
      if (exact) {
        const bool wrong = captured_wrong && std::count(captured_wrong->ranks.begin(),
                                                        captured_wrong->ranks.end(), r.rank);
        p = wrong ? OutputProof::kWrong : OutputProof::kRight;
      } else if (r.verdict && r.verdict->verdict == sketch::Verdict::kOk) {
        p = OutputProof::kRight;
      } else if (r.verdict && sketch::IsFailure(r.verdict->verdict)) {
        p = OutputProof::kWrong;
      }
      proof.push_back(p);
    }
    o->divergence = CompareOutputs(api, sk, ranks, proof);
    if (!o->divergence) return;
    if (const auto at = ctx.FirstClaimed(ci); at && *at < o->seq) o->mispaired_at = at;
    std::set<int32_t> versions;
    for (const RankDataOutcome& r : o->ranks)
      if (const int32_t v = m.file(r.call.file).nccl_version; v > 0) versions.insert(v);
    if (versions.size() > 1) o->nccl_versions.assign(versions.begin(), versions.end());
  }

  static void CheckIdentity(const TraceModel& m, size_t ci, const std::vector<CallSketches>& sk,
                            CallDataOutcome* o, DataTally& tally) {
    bool any = false;
    for (const CallSketches& s : sk) any = any || !s.send.empty() || !s.recv.empty();
    if (!any) return;
    const CommModel& c = m.comms()[ci];
    const CallRecord& first = m.call(o->ranks[0].call);
    sketch::CollectiveSketches cs{static_cast<Api>(first.api),
                                  c.nranks,
                                  first.root_peer,
                                  first.op,
                                  first.flags,
                                  first.dtype,
                                  first.count,
                                  {}};
    for (size_t i = 0; i < sk.size(); ++i)
      cs.ranks.push_back(ToRankSketches(sk[i], m.call(o->ranks[i].call)));
    const uint64_t key = Mix64(ci, o->seq);
    bool checked = false;
    for (sketch::RankVerdict& v : sketch::CheckCollective(cs)) {
      if (v.rank < 0 || size_t(v.rank) >= o->ranks.size()) continue;
      if (v.verdict == sketch::Verdict::kOk || sketch::IsFailure(v.verdict)) {
        checked = true;
      } else if (v.verdict != sketch::Verdict::kNotAnOutput) {
        tally.Add(v.verdict, key, c.id, v.rank, CallKind(first));
      }
      o->ranks[v.rank].verdict = std::move(v);
    }
    if (checked) tally.Checked();
  }

  // Send/Recv pairs by (sender, receiver, per-pair index): the receiver's sketch must equal the
  // sender's. Sends are race-checked like collectives.
  static void CheckP2p(CheckContext& ctx, size_t ci, const std::vector<int>& with_sketches,
                       DataTally& tally, FindingSink& sink) {
    const TraceModel& m = ctx.model();
    const CommModel& c = m.comms()[ci];
    std::map<std::tuple<int, int, uint64_t>, const P2pCall*> recvs;  // (src, dst, k)
    for (int r : with_sketches)
      for (const P2pCall& p : c.ranks[r].p2p)
        if (!p.send) recvs[{p.peer, r, p.pair_seq}] = &p;
    for (int src : with_sketches) {
      const std::multimap<uint64_t, std::pair<uint64_t, uint64_t>> received =
          GroupReceives(m, c.ranks[src]);
      for (const P2pCall& s : c.ranks[src].p2p) {
        if (!s.send) continue;
        const CallSketches ss = SketchesOf(m, s.call);
        if (ss.empty()) continue;
        const bool own_receive = WrittenByOwnReceive(m.call(s.call), received);
        if (own_receive) tally.SendIntoOwnReceive(c.id, src);
        CallDataOutcome o;
        o.comm_index = ci;
        o.seq = s.pair_seq;
        o.peer = s.peer;
        RankDataOutcome sender;
        sender.rank = src;
        sender.call = s.call;
        sender.seq = s.pair_seq;
        sender.time_ns = s.time_ns;
        if (!own_receive) CheckRace(ss, &sender);
        o.ranks.push_back(std::move(sender));
        auto it = recvs.find({src, s.peer, s.pair_seq});
        if (it != recvs.end() && !ctx.CaptureVerified(ci, s.pair_seq, src, s.peer))
          CheckPair(m, ci, ss, *it->second, &o, tally);
        const std::optional<Finding> captured =
            ctx.TakeCaptureWrongSum(ci, s.pair_seq, src, s.peer);
        for (Finding& f : DataFindings(m, o, captured ? &*captured : nullptr))
          sink.Add(std::move(f));
      }
    }
  }

  // Byte ranges the rank's receives write, by the group they were issued in (receives outside a
  // group are left out: a send cannot share a call with them).
  static std::multimap<uint64_t, std::pair<uint64_t, uint64_t>> GroupReceives(const TraceModel& m,
                                                                              const RankView& r) {
    std::multimap<uint64_t, std::pair<uint64_t, uint64_t>> out;
    for (const P2pCall& p : r.p2p) {
      if (p.send) continue;
      const CallRecord& c = m.call(p.call);
      if (c.group_depth == 0 || c.recvbuff == 0) continue;
      out.insert({c.group_id, {c.recvbuff, c.count * DtypeSize(c.dtype)}});
    }
    return out;
  }

  // Whether a receive of the send's own group writes bytes the send reads: then the send buffer
  // changes during the call by design, and a race check would blame another writer.
  static bool WrittenByOwnReceive(
      const CallRecord& send, const std::multimap<uint64_t, std::pair<uint64_t, uint64_t>>& rx) {
    if (send.group_depth == 0 || send.sendbuff == 0) return false;
    const uint64_t bytes = send.count * DtypeSize(send.dtype);
    const auto [lo, hi] = rx.equal_range(send.group_id);
    for (auto it = lo; it != hi; ++it) {
      const auto [start, len] = it->second;
      if (start < send.sendbuff + bytes && send.sendbuff < start + len) return true;
    }
    return false;
  }

  static void CheckPair(const TraceModel& m, size_t ci, const CallSketches& ss, const P2pCall& r,
                        CallDataOutcome* o, DataTally& tally) {
    const CallRecord& a = m.call(o->ranks[0].call);
    const CallRecord& b = m.call(r.call);
    if (a.count != b.count || a.dtype != b.dtype) return;  // a p2p_mismatch, reported there
    const CallSketches rs = SketchesOf(m, r.call);
    const int dst = *o->peer;
    const uint64_t key =
        Mix64(~uint64_t(ci), Mix64(uint64_t(dst) << 32 | uint32_t(o->ranks[0].rank), r.pair_seq));
    if (ss.send.size() != 1 || rs.recv.size() != 1) {
      tally.Add(sketch::Verdict::kMissingSketch, key, m.comms()[ci].id, dst, "Send/Recv");
      return;
    }
    RankDataOutcome receiver;
    receiver.rank = dst;
    receiver.call = r.call;
    receiver.seq = r.pair_seq;
    receiver.time_ns = r.time_ns;
    receiver.verdict = sketch::CheckSendRecv(*ss.send[0], *rs.recv[0], dst);
    if (sketch::IsFailure(receiver.verdict->verdict))
      receiver.verdict->message = "rank " + std::to_string(dst) + ": " + receiver.verdict->message;
    tally.Checked();
    o->ranks.push_back(std::move(receiver));
  }
};

}  // namespace

std::shared_ptr<Checker> MakeDataChecker() { return std::make_shared<DataChecker>(); }

}  // namespace ncclrr::analysis
