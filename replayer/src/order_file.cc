// Order files (file:F). The format is documented in docs/replay.md:
//
//   {"format": "ncclrr-order", "version": 1,
//    "ranks": [{"comm": "0x5a17c0de00000001", "rank": 1, "order": [1, 0, 2, 3]},
//              {"comm": "dp", "rank": 0, "sequence": [{"comm": "0x..", "seq": 0},
//                                                     {"comm": "0x..", "send_to": 1, "n": 0}]}]}
//
// "order" permutes one communicator rank's collectives (recorded seqs) in the places that rank's
// process gave them; "sequence" spells out the whole issue order of the process and device that
// holds the communicator rank.
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "json.h"
#include "ncclrr/trace/describe.h"
#include "order.h"

namespace ncclrr::replay {
namespace {

class OrderFileReader {
 public:
  OrderFileReader(const ReplayPlan& plan, std::string path) : plan_(plan), path_(std::move(path)) {
    for (const PlanCall& c : plan.calls) {
      const int kind = c.collective() ? 0 : c.api == Api::kSend ? 1 : 2;
      index_[{c.comm, c.rank, kind, kind ? c.root_peer : -1, c.recorded_seq}] = c.unit;
    }
  }

  StatusOr<IssueOrder> Read() {
    std::ifstream in(path_);
    if (!in)
      return NotFound("cannot open order file '" + path_ +
                      "': expected a JSON file as described in docs/replay.md");
    std::stringstream text;
    text << in.rdbuf();
    auto doc = Json::Parse(text.str());
    if (!doc.ok()) return Bad(doc.status().message());
    const Json& root = *doc;
    if (!root.is(Json::Type::kObject)) return Bad("expected a JSON object at the top");
    const Json* format = root.Find("format");
    if (!format || format->str() != "ncclrr-order")
      return Bad("expected \"format\": \"ncclrr-order\" at the top");
    const Json* version = root.Find("version");
    uint64_t v = 0;
    if (!version || !version->AsUint(&v) || v != 1)
      return Bad("expected \"version\": 1 (this ncclrr reads order files of version 1)");
    for (const auto& [key, value] : root.members())
      if (key != "format" && key != "version" && key != "ranks")
        return Bad("unknown member \"" + key + "\" (expected format, version, ranks)");
    const Json* ranks = root.Find("ranks");
    if (!ranks || !ranks->is(Json::Type::kArray))
      return Bad("expected \"ranks\": [ ... ] listing the ranks whose order changes");
    order_ = RecordedOrder(plan_);
    for (const Json& entry : ranks->items()) NCCLRR_RETURN_IF_ERROR(Entry(entry));
    order_.moved_calls = MovedCalls(plan_, order_);
    return std::move(order_);
  }

 private:
  Status Bad(const std::string& what, int line = 0) const {
    return InvalidArgument("order file '" + path_ + "'" +
                           (line ? ", line " + std::to_string(line) : std::string()) + ": " + what +
                           " (docs/replay.md describes the format)");
  }

  StatusOr<uint32_t> Comm(const Json& e) const {
    const Json* c = e.Find("comm");
    if (!c || !c->is(Json::Type::kString))
      return Bad("expected \"comm\": \"0x<hash>\" or the communicator's name", e.line());
    std::string known;
    for (uint32_t ci = 0; ci < plan_.comms.size(); ++ci) {
      const PlanComm& pc = plan_.comms[ci];
      if (!pc.used) continue;
      if (c->str() == Hex64(pc.id) || (!pc.name.empty() && c->str() == pc.name)) return ci;
      known += (known.empty() ? "" : ", ") + Hex64(pc.id) +
               (pc.name.empty() ? "" : " (" + pc.name + ")");
    }
    return Bad("no communicator \"" + c->str() + "\" in this trace; it has " + known, c->line());
  }

  StatusOr<uint64_t> UintMember(const Json& e, const char* name) const {
    const Json* m = e.Find(name);
    uint64_t v = 0;
    if (!m || !m->AsUint(&v))
      return Bad(std::string("expected \"") + name + "\": a non-negative integer", e.line());
    return v;
  }

