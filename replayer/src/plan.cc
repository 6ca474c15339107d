#include "plan.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include "loop_steps.h"
#include "ncclrr/analysis/check.h"
#include "ncclrr/analysis/collective_shape.h"
#include "ncclrr/analysis/coverage.h"
#include "ncclrr/analysis/logical_identity.h"
#include "ncclrr/trace/describe.h"
#include "tensor_ids.h"

namespace ncclrr::replay {
namespace {

using analysis::CallRef;
using analysis::CommModel;
using analysis::RankView;

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 29);
}

bool InPlace(const CallRecord& c, const PlanCall& p) {
  if ((c.flags & call_flags::kInPlace) || static_cast<Api>(c.api) == Api::kBcast) return true;
  const uint64_t size = DtypeSize(c.dtype);
  switch (p.api) {
    case Api::kAllGather:
      return c.sendbuff == c.recvbuff + static_cast<uint64_t>(c.rank) * c.count * size;
    case Api::kReduceScatter:
      return c.recvbuff == c.sendbuff + static_cast<uint64_t>(c.rank) * c.count * size;
    case Api::kSend:
    case Api::kRecv:
      return false;
    default:
      return c.sendbuff != 0 && c.sendbuff == c.recvbuff;
  }
}

class PlanBuilder {
 public:
  explicit PlanBuilder(const analysis::TraceModel& m)
      : m_(m),
        identity_(analysis::LogicalIdentity::Compute(m)),
        explained_(analysis::ExplainedPositions(m)) {}

  StatusOr<ReplayPlan> Build() {
    plan_.model = &m_;
    plan_.comms.resize(m_.comms().size());
    NCCLRR_RETURN_IF_ERROR(CheckComms());
    if (!any_calls_)
      return InvalidArgument(
          "the trace holds no collective or point-to-point calls: nothing to replay (is it the "
          "trace of a process that used NCCL? `ncclrr info DIR` lists what each file holds)");
    if (std::none_of(plan_.comms.begin(), plan_.comms.end(),
                     [](const PlanComm& pc) { return pc.used; }))
      return InvalidArgument(
          "the trace is incomplete: no call of it is held by the files of every rank that takes "
          "part in it, so nothing can be replayed without making up hangs. " +
          Join(left_out_why_, ". ") +
          ". Record again without --ring (or with a larger ring) and let the job finish, or "
          "stop it with SIGTERM or SIGINT, which write every call; `ncclrr check DIR` still "
          "reports what the files hold");
    AssignActors();
    NCCLRR_RETURN_IF_ERROR(CheckOneRankPerActor());
    for (size_t ci = 0; ci < m_.comms().size(); ++ci)
      if (plan_.comms[ci].used) AddComm(ci);
    for (const PlanComm& pc : plan_.comms) plan_.steps = std::max(plan_.steps, pc.loop_steps);
    MatchP2p();
    BuildUnits();
    OrderLogical();
    for (const TraceFile& f : m_.dir().files)
      plan_.recorded_nccl_version = std::max(plan_.recorded_nccl_version, f.nccl_version);
    AddNotes();
    plan_.left_out_calls = left_out_;
    return std::move(plan_);
  }

 private:
  Status CheckComms() {
    coverage_.resize(m_.comms().size());
    for (size_t ci = 0; ci < m_.comms().size(); ++ci) {
      const CommModel& c = m_.comms()[ci];
      bool used = false;
      for (const RankView& r : c.ranks) used |= !r.collectives.empty() || !r.p2p.empty();
      if (!used) continue;
      any_calls_ = true;
      const std::string label = LabelOf(c);
      for (const std::string& p : c.problems)
        if (p.find("claimed by two") != std::string::npos ||
            p.find("from two processes") != std::string::npos)
          return InvalidArgument(label + ": " + p +
                                 "; the replay needs one process per rank (were files of two "
                                 "different runs copied into one directory?)");
      for (const RankView& r : c.ranks)
        if (!r.has_file())
          return InvalidArgument(
              label + " has " + std::to_string(c.nranks) +
              " ranks but no process file holds rank " + std::to_string(r.rank) +
              ": the replay needs every rank's calls (copy that process's .ncclrr file into the "
              "trace directory; `ncclrr check` explains what the other ranks did)");
      coverage_[ci] = analysis::CoverageOf(m_, ci);
      plan_.comms[ci].used = CountLeftOut(ci) < CountCalls(c);
    }
    return Status::Ok();
  }

