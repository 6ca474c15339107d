#include "stuck.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace ncclrr::replay {
namespace {

class StuckExplainer {
 public:
  StuckExplainer(const ReplayPlan& plan, const IssueOrder& order,
                 const std::vector<uint64_t>& positions, const std::vector<ActorReport>& actors)
      : plan_(plan), order_(order), pos_(positions), actors_(actors) {
    for (size_t a = 0; a < actors.size(); ++a) {
      const auto& units = order.units_of_actor[a];
      for (size_t k = 0; k < actors[a].issued_units && k < units.size(); ++k)
        for (uint32_t idx : plan.units[units[k]].calls) {
          const PlanCall& c = plan.calls[idx];
          if (c.collective()) {
            uint64_t& n = issued_coll_[{c.comm, c.rank}];
            n = std::max(n, pos_[idx] + 1);
            call_at_[{c.comm, c.rank, pos_[idx]}] = idx;
          } else {
            issued_p2p_[{c.comm, c.rank, c.root_peer, static_cast<int>(c.api)}]++;
          }
        }
    }
  }

  std::vector<StuckCall> Explain() {
    for (const ActorReport& r : actors_)
      for (uint32_t u : r.in_flight_heads)
        for (uint32_t idx : plan_.units[u].calls) head_calls_.insert(idx);
    std::vector<std::pair<std::tuple<uint32_t, uint64_t, int>, StuckCall>> out;
    for (size_t a = 0; a < actors_.size(); ++a)
      for (uint32_t u : actors_[a].in_flight_heads) {
        // A group's Send/Recv whose peer posted a match of the same size waits for the rest of
        // the group: only the ones that do not match are listed, unless none does.
        std::vector<std::pair<std::tuple<uint32_t, uint64_t, int>, StuckCall>> matched;
        bool culprit = false;
        for (uint32_t idx : plan_.units[u].calls) {
          const PlanCall& c = plan_.calls[idx];
          StuckCall s;
          s.comm_id = plan_.comms[c.comm].id;
          s.comm_name = plan_.comms[c.comm].name;
          s.seq = pos_[idx];
          s.rank = c.rank;
          s.call = DescribeCall(plan_, c);
          s.why = c.collective() ? WhyCollective(c, s.seq) : WhyP2p(c, s.seq);
          auto& to = !c.collective() && MatchedBySize(c, s.seq) ? matched : out;
          culprit |= &to == &out;
          to.push_back({{c.comm, s.seq, c.rank}, std::move(s)});
        }
        if (!culprit)
          for (auto& m : matched) out.push_back(std::move(m));
      }
    std::sort(out.begin(), out.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
    std::vector<StuckCall> result;
    for (auto& [key, s] : out) result.push_back(std::move(s));
    return result;
  }

 private:
  // The calls at the heads of the streams of the actor holding `rank` of `comm`.
  std::string Heads(uint32_t comm, int rank) const {
    std::string s;
    for (uint32_t u : actors_[plan_.comms[comm].actor_of_rank[rank]].in_flight_heads) {
      const uint32_t idx = plan_.units[u].calls.front();
      const PlanCall& h = plan_.calls[idx];
      s += (s.empty() ? "" : " and at ") + plan_.comms[h.comm].Label() +
           (h.comm == comm ? "" : " (another communicator)") + " seq " + std::to_string(pos_[idx]) +
           " " + DescribeCall(plan_, h);
    }
    return s;
  }

  // Where the actor holding `rank` of `comm` stands.
  std::string Where(uint32_t comm, int rank) const {
    const uint32_t a = plan_.comms[comm].actor_of_rank[rank];
    const ActorReport& r = actors_[a];
    const std::string who = "rank " + std::to_string(rank);
    if (r.waiting_for_memory) return who + " waits for replay memory before issuing more";
    if (!r.in_flight_heads.empty()) return who + " is blocked at " + Heads(comm, rank);
    if (r.issued_units >= order_.units_of_actor[a].size()) {
      auto it = issued_coll_.find({comm, rank});
      const uint64_t n = it == issued_coll_.end() ? 0 : it->second;
      return who + " issued all its calls (" + std::to_string(n) +
             " collectives on this communicator): it never issues this one (a missing call)";
    }
    return who + " has not reached it";
  }

  std::string WhyCollective(const PlanCall& c, uint64_t seq) const {
    const PlanComm& pc = plan_.comms[c.comm];
    std::vector<int> missing;
    std::string queued;  // ranks that issued it behind another call of their stream
    for (int q = 0; q < pc.nranks; ++q) {
      auto it = issued_coll_.find({c.comm, q});
      if (it == issued_coll_.end() || it->second <= seq) {
        missing.push_back(q);
      } else if (!head_calls_.count(call_at_.at({c.comm, q, seq}))) {
        queued += "; rank " + std::to_string(q) + " issued it, queued behind " + Heads(c.comm, q);
      }
    }
    if (!missing.empty()) {
      std::string s = "rank" + std::string(missing.size() > 1 ? "s" : "") + " [";
      for (size_t i = 0; i < missing.size(); ++i) s += (i ? "," : "") + std::to_string(missing[i]);
      s += "] ha" + std::string(missing.size() > 1 ? "ve" : "s") + " not issued seq " +
           std::to_string(seq);
      for (int q : missing) s += "; " + Where(c.comm, q);
      return s + queued;
    }
    if (!queued.empty()) return "not every rank can start seq " + std::to_string(seq) + queued;
    std::set<std::string> shapes;
    std::string list;
    for (int q = 0; q < pc.nranks; ++q) {
      const PlanCall& other = plan_.calls[call_at_.at({c.comm, q, seq})];
      shapes.insert(DescribeCall(plan_, other));
      list += (q ? ", " : "") + std::string("rank ") + std::to_string(q) + " " +
              DescribeCall(plan_, other);
    }
    if (shapes.size() > 1)
      return "every rank issued seq " + std::to_string(seq) +
             " but the calls cannot complete together: " + list;
    return "every rank issued seq " + std::to_string(seq) + " with the same arguments (" + list +
           "), but it did not complete: an earlier call on a shared stream blocks it";
  }

  std::string WhyP2p(const PlanCall& c, uint64_t index) const {
    const int peer = c.root_peer;
    const bool send = c.api == Api::kSend;
    const int other_api = static_cast<int>(send ? Api::kRecv : Api::kSend);
    auto it = issued_p2p_.find({c.comm, peer, c.rank, other_api});
    const uint64_t posted = it == issued_p2p_.end() ? 0 : it->second;
    const std::string what = send ? "receive" : "send";
    if (posted <= index)
      return "rank " + std::to_string(peer) + " has not posted the matching " + what + " (#" +
             std::to_string(index) + "); " + Where(c.comm, peer);
    if (MatchedBySize(c, index))
      return "rank " + std::to_string(peer) + " posted the matching " + what + " (#" +
             std::to_string(index) +
             ") of the same size: it waits for the rest of its group or an earlier call on its "
             "stream";
    return "rank " + std::to_string(peer) + " posted the matching " + what + " (#" +
           std::to_string(index) + "); their sizes or datatypes differ";
  }

  // The peer posted this Send/Recv's match (by per-pair index) with the same size and datatype.
  bool MatchedBySize(const PlanCall& c, uint64_t index) const {
    const bool send = c.api == Api::kSend;
    auto it = issued_p2p_.find(
        {c.comm, c.root_peer, c.rank, static_cast<int>(send ? Api::kRecv : Api::kSend)});
    if (it == issued_p2p_.end() || it->second <= index || c.partner == kNone) return false;
    const PlanCall& p = plan_.calls[c.partner];
    return p.dtype == c.dtype && p.count == c.count;
  }

  const ReplayPlan& plan_;
  const IssueOrder& order_;
  const std::vector<uint64_t>& pos_;
  const std::vector<ActorReport>& actors_;
  std::map<std::pair<uint32_t, int>, uint64_t> issued_coll_;
  std::map<std::tuple<uint32_t, int, int, int>, uint64_t> issued_p2p_;
  std::map<std::tuple<uint32_t, int, uint64_t>, uint32_t> call_at_;
  std::set<uint32_t> head_calls_;
};

}  // namespace

std::vector<StuckCall> ExplainStuck(const ReplayPlan& plan, const IssueOrder& order,
                                    const std::vector<uint64_t>& positions,
                                    const std::vector<ActorReport>& actors) {
  return StuckExplainer(plan, order, positions, actors).Explain();
}

}  // namespace ncclrr::replay
