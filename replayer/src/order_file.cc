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
//
// Files are read with nlohmann-json and written with the JsonWriter (docs/design.md, "One home for
// each piece of logic"). Errors about a value cite where it is as a JSON path
// ("ranks[1].order[3]").
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>

#include "ncclrr/base/json_writer.h"
#include "ncclrr/trace/describe.h"
#include "order.h"

namespace ncclrr::replay {
namespace {

// Members keep the file's order, so "unknown member" names the first one the file holds.
using Json = nlohmann::ordered_json;

// An order file needs four levels; far deeper nesting is a wrong file, refused before it is built.
constexpr int kMaxDepth = 64;

// "line 3, column 13: syntax error ..." from "[json.exception.parse_error.101] parse error at
// line 3, column 13: syntax error ...": the position and the reason, without nlohmann's labels.
std::string ParseErrorText(const std::string& what) {
  std::string_view s = what;
  const size_t label_end = s.find("] ");
  if (s.starts_with("[json.exception.") && label_end != std::string_view::npos)
    s.remove_prefix(label_end + 2);
  constexpr std::string_view kAt = "parse error at ";
  if (s.starts_with(kAt)) s.remove_prefix(kAt.size());
  return std::string(s);
}

// One JSON document, or what is wrong with it (where nlohmann-json can say: "line L, column C").
StatusOr<Json> ParseDocument(const std::string& text) {
  bool too_deep = false;
  // Returning false skips a value: a container opened at depth 64 is never built.
  const Json::parser_callback_t limit_depth = [&too_deep](int depth, Json::parse_event_t event,
                                                          Json&) {
    if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) &&
        depth >= kMaxDepth)
      too_deep = true;
    return !too_deep;
  };
  Json doc;
  std::string syntax_error;
  try {
    doc = Json::parse(text, limit_depth);
  } catch (const Json::exception& e) {
    syntax_error = ParseErrorText(e.what());
  }
  // The parser met the deep nesting before any syntax error it threw: that comes first.
  if (too_deep)
    return InvalidArgument("expected at most " + std::to_string(kMaxDepth) +
                           " nested arrays or objects, found deeper nesting");
  if (!syntax_error.empty()) return InvalidArgument(syntax_error);
  return doc;
}