  // The unit holding the collective recorded at `seq` on (comm, rank), or an error.
  StatusOr<uint32_t> CollUnit(uint32_t comm, int rank, uint64_t seq, int line) const {
    if (auto it = index_.find({comm, rank, 0, -1, seq}); it != index_.end()) return it->second;
    return Bad(plan_.comms[comm].Label() + " rank " + std::to_string(rank) +
                   " has no recorded collective at seq " + std::to_string(seq),
               line);
  }

  StatusOr<uint32_t> P2pUnit(uint32_t comm, int rank, const Json& ref) const {
    const bool send = ref.Find("send_to") != nullptr;
    const Json* peer_j = ref.Find(send ? "send_to" : "recv_from");
    uint64_t peer = 0;
    if (!peer_j || !peer_j->AsUint(&peer))
      return Bad("expected \"seq\", \"send_to\" or \"recv_from\" in a sequence element",
                 ref.line());
    auto n = UintMember(ref, "n");
    if (!n.ok()) return n.status();
    const CallKey key{comm, rank, send ? 1 : 2, static_cast<int>(peer), *n};
    if (auto it = index_.find(key); it != index_.end()) return it->second;
    return Bad(plan_.comms[comm].Label() + " rank " + std::to_string(rank) + " has no " +
                   (send ? "send to" : "recv from") + " rank " + std::to_string(peer) + " number " +
                   std::to_string(*n),
               ref.line());
  }

  Status Entry(const Json& e) {
    if (!e.is(Json::Type::kObject)) return Bad("expected an object in \"ranks\"", e.line());
    auto comm = Comm(e);
    if (!comm.ok()) return comm.status();
    auto rank = UintMember(e, "rank");
    if (!rank.ok()) return rank.status();
    const PlanComm& pc = plan_.comms[*comm];
    if (*rank >= static_cast<uint64_t>(pc.nranks))
      return Bad(pc.Label() + " has ranks 0.." + std::to_string(pc.nranks - 1) + ", not " +
                     std::to_string(*rank),
                 e.line());
    const int r = static_cast<int>(*rank);
    const Json* order = e.Find("order");
    const Json* seq = e.Find("sequence");
    if ((order != nullptr) == (seq != nullptr))
      return Bad(
          "expected exactly one of \"order\" (recorded seqs of this communicator rank) "
          "and \"sequence\" (every call of its process and device)",
          e.line());
    const uint32_t actor = pc.actor_of_rank[r];
    if (!touched_.insert(actor).second)
      return Bad("two entries change the order of " + plan_.actors[actor].label +
                     " (merge them into one \"sequence\")",
                 e.line());
    return order ? Permutation(*comm, r, *order) : Sequence(*comm, r, *seq);
  }

  Status Permutation(uint32_t comm, int rank, const Json& order) {
    if (!order.is(Json::Type::kArray))
      return Bad("\"order\" must be an array of seqs", order.line());
    const uint32_t actor = plan_.comms[comm].actor_of_rank[rank];
    std::vector<uint32_t>& units = order_.units_of_actor[actor];
    // The places this communicator rank's collectives hold among the actor's units.
    std::vector<size_t> places;
    std::set<uint32_t> own;
    for (size_t i = 0; i < units.size(); ++i)
      for (uint32_t idx : plan_.units[units[i]].calls) {
        const PlanCall& c = plan_.calls[idx];
        if (c.comm == comm && c.rank == rank && c.collective()) {
          places.push_back(i);
          own.insert(units[i]);
          break;
        }
      }
    std::vector<uint32_t> wanted;
    std::set<uint32_t> listed;
    for (const Json& item : order.items()) {
      uint64_t s = 0;
      if (!item.AsUint(&s)) return Bad("\"order\" holds a non-integer", item.line());
      auto u = CollUnit(comm, rank, s, item.line());
      if (!u.ok()) return u.status();
      if (!listed.insert(*u).second)
        return Bad("seq " + std::to_string(s) + " is listed twice in \"order\"", item.line());
      wanted.push_back(*u);
    }
    if (wanted.size() != places.size())
      return Bad("\"order\" lists " + std::to_string(wanted.size()) + " calls but " +
                     plan_.comms[comm].Label() + " rank " + std::to_string(rank) + " issued " +
                     std::to_string(places.size()) + ": list every recorded seq exactly once",
                 order.line());
    for (size_t k = 0; k < places.size(); ++k) units[places[k]] = wanted[k];
    return Status::Ok();
  }