  static uint64_t CountCalls(const CommModel& c) {
    uint64_t n = 0;
    for (const RankView& r : c.ranks) n += r.collectives.size() + r.p2p.size();
    return n;
  }

  // A send or receive is replayed when its partner is in the trace, or when the partner's file
  // holds every call its process made (then the partner never issued it: a real mismatch), or
  // lacks only its unflushed tail and the partner's process was seen alive long after this call
  // (a hung rank, killed later: the partner call was not issued, as coverage reads collectives).
  bool P2pHeld(size_t ci, const RankView& r, const analysis::P2pCall& p) const {
    const CommModel& c = m_.comms()[ci];
    if (p.peer < 0 || p.peer >= static_cast<int>(c.ranks.size())) return true;
    const RankView& peer = c.ranks[static_cast<size_t>(p.peer)];
    if (!peer.has_file()) return true;
    const analysis::FileView& pf = m_.files()[peer.file];
    if (!analysis::FileMayLackCalls(pf)) return true;
    for (const analysis::P2pCall& q : peer.p2p)
      if (q.peer == r.rank && q.send != p.send && q.pair_seq == p.pair_seq) return true;
    const bool only_tail = !pf.ring_mode && !pf.torn && pf.bad_frames == 0 && pf.dropped == 0 &&
                           pf.write_error.empty() && pf.unplaceable_calls == 0;
    return only_tail && pf.last_alive_ns - p.time_ns >= analysis::kUnflushedSlackNs;
  }

  // Calls of communicator `ci` outside the part every rank's file holds (Coverage), counted once
  // per communicator and remembered for the notes.
  uint64_t CountLeftOut(size_t ci) {
    const CommModel& c = m_.comms()[ci];
    const analysis::CommCoverage& cov = coverage_[ci];
    uint64_t colls = 0, p2p = 0;
    for (const RankView& r : c.ranks) {
      for (const analysis::CollectiveSlot& s : r.collectives) colls += !cov.Holds(s.seq);
      for (const analysis::P2pCall& p : r.p2p) p2p += !P2pHeld(ci, r, p);
    }
    if (colls + p2p == 0) return 0;
    std::string why = Join(cov.reasons, "; ");
    if (p2p > 0)
      why += (why.empty() ? "" : "; ") + std::to_string(p2p) +
             " send/recv call(s) whose partner's file, which may lack calls, does not hold them";
    std::string held;
    if (colls > 0 && !cov.nothing && cov.first < cov.end)
      held = " (collectives from seq " + std::to_string(cov.first) +
             (cov.end == kNoSeq ? " on)" : " to " + std::to_string(cov.end - 1) + ")");
    left_out_ += colls + p2p;
    left_out_why_.push_back(LabelOf(c) + ": " + why);
    plan_.notes.push_back("the trace is incomplete: " + LabelOf(c) +
                          " replays only what every rank's file holds" + held + "; " +
                          std::to_string(colls + p2p) +
                          " call(s) outside it are left out, so that no hang or mismatch is made "
                          "up where a file ends: " +
                          why);
    return colls + p2p;
  }