const Json* Find(const Json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// Seqs, ranks and counts: a non-negative integer as written (not "1.0", not "-0").
bool AsUint(const Json* v, uint64_t* out) {
  if (!v || !v->is_number_unsigned()) return false;
  *out = v->get<uint64_t>();
  return true;
}

bool IsString(const Json* v, std::string_view s) {
  return v && v->is_string() && v->get_ref<const std::string&>() == s;
}

// "ranks[1]", "ranks[1].order[3]": where a value is, for messages about it.
std::string Item(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }
std::string Member(const std::string& path, const char* name) { return path + "." + name; }

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
    auto doc = ParseDocument(text.str());
    if (!doc.ok()) return Bad(doc.status().message());
    const Json& root = *doc;
    if (!root.is_object()) return Bad("expected a JSON object at the top");
    if (!IsString(Find(root, "format"), "ncclrr-order"))
      return Bad("expected \"format\": \"ncclrr-order\" at the top");
    uint64_t v = 0;
    if (!AsUint(Find(root, "version"), &v) || v != 1)
      return Bad("expected \"version\": 1 (this ncclrr reads order files of version 1)");
    for (const auto& [key, value] : root.items())
      if (key != "format" && key != "version" && key != "ranks")
        return Bad("unknown member \"" + key + "\" (expected format, version, ranks)");
    const Json* ranks = Find(root, "ranks");
    if (!ranks || !ranks->is_array())
      return Bad("expected \"ranks\": [ ... ] listing the ranks whose order changes");
    order_ = RecordedOrder(plan_);
    for (size_t i = 0; i < ranks->size(); ++i)
      NCCLRR_RETURN_IF_ERROR(Entry((*ranks)[i], Item("ranks", i)));
    order_.moved_calls = MovedCalls(plan_, order_);
    return std::move(order_);
  }

 private:
  // `where`: the JSON path of the value the message is about; empty for the whole file.
  Status Bad(const std::string& what, const std::string& where = "") const {
    return InvalidArgument("order file '" + path_ + "'" + (where.empty() ? "" : ", " + where) +
                           ": " + what + " (docs/replay.md describes the format)");
  }

  StatusOr<uint32_t> Comm(const Json& e, const std::string& where) const {
    const Json* c = Find(e, "comm");
    if (!c || !c->is_string())
      return Bad("expected \"comm\": \"0x<hash>\" or the communicator's name", where);
    const std::string& name = c->get_ref<const std::string&>();
    std::string known;
    for (uint32_t ci = 0; ci < plan_.comms.size(); ++ci) {
      const PlanComm& pc = plan_.comms[ci];
      if (!pc.used) continue;
      if (name == Hex64(pc.id) || (!pc.name.empty() && name == pc.name)) return ci;
      known += (known.empty() ? "" : ", ") + Hex64(pc.id) +
               (pc.name.empty() ? "" : " (" + pc.name + ")");
    }
    return Bad("no communicator \"" + name + "\" in this trace; it has " + known,
               Member(where, "comm"));
  }

  StatusOr<uint64_t> UintMember(const Json& e, const char* name, const std::string& where) const {
    uint64_t v = 0;
    if (!AsUint(Find(e, name), &v))
      return Bad(std::string("expected \"") + name + "\": a non-negative integer", where);
    return v;
  }

  // The unit holding the collective recorded at `seq` on (comm, rank), or an error.
  StatusOr<uint32_t> CollUnit(uint32_t comm, int rank, uint64_t seq,
                              const std::string& where) const {
    if (auto it = index_.find({comm, rank, 0, -1, seq}); it != index_.end()) return it->second;
    return Bad(plan_.comms[comm].Label() + " rank " + std::to_string(rank) +
                   " has no recorded collective at seq " + std::to_string(seq),
               where);
  }

  StatusOr<uint32_t> P2pUnit(uint32_t comm, int rank, const Json& ref,
                             const std::string& where) const {
    const bool send = Find(ref, "send_to") != nullptr;
    uint64_t peer = 0;
    if (!AsUint(Find(ref, send ? "send_to" : "recv_from"), &peer))
      return Bad("expected \"seq\", \"send_to\" or \"recv_from\" in a sequence element", where);
    auto n = UintMember(ref, "n", where);
    if (!n.ok()) return n.status();
    const CallKey key{comm, rank, send ? 1 : 2, static_cast<int>(peer), *n};
    if (auto it = index_.find(key); it != index_.end()) return it->second;
    return Bad(plan_.comms[comm].Label() + " rank " + std::to_string(rank) + " has no " +
                   (send ? "send to" : "recv from") + " rank " + std::to_string(peer) + " number " +
                   std::to_string(*n),
               where);
  }

  Status Entry(const Json& e, const std::string& where) {
    if (!e.is_object()) return Bad("expected an object in \"ranks\"", where);
    auto comm = Comm(e, where);
    if (!comm.ok()) return comm.status();
    auto rank = UintMember(e, "rank", where);
    if (!rank.ok()) return rank.status();
    const PlanComm& pc = plan_.comms[*comm];
    if (*rank >= static_cast<uint64_t>(pc.nranks))
      return Bad(pc.Label() + " has ranks 0.." + std::to_string(pc.nranks - 1) + ", not " +
                     std::to_string(*rank),
                 Member(where, "rank"));
    const int r = static_cast<int>(*rank);
    const Json* order = Find(e, "order");
    const Json* seq = Find(e, "sequence");
    if ((order != nullptr) == (seq != nullptr))
      return Bad(
          "expected exactly one of \"order\" (recorded seqs of this communicator rank) "
          "and \"sequence\" (every call of its process and device)",
          where);
    const uint32_t actor = pc.actor_of_rank[r];
    if (!touched_.insert(actor).second)
      return Bad("two entries change the order of " + plan_.actors[actor].label +
                     " (merge them into one \"sequence\")",
                 where);
    return order ? Permutation(*comm, r, *order, Member(where, "order"))
                 : Sequence(*comm, r, *seq, Member(where, "sequence"));
  }

  Status Permutation(uint32_t comm, int rank, const Json& order, const std::string& where) {
    if (!order.is_array()) return Bad("\"order\" must be an array of seqs", where);
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
    for (size_t i = 0; i < order.size(); ++i) {
      const std::string at = Item(where, i);
      uint64_t s = 0;
      if (!AsUint(&order[i], &s)) return Bad("\"order\" holds a non-integer", at);
      auto u = CollUnit(comm, rank, s, at);
      if (!u.ok()) return u.status();
      if (!listed.insert(*u).second)
        return Bad("seq " + std::to_string(s) + " is listed twice in \"order\"", at);
      wanted.push_back(*u);
    }
    if (wanted.size() != places.size())
      return Bad("\"order\" lists " + std::to_string(wanted.size()) + " calls but " +
                     plan_.comms[comm].Label() + " rank " + std::to_string(rank) + " issued " +
                     std::to_string(places.size()) + ": list every recorded seq exactly once",
                 where);
    for (size_t k = 0; k < places.size(); ++k) units[places[k]] = wanted[k];
    return Status::Ok();
  }

  Status Sequence(uint32_t comm, int rank, const Json& seq, const std::string& where) {
    if (!seq.is_array())
      return Bad("\"sequence\" must be an array of {\"comm\", \"seq\"} objects", where);
    const uint32_t actor = plan_.comms[comm].actor_of_rank[rank];
    std::vector<uint32_t> units;
    std::set<uint32_t> listed;
    for (size_t i = 0; i < seq.size(); ++i) {
      const Json& ref = seq[i];
      const std::string at = Item(where, i);
      if (!ref.is_object()) return Bad("expected an object in \"sequence\"", at);
      auto c = Comm(ref, at);
      if (!c.ok()) return c.status();
      const PlanComm& pc = plan_.comms[*c];
      int r = -1;  // the rank this actor holds on that communicator
      for (int k = 0; k < pc.nranks; ++k)
        if (pc.actor_of_rank[k] == actor) r = k;
      if (r < 0) return Bad(plan_.actors[actor].label + " holds no rank of " + pc.Label(), at);
      StatusOr<uint32_t> u = InvalidArgument("");
      if (Find(ref, "seq")) {
        auto s = UintMember(ref, "seq", at);
        if (!s.ok()) return s.status();
        u = CollUnit(*c, r, *s, at);
      } else {
        u = P2pUnit(*c, r, ref, at);
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
                 where);
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
  std::string out;
  JsonWriter w(&out);
  w.BeginObject().Key("format").Str("ncclrr-order").Key("version").Int(1);
  w.Key("ranks").BeginArray();
  for (size_t a = 0; a < plan.actors.size(); ++a) {
    if (order.units_of_actor[a] == plan.actors[a].units) continue;
    const PlanCall& first = plan.calls[plan.units[plan.actors[a].units.front()].calls.front()];
    w.BeginObject().Key("comm").Str(Hex64(plan.comms[first.comm].id)).Key("rank").Int(first.rank);
    w.Key("sequence").BeginArray();
    for (uint32_t u : order.units_of_actor[a]) {
      const PlanCall& c = plan.calls[plan.units[u].calls.front()];
      w.BeginObject().Key("comm").Str(Hex64(plan.comms[c.comm].id));
      if (c.collective())
        w.Key("seq").Uint(c.recorded_seq);
      else
        w.Key(c.api == Api::kSend ? "send_to" : "recv_from")
            .Int(c.root_peer)
            .Key("n")
            .Uint(c.recorded_seq);
      w.EndObject();
    }
    w.EndArray().EndObject();
  }
  w.EndArray().EndObject();
  return out;
}

}  // namespace ncclrr::replay