  Status Sequence(uint32_t comm, int rank, const Json& seq) {
    if (!seq.is(Json::Type::kArray))
      return Bad("\"sequence\" must be an array of {\"comm\", \"seq\"} objects", seq.line());
    const uint32_t actor = plan_.comms[comm].actor_of_rank[rank];
    std::vector<uint32_t> units;
    std::set<uint32_t> listed;
    for (const Json& ref : seq.items()) {
      if (!ref.is(Json::Type::kObject))
        return Bad("expected an object in \"sequence\"", ref.line());
      auto c = Comm(ref);
      if (!c.ok()) return c.status();
      const PlanComm& pc = plan_.comms[*c];
      int r = -1;  // the rank this actor holds on that communicator
      for (int k = 0; k < pc.nranks; ++k)
        if (pc.actor_of_rank[k] == actor) r = k;
      if (r < 0)
        return Bad(plan_.actors[actor].label + " holds no rank of " + pc.Label(), ref.line());
      StatusOr<uint32_t> u = InvalidArgument("");
      if (ref.Find("seq")) {
        auto s = UintMember(ref, "seq");
        if (!s.ok()) return s.status();
        u = CollUnit(*c, r, *s, ref.line());
      } else {
        u = P2pUnit(*c, r, ref);
      }
      if (!u.ok()) return u.status();
      if (listed.insert(*u).second) units.push_back(*u);  // a group is placed at its first call
    }
    const auto& all = plan_.actors[actor].units;
    if (units.size() != all.size()) {
      std::string missing;
      int shown = 0;
      for (uint32_t u : all) {
        if (listed.count(u) || shown == 3) continue;
        const PlanCall& c = plan_.calls[plan_.units[u].calls.front()];
        missing +=
            std::string(shown++ ? "; " : "") + plan_.comms[c.comm].Label() + " " +
            (c.collective() ? "seq " + std::to_string(c.recorded_seq) : DescribeLogical(plan_, c));
      }
      return Bad("\"sequence\" for " + plan_.actors[actor].label + " lists " +
                     std::to_string(units.size()) + " of its " + std::to_string(all.size()) +
                     " calls (missing: " + missing +
                     "); list every call, or use \"order\" to permute one communicator",
                 seq.line());
    }
    order_.units_of_actor[actor] = std::move(units);
    return Status::Ok();
  }

  // (comm, rank, 0 collective / 1 send / 2 recv, peer, recorded seq) -> unit
  using CallKey = std::tuple<uint32_t, int, int, int, uint64_t>;
  const ReplayPlan& plan_;
  std::string path_;
  std::map<CallKey, uint32_t> index_;
  IssueOrder order_;
  std::set<uint32_t> touched_;
};

}  // namespace

StatusOr<IssueOrder> OrderFromFile(const ReplayPlan& plan, const std::string& path) {
  return OrderFileReader(plan, path).Read();
}

std::string OrderToJson(const ReplayPlan& plan, const IssueOrder& order) {
  Json ranks = Json::Array();
  for (size_t a = 0; a < plan.actors.size(); ++a) {
    if (order.units_of_actor[a] == plan.actors[a].units) continue;
    const PlanCall& first = plan.calls[plan.units[plan.actors[a].units.front()].calls.front()];
    Json entry = Json::Object();
    entry.Set("comm", Json::Str(Hex64(plan.comms[first.comm].id)));
    entry.Set("rank", Json::Int(first.rank));
    Json seq = Json::Array();
    for (uint32_t u : order.units_of_actor[a]) {
      const PlanCall& c = plan.calls[plan.units[u].calls.front()];
      Json ref = Json::Object();
      ref.Set("comm", Json::Str(Hex64(plan.comms[c.comm].id)));
      if (c.collective()) {
        ref.Set("seq", Json::Uint(c.recorded_seq));
      } else {
        ref.Set(c.api == Api::kSend ? "send_to" : "recv_from", Json::Int(c.root_peer));
        ref.Set("n", Json::Uint(c.recorded_seq));
      }
      seq.Push(std::move(ref));
    }
    entry.Set("sequence", std::move(seq));
    ranks.Push(std::move(entry));
  }
  Json root = Json::Object();
  root.Set("format", Json::Str("ncclrr-order"));
  root.Set("version", Json::Int(1));
  root.Set("ranks", std::move(ranks));
  return root.Serialize(-1);
}

}  // namespace ncclrr::replay