  static std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
    std::string s;
    for (const std::string& p : parts) s += (s.empty() ? "" : sep) + p;
    return s;
  }

  static std::string LabelOf(const CommModel& c) {
    return "communicator " + Hex64(c.id) + (c.name.empty() ? "" : " (\"" + c.name + "\")");
  }

  void AssignActors() {
    std::map<std::pair<uint32_t, int>, uint32_t> index;
    for (size_t ci = 0; ci < m_.comms().size(); ++ci)
      if (plan_.comms[ci].used)
        for (const RankView& r : m_.comms()[ci].ranks)
          index.emplace(std::make_pair(static_cast<uint32_t>(r.file), r.device), 0);
    for (auto& [key, idx] : index) {
      idx = static_cast<uint32_t>(plan_.actors.size());
      PlanActor a;
      a.file = key.first;
      a.device = key.second;
      a.label = m_.files()[key.first].name + " device " + std::to_string(key.second);
      plan_.actors.push_back(a);
    }
    actor_index_ = std::move(index);
  }

  // One thread (one GPU) per actor issues its calls in order; two ranks of one communicator on
  // it would wait for each other.
  Status CheckOneRankPerActor() const {
    for (size_t ci = 0; ci < m_.comms().size(); ++ci) {
      if (!plan_.comms[ci].used) continue;
      std::map<uint32_t, int> rank_of_actor;
      for (const RankView& r : m_.comms()[ci].ranks)
        if (auto [it, added] = rank_of_actor.emplace(ActorOf(r), r.rank); !added)
          return Unsupported("communicator " + Hex64(m_.comms()[ci].id) + ": ranks " +
                             std::to_string(it->second) + " and " + std::to_string(r.rank) +
                             " were both recorded on " + plan_.actors[it->first].label +
                             "; the replay gives each process and device one thread, so such a "
                             "trace cannot be replayed");
    }
    return Status::Ok();
  }

  uint32_t ActorOf(const RankView& r) const {
    return actor_index_.at({static_cast<uint32_t>(r.file), r.device});
  }

  PlanCall MakeCall(size_t ci, const RankView& r, CallRef ref, int64_t time_ns) {
    const CommModel& c = m_.comms()[ci];
    const CallRecord& rec = m_.call(ref);
    PlanCall p;
    p.ref = ref;
    p.comm = static_cast<uint32_t>(ci);
    p.rank = r.rank;
    p.actor = ActorOf(r);
    p.api = CanonicalApi(static_cast<Api>(rec.api));
    p.dtype = rec.dtype;
    p.flags = rec.flags;
    p.op = rec.op;
    // NCCL's profiler plugin (the route for statically linked NCCL) reports no reduction op.
    if (Reduces(p.api) && rec.op < 0 && !(rec.flags & call_flags::kPreMulSum)) {
      p.op = static_cast<int32_t>(RedOp::kSum);
      ++unknown_ops_;
    }
    p.root_peer = rec.root_peer;
    // Flight Recorder dumps (ncclrr import-fr) record no root.
    if (IsRooted(p.api) && rec.root_peer < 0) {
      p.root_peer = 0;
      ++unknown_roots_;
    }
    p.count = rec.count;
    CallRecord rooted = rec;  // the buffer sizes follow the root replayed
    rooted.root_peer = IsRooted(p.api) ? p.root_peer : rec.root_peer;
    const analysis::CollectiveShape shape = analysis::ShapeOf(rooted, c.nranks);
    p.send_elems = shape.send_elems;
    p.recv_elems = shape.recv_elems;
    p.in_place = InPlace(rec, p);
    if (rec.flags & call_flags::kPreMulSum)
      p.scalar = (rec.flags & call_flags::kScalarOnDevice) ? 1.0 : rec.scalar;
    p.time_ns = time_ns;
    p.stream = rec.stream;
    p.tid = rec.tid;
    return p;
  }

  void AddComm(size_t ci) {
    const CommModel& c = m_.comms()[ci];
    PlanComm& pc = plan_.comms[ci];
    pc.id = c.id;
    pc.lineage = c.lineage;
    pc.name = c.name;
    pc.nranks = static_cast<int>(c.ranks.size());
    pc.actor_of_rank.resize(c.ranks.size());
    pc.device_of_rank.resize(c.ranks.size());
    if (c.origin == CommOrigin::kSplit || c.origin == CommOrigin::kShrink) ++rebuilt_children_;
    TensorIds ids = ReplayTensorIds(m_, identity_, ci);
    SwapToldByData(ci, &ids);
    if (ids.from_first_step) ++first_step_identity_;
    std::map<std::pair<uint32_t, uint32_t>, uint32_t> logical_of;  // (tensor, step)
    std::map<uint64_t, std::map<uint32_t, int>> logical_at_seq;    // recorded seq -> votes
    std::vector<uint32_t> unknown;  // calls whose tensor the identity could not establish
    // [rank][tensor] -> the recorded seqs of its occurrences, and the calls
    std::vector<std::map<uint32_t, std::vector<std::pair<uint64_t, uint32_t>>>> occurrences(
        c.ranks.size());
    // The reference rank's calls replayed: (slot, call), slot by slot.
    std::vector<std::pair<size_t, uint32_t>> reference_calls;
    for (const RankView& r : c.ranks) {
      pc.actor_of_rank[r.rank] = ActorOf(r);
      pc.device_of_rank[r.rank] = r.device;
      for (size_t k = 0; k < r.collectives.size(); ++k) {
        const analysis::CollectiveSlot& s = r.collectives[k];
        if (!coverage_[ci].Holds(s.seq)) continue;
        PlanCall p = MakeCall(ci, r, s.call, m_.SlotTime(s));
        p.recorded_seq = s.seq;
        p.launch = s.launch;
        const uint32_t tensor =
            Credible(ids, ci, r, k) ? ids.of_slot[r.rank][k] : analysis::kNoLogicalId;
        const uint32_t idx = static_cast<uint32_t>(plan_.calls.size());
        plan_.calls.push_back(p);
        if (r.rank == ids.reference_rank) reference_calls.push_back({k, idx});
        if (tensor == analysis::kNoLogicalId)
          unknown.push_back(idx);
        else
          occurrences[r.rank][tensor].push_back({s.seq, idx});
      }
      for (const analysis::P2pCall& pp : r.p2p) {
        if (!P2pHeld(ci, r, pp)) continue;
        if (m_.call(pp.call).capture == 1) {
          ++graph_p2p_skipped_;
          continue;
        }
        PlanCall p = MakeCall(ci, r, pp.call, pp.time_ns);
        p.recorded_seq = pp.pair_seq;
        p.step = static_cast<uint32_t>(pp.pair_seq);
        plan_.calls.push_back(p);
      }
    }
    // Steps: each occurrence of a tensor is matched to the reference rank's occurrence nearest
    // in recorded position, so a rank that skipped one keeps the right step for the later ones.
    const auto& ref = occurrences[ids.reference_rank];
    for (auto& per_tensor : occurrences)
      for (auto& [tensor, occ] : per_tensor) {
        const auto it = ref.find(tensor);
        const size_t n_ref = it == ref.end() ? 0 : it->second.size();
        size_t j = 0, extra = 0;
        for (const auto& [seq_binding, idx] : occ) {
          const uint64_t seq = seq_binding;  // a plain variable: lambdas capture it everywhere
          uint32_t step;
          if (j < n_ref) {
            auto dist = [&](size_t k) {
              const uint64_t r = it->second[k].first;
              return r > seq ? r - seq : seq - r;
            };
            while (j + 1 < n_ref && dist(j + 1) < dist(j)) ++j;
            step = static_cast<uint32_t>(j++);
          } else {
            step = static_cast<uint32_t>(n_ref + extra++);
          }
          const uint32_t l = Join(pc, logical_of, tensor, step, idx);
          logical_at_seq[seq][l]++;
        }
      }
    // A call of unknown identity (e.g. its count differs from every other rank's) means what
    // NCCL paired it with: the logical call most ranks issued at its recorded position.
    for (uint32_t idx : unknown) {
      PlanCall& p = plan_.calls[idx];
      uint32_t best = kNone;
      int votes = 0;
      for (const auto& [l, n] : logical_at_seq[p.recorded_seq])
        if (n > votes && pc.logical[l].call_of_rank[p.rank] == kNone) {
          best = l;
          votes = n;
        }
      if (best != kNone) {
        p.logical = best;
        p.step = pc.logical[best].step;
        pc.logical[best].call_of_rank[p.rank] = idx;
      } else {
        Join(pc, logical_of, kNone, static_cast<uint32_t>(p.recorded_seq), idx);
      }
    }
    for (LogicalColl& l : pc.logical) ChooseArguments(l);
    PlaceInLoop(ci, ids, reference_calls);
  }

  // Steps as the user knows them: the loop of the reference rank's calls (loop_steps.h), found
  // from its logical tensors where they recur (persistent buffers: two same-size tensors per
  // step are two calls of one step, not two steps), else from the calls' shapes (fresh buffers).
  void PlaceInLoop(size_t ci, const TensorIds& ids,
                   const std::vector<std::pair<size_t, uint32_t>>& reference_calls) {
    PlanComm& pc = plan_.comms[ci];
    const analysis::CommIdentity& identity = identity_.comm(ci);
    const std::vector<uint32_t>& tensors = ids.of_slot[ids.reference_rank];
    const size_t ref = static_cast<size_t>(ids.reference_rank);
    if (ref >= identity.shapes.size() || tensors.size() != identity.shapes[ref].size()) return;
    std::vector<uint64_t> shapes, keys;
    for (const auto& [slot, idx] : reference_calls) {
      if (slot >= tensors.size()) return;
      shapes.push_back(identity.shapes[ref][slot]);
      keys.push_back(Mix(shapes.back(), tensors[slot]));
    }
    LoopSteps loop = FindLoop(keys);
    if (!loop.found()) loop = FindLoop(shapes);
    if (!loop.found() || loop.steps == 0) return;
    pc.loop_period = static_cast<uint32_t>(loop.period);
    pc.loop_steps = loop.steps;
    for (size_t k = 0; k < reference_calls.size(); ++k) {
      const uint32_t l = plan_.calls[reference_calls[k].second].logical;
      if (l == kNone || loop.step_of[k] == kNotInLoop) continue;
      pc.logical[l].loop_step = loop.step_of[k];
      pc.logical[l].loop_call = loop.call_of[k];
    }
  }

  // A reordering only the sketched data tell (the identity has the calls for the same tensors,
  // as buffers allocated in issue order make them look): each of the rank's calls takes the
  // tensor the reference issued where the data say it belongs, so the recorded order replays
  // what NCCL paired and the canonical order puts them back.
  void SwapToldByData(size_t ci, TensorIds* ids) const {
    const CommModel& c = m_.comms()[ci];
    if (identity_.comm(ci).reference_rank != ids->reference_rank) return;
    const RankView& ref = c.ranks[ids->reference_rank];
    auto slot = [](const RankView& v, uint64_t seq) -> std::optional<size_t> {
      const analysis::CollectiveSlot* s = v.AtSeq(seq);
      if (!s) return std::nullopt;
      return static_cast<size_t>(s - v.collectives.data());
    };
    for (const analysis::Explained::DataSwap& d : explained_.data_swaps) {
      if (d.comm != ci || d.rank < 0 || static_cast<size_t>(d.rank) >= c.ranks.size()) continue;
      const RankView& r = c.ranks[static_cast<size_t>(d.rank)];
      const auto a = slot(r, d.seq);
      const auto rb = slot(ref, d.other);
      if (!a || !rb) continue;
      ids->of_slot[r.rank][*a] = ids->of_slot[ref.rank][*rb];
    }
  }

  // Whether slot k of rank r keeps its tensor id where it differs from the reference rank's at
  // the same position: only where the check explained a difference there (a reordering, a
  // skipped call, a hang; analysis::ExplainedPositions). Real jobs reuse the addresses of fresh
  // buffers (a loss tensor one step, the same block four steps later), and the identity then
  // gives a call a tensor that only its key's other occurrence is; replaying on that, a clean
  // DDP job's calls came out "wrong" and a pipeline job's canonical order hung. The check weighs
  // that evidence (confidence floors, crossed buffers, call sites, data) and reports nothing
  // there; the replay follows it, so the call means what NCCL paired it with.
  bool Credible(const TensorIds& ids, size_t ci, const RankView& r, size_t k) const {
    const uint32_t tensor = ids.of_slot[r.rank][k];
    if (r.rank == ids.reference_rank || tensor == analysis::kNoLogicalId) return true;
    const uint64_t seq = r.collectives[k].seq;
    const RankView& ref = m_.comms()[ci].ranks[ids.reference_rank];
    const analysis::CollectiveSlot* at = ref.AtSeq(seq);
    if (at == nullptr) return true;
    const uint32_t ref_tensor =
        ids.of_slot[ref.rank][static_cast<size_t>(at - ref.collectives.data())];
    if (ref_tensor == tensor) return true;
    auto comm = explained_.positions.find(ci);
    if (comm == explained_.positions.end()) return false;
    auto it = comm->second.upper_bound(seq);
    return it != comm->second.begin() && std::prev(it)->second >= seq;
  }

  // Adds call `idx` to the logical call (tensor, step), creating it on first use.
  uint32_t Join(PlanComm& pc, std::map<std::pair<uint32_t, uint32_t>, uint32_t>& logical_of,
                uint32_t tensor, uint32_t step, uint32_t idx) {
    auto [it, added] = logical_of.try_emplace({tensor, step}, pc.logical.size());
    if (added) {
      LogicalColl l;
      l.tensor = tensor;
      l.step = step;
      l.call_of_rank.assign(static_cast<size_t>(pc.nranks), kNone);
      l.data_key = Mix(Mix(Mix(pc.id, pc.lineage), tensor), step);
      pc.logical.push_back(std::move(l));
    }
    PlanCall& p = plan_.calls[idx];
    p.logical = it->second;
    p.step = step;
    pc.logical[it->second].call_of_rank[p.rank] = idx;
    return it->second;
  }

  // The arguments that define the reference: the most common among the participants (ties: the
  // lowest rank's), and whether the participants disagree at all.
  void ChooseArguments(LogicalColl& l) {
    std::map<std::tuple<uint16_t, uint64_t, uint8_t, int32_t, int>, std::pair<int, uint32_t>> votes;
    for (uint32_t idx : l.call_of_rank) {
      if (idx == kNone) continue;
      const PlanCall& p = plan_.calls[idx];
      const int root = IsRooted(p.api) ? p.root_peer : -1;
      const int32_t op = (p.flags & call_flags::kPreMulSum) ? -2 : p.op;
      auto [it, added] = votes.try_emplace(
          std::make_tuple(static_cast<uint16_t>(p.api), p.count, p.dtype, op, root), 0, idx);
      it->second.first++;
    }
    int best = 0;
    for (const auto& [key, v] : votes)
      if (v.first > best ||
          (v.first == best && plan_.calls[v.second].rank < plan_.calls[l.args].rank)) {
        best = v.first;
        l.args = v.second;
      }
    l.args_differ = votes.size() > 1;
  }

  void MatchP2p() {
    // (comm, sender, receiver, index) -> call, per direction.
    std::map<std::tuple<uint32_t, int, int, uint64_t>, uint32_t> sends, recvs;
    for (uint32_t i = 0; i < plan_.calls.size(); ++i) {
      const PlanCall& p = plan_.calls[i];
      if (p.api == Api::kSend) sends[{p.comm, p.rank, p.root_peer, p.recorded_seq}] = i;
      if (p.api == Api::kRecv) recvs[{p.comm, p.root_peer, p.rank, p.recorded_seq}] = i;
    }
    for (const auto& [key, s] : sends)
      if (auto it = recvs.find(key); it != recvs.end()) {
        plan_.calls[s].partner = it->second;
        plan_.calls[it->second].partner = s;
      }
  }

  // Units: a call alone, or every call of one group (same file, group id) or of one graph launch.
  void BuildUnits() {
    std::vector<std::vector<uint32_t>> by_actor(plan_.actors.size());
    for (uint32_t i = 0; i < plan_.calls.size(); ++i) by_actor[plan_.calls[i].actor].push_back(i);
    for (uint32_t a = 0; a < by_actor.size(); ++a) {
      auto& calls = by_actor[a];
      std::stable_sort(calls.begin(), calls.end(), [&](uint32_t x, uint32_t y) {
        const PlanCall& p = plan_.calls[x];
        const PlanCall& q = plan_.calls[y];
        return std::tie(p.time_ns, p.launch, p.ref.index) <
               std::tie(q.time_ns, q.launch, q.ref.index);
      });
      std::map<std::tuple<int, uint64_t, uint32_t>, uint32_t> unit_of;  // (kind, id, launch)
      for (uint32_t idx : calls) {
        PlanCall& p = plan_.calls[idx];
        const CallRecord& rec = m_.call(p.ref);
        std::tuple<int, uint64_t, uint32_t> key{0, 0, 0};
        if (p.launch > 0)
          key = {1, rec.graph_id, p.launch};
        else if (rec.group_id != 0)
          key = {2, rec.group_id, 0};
        uint32_t u = kNone;
        if (std::get<0>(key) != 0) {
          auto it = unit_of.find(key);
          if (it != unit_of.end()) u = it->second;
        }
        if (u == kNone) {
          u = static_cast<uint32_t>(plan_.units.size());
          PlanUnit unit;
          unit.group = std::get<0>(key) != 0;
          unit.actor = a;
          unit.time_ns = p.time_ns;
          unit.tid = p.tid;
          unit.stream = p.stream;
          plan_.units.push_back(unit);
          plan_.actors[a].units.push_back(u);
          if (unit.group) unit_of[key] = u;
        }
        plan_.units[u].calls.push_back(idx);
        p.unit = u;
        auto& streams = plan_.actors[a].streams;
        if (std::find(streams.begin(), streams.end(), p.stream) == streams.end())
          streams.push_back(p.stream);
      }
    }
  }

  // Canonical order per communicator: by the median recorded position of the logical call across
  // its ranks (ties: the lowest participating rank's position), so that a rank that moved a call
  // is outvoted. Keys on the common timeline (median issue time, made monotone along the
  // communicator's order) let ranks merge several communicators in one consistent order.
  void OrderLogical() {
    for (PlanComm& pc : plan_.comms) {
      if (!pc.used) continue;
      struct Key {
        uint64_t median_seq, first_seq;
        int64_t median_time;
        uint32_t index;
      };
      std::vector<Key> keys;
      for (uint32_t i = 0; i < pc.logical.size(); ++i) {
        std::vector<uint64_t> seqs;
        std::vector<int64_t> times;
        for (uint32_t idx : pc.logical[i].call_of_rank)
          if (idx != kNone) {
            seqs.push_back(plan_.calls[idx].recorded_seq);
            times.push_back(plan_.calls[idx].time_ns);
          }
        const uint64_t first = seqs.front();
        std::sort(seqs.begin(), seqs.end());
        std::sort(times.begin(), times.end());
        keys.push_back({seqs[(seqs.size() - 1) / 2], first, times[(times.size() - 1) / 2], i});
      }
      std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
        return std::tie(a.median_seq, a.first_seq, a.index) <
               std::tie(b.median_seq, b.first_seq, b.index);
      });
      std::vector<LogicalColl> sorted;
      std::vector<uint32_t> new_index(pc.logical.size());
      double last = -1e300;
      for (const Key& k : keys) {
        new_index[k.index] = static_cast<uint32_t>(sorted.size());
        sorted.push_back(std::move(pc.logical[k.index]));
        last = std::max(last, static_cast<double>(k.median_time));
        sorted.back().canonical_key = last;
      }
      pc.logical = std::move(sorted);
      for (const LogicalColl& l : pc.logical)
        for (uint32_t idx : l.call_of_rank)
          if (idx != kNone) plan_.calls[idx].logical = new_index[plan_.calls[idx].logical];
    }
  }

  void AddNotes() {
    if (rebuilt_children_)
      plan_.notes.push_back(std::to_string(rebuilt_children_) +
                            " communicator(s) created by ncclCommSplit/ncclCommShrink are rebuilt "
                            "with ncclCommInitRank over the same ranks (pairing is unchanged)");
    uint64_t launched = 0, device_scalars = 0;
    for (const PlanCall& p : plan_.calls) {
      launched += p.launch > 0;
      device_scalars +=
          (p.flags & call_flags::kPreMulSum) && (p.flags & call_flags::kScalarOnDevice);
    }
    if (launched)
      plan_.notes.push_back(std::to_string(launched) +
                            " call(s) from CUDA-graph launches are replayed as eager calls at the "
                            "positions the launches took");
    if (device_scalars)
      plan_.notes.push_back(std::to_string(device_scalars) +
                            " PreMulSum call(s) had a device-resident scalar the trace does not "
                            "hold: replayed with scalar 1");
    if (graph_p2p_skipped_)
      plan_.notes.push_back(std::to_string(graph_p2p_skipped_) +
                            " send/recv call(s) captured in CUDA graphs are not replayed");
    if (unknown_ops_)
      plan_.notes.push_back(std::to_string(unknown_ops_) +
                            " reducing call(s) have no recorded reduction op (NCCL's profiler "
                            "plugin and Flight Recorder dumps do not report it): replayed as sum, "
                            "so a recorded max, min or prod would be verified as a sum");
    if (unknown_roots_)
      plan_.notes.push_back(std::to_string(unknown_roots_) +
                            " rooted call(s) have no recorded root (Flight Recorder dumps do not "
                            "report it): replayed with root 0");
    if (first_step_identity_)
      plan_.notes.push_back(
          std::to_string(first_step_identity_) +
          " communicator(s): logical tensors taken from the first step (the buffer votes tied)");
  }

  uint64_t unknown_ops_ = 0;
  uint64_t unknown_roots_ = 0;
  const analysis::TraceModel& m_;
  const analysis::LogicalIdentity identity_;
  const analysis::Explained explained_;  // what the check explained
  ReplayPlan plan_;
  std::map<std::pair<uint32_t, int>, uint32_t> actor_index_;
  bool any_calls_ = false;
  std::vector<analysis::CommCoverage> coverage_;  // per communicator
  uint64_t left_out_ = 0;                         // calls outside what every rank's file holds
  std::vector<std::string> left_out_why_;  // "communicator 0x... (\"dp\"): rank 1's file ..."
  uint64_t rebuilt_children_ = 0, graph_p2p_skipped_ = 0, first_step_identity_ = 0;
};

}  // namespace

std::string PlanComm::Label() const {
  return "comm " + Hex64(id) + (name.empty() ? "" : " (" + name + ")");
}

StatusOr<ReplayPlan> BuildPlan(const analysis::TraceModel& model) {
  return PlanBuilder(model).Build();
}

std::string DescribeCall(const ReplayPlan& plan, const PlanCall& c) {
  return analysis::ShortCall(plan.model->call(c.ref));
}

std::string DescribeLogical(const ReplayPlan& plan, const PlanCall& c) {
  if (IsP2p(c.api)) {
    const int from = c.api == Api::kSend ? c.rank : c.root_peer;
    const int to = c.api == Api::kSend ? c.root_peer : c.rank;
    return "message " + std::to_string(c.step) + " from rank " + std::to_string(from) +
           " to rank " + std::to_string(to);
  }
  return DescribeLogical(plan, c.comm, c.logical);
}

std::string DescribeLogical(const ReplayPlan& plan, uint32_t comm, uint32_t logical) {
  if (logical == kNone) return "a call";
  const PlanComm& pc = plan.comms[comm];
  const LogicalColl& l = pc.logical[logical];
  if (pc.loop_period > 0) {
    if (l.loop_step != kNone)
      return "step " + std::to_string(l.loop_step) + ", call " + std::to_string(l.loop_call);
    const PlanCall& first = plan.calls[l.call_of_rank[0] != kNone ? l.call_of_rank[0] : l.args];
    return "setup, recorded seq " + std::to_string(first.recorded_seq);
  }
  if (l.tensor == kNone) return "recorded seq " + std::to_string(l.step);
  return "tensor " + std::to_string(l.tensor) + ", occurrence " + std::to_string(l.step);
}

uint32_t StepOf(const ReplayPlan& plan, const PlanCall& c) {
  if (!c.collective() || c.logical == kNone) return kNone;
  return plan.comms[c.comm].logical[c.logical].loop_step;
}

}  // namespace ncclrr::replay
