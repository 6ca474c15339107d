#include "explain.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace ncclrr::replay {
namespace {

std::string Range(uint64_t a, uint64_t b) {
  return a == b ? std::to_string(a) : std::to_string(a) + "\u2013" + std::to_string(b);
}

// `pairs`: each run is two positions that traded places ("4–5", "56 and 58"), not a range.
std::string Ranges(const std::vector<std::pair<uint64_t, uint64_t>>& runs, bool pairs = false) {
  std::string s;
  const size_t shown = std::min<size_t>(runs.size(), 4);
  for (size_t i = 0; i < shown; ++i) {
    const auto [a, b] = runs[i];
    s += (i ? ", " : "") +
         (pairs && b > a + 1 ? std::to_string(a) + " and " + std::to_string(b) : Range(a, b));
  }
  if (runs.size() > shown) s += " and " + std::to_string(runs.size() - shown) + " more";
  return s;
}

class OrderExplainer {
 public:
  OrderExplainer(const ReplayPlan& plan, const IssueOrder& order,
                 const std::vector<uint64_t>& positions)
      : plan_(plan), order_(order), pos_(positions) {
    size_t used = 0;
    for (const PlanComm& pc : plan.comms) used += pc.used;
    name_comms_ = used > 1;
  }

  std::vector<std::string> Explain() {
    for (uint32_t ci = 0; ci < plan_.comms.size(); ++ci)
      if (plan_.comms[ci].used) {
        Comm(ci);
        Arguments(ci);
      }
    CrossComm();
    return lines_;
  }

 private:
  void Comm(uint32_t ci) {
    const PlanComm& pc = plan_.comms[ci];
    std::vector<std::vector<uint32_t>> at(pc.nranks);  // [rank][position] -> logical
    for (uint32_t i = 0; i < plan_.calls.size(); ++i) {
      const PlanCall& c = plan_.calls[i];
      if (c.comm != ci || !c.collective()) continue;
      auto& v = at[c.rank];
      if (v.size() <= pos_[i]) v.resize(pos_[i] + 1, kNone);
      v[pos_[i]] = c.logical;
    }
    size_t len = 0;
    for (const auto& v : at) len = std::max(len, v.size());
    auto value = [&](int r, size_t p) { return p < at[r].size() ? at[r][p] : kNone; };
    std::vector<uint32_t> majority(len, kNone);
    for (size_t p = 0; p < len; ++p) {
      std::map<uint32_t, int> votes;
      for (int r = 0; r < pc.nranks; ++r) votes[value(r, p)]++;
      int best = 0;
      for (int r = 0; r < pc.nranks; ++r)  // ties: the lowest rank's call
        if (votes[value(r, p)] > best) {
          best = votes[value(r, p)];
          majority[p] = value(r, p);
        }
    }
    const std::string where = name_comms_ ? " of " + pc.Label() : "";
    for (int r = 0; r < pc.nranks; ++r) {
      std::map<std::string, std::vector<std::pair<uint64_t, uint64_t>>> kinds;
      std::vector<std::string> details;
      std::set<size_t> exchanged;  // the far ends of exchanges already reported
      for (size_t p = 0; p < len;) {
        if (value(r, p) == majority[p] || exchanged.count(p)) {
          ++p;
          continue;
        }
        size_t q = p;
        while (q + 1 < len && value(r, q + 1) != majority[q + 1]) ++q;
        // The shortest block from p that holds the same calls as the majority's is a swap or a
        // reorder; the rest of the run is looked at again.
        std::map<uint32_t, int> balance;  // this rank's calls minus the majority's
        int open = 0;                     // calls whose balance is not zero
        auto bump = [&](uint32_t call, int d) {
          int& b = balance[call];
          open += b == 0;
          b += d;
          open -= b == 0;
        };
        size_t k = p;
        bool complete = true;
        for (; k <= q; ++k) {
          complete &= value(r, k) != kNone;
          bump(value(r, k), 1);
          bump(majority[k], -1);
          if (open == 0) break;
        }
        if (complete && k <= q) {
          q = k;
          kinds[q == p + 1 ? "swapped" : "reordered"].push_back({p, q});
        } else if (const size_t e = Exchanged(at[r], majority, p); e != 0) {
          kinds["swapped"].push_back({p, e});  // two calls traded places across matching ones
          exchanged.insert(e);
          q = p;
        } else if (value(r, p) == kNone) {
          kinds["missing"].push_back({p, q});
        } else if (const int d = Shift(at[r], majority, p, q); d != 0) {
          details.push_back(
              "rank " + std::to_string(r) + where + " is " + std::to_string(std::abs(d)) +
              (d > 0 ? " call(s) ahead" : " call(s) behind") + " from seq " + std::to_string(p) +
              (d > 0 ? " (the call it skipped: " + Logical(ci, majority[p]) + ")" : ""));
        } else {
          kinds["differ"].push_back({p, q});
        }
        p = q + 1;
      }
      for (const auto& [kind, runs] : kinds) {
        const std::string r_s = "rank " + std::to_string(r) + where;
        if (kind == "missing")
          lines_.push_back(r_s + " has no call at seq " + Ranges(runs) + " (it issued " +
                           std::to_string(at[r].size()) + ")");
        else if (kind == "differ")
          lines_.push_back("seq " + Ranges(runs) + " differ on " + r_s);
        else
          lines_.push_back("seq " + Ranges(runs, kind == "swapped") + " " + kind + " on " + r_s);
      }
      for (std::string& d : details) lines_.push_back(std::move(d));
    }
  }

  // Logical calls whose ranks passed different arguments: no order fixes those.
  void Arguments(uint32_t ci) {
    const PlanComm& pc = plan_.comms[ci];
    const std::string where = name_comms_ ? " of " + pc.Label() : "";
    // (rank, its call, the reference call) -> positions
    std::map<std::tuple<int, std::string, std::string>, std::vector<std::pair<uint64_t, uint64_t>>>
        groups;
    for (const LogicalColl& l : pc.logical) {
      if (!l.args_differ) continue;
      const std::string ref = DescribeCall(plan_, plan_.calls[l.args]);
      for (uint32_t idx : l.call_of_rank) {
        if (idx == kNone) continue;
        const std::string mine = DescribeCall(plan_, plan_.calls[idx]);
        if (mine != ref)
          groups[{plan_.calls[idx].rank, mine, ref}].push_back({pos_[idx], pos_[idx]});
      }
    }
    for (auto& [key, runs] : groups) {
      std::sort(runs.begin(), runs.end());
      const auto& [rank, mine, ref] = key;
      lines_.push_back("seq " + Ranges(runs) + ": rank " + std::to_string(rank) + where +
                       " issues " + mine + " where the others issue " + ref +
                       " (the arguments differ: no order fixes this)");
    }
  }

  // e > p when the rank's calls at p and e are the majority's at e and p and every call between
  // them matches (a loop that issues two same-size gradients in the other order, with a bias
  // between them), else 0. Looks a few calls ahead only.
  static size_t Exchanged(const std::vector<uint32_t>& mine, const std::vector<uint32_t>& maj,
                          size_t p) {
    if (p >= mine.size() || mine[p] == kNone) return 0;
    for (size_t e = p + 2; e < p + 16 && e < mine.size() && e < maj.size(); ++e) {
      if (mine[e] == maj[e]) continue;
      return mine[e] == maj[p] && mine[p] == maj[e] ? e : 0;
    }
    return 0;
  }

  // d > 0 when the rank's calls from p on are the majority's from p + d on (it skipped d).
  static int Shift(const std::vector<uint32_t>& mine, const std::vector<uint32_t>& maj, size_t p,
                   size_t q) {
    for (int d : {1, -1, 2, -2, 3, -3}) {
      bool all = true;
      size_t matched = 0;
      for (size_t k = p; k <= q && k < mine.size() && all; ++k) {
        const int64_t j = static_cast<int64_t>(k) + d;
        all =
            j >= 0 && static_cast<size_t>(j) < maj.size() && mine[k] == maj[static_cast<size_t>(j)];
        ++matched;
      }
      if (all && matched > 0) return d;
    }
    return 0;
  }

  std::string Logical(uint32_t ci, uint32_t logical) const {
    return DescribeLogical(plan_, ci, logical);
  }

  // Adjacent units of one actor on two communicators: the order of the two logical calls. Two
  // actors with opposite orders wait for each other when they share streams or block.
  void CrossComm() {
    using Key = std::pair<std::pair<uint32_t, uint32_t>, std::pair<uint32_t, uint32_t>>;
    std::map<Key, std::vector<std::pair<uint32_t, bool>>> seen;  // -> (actor, in key order)
    for (size_t a = 0; a < order_.units_of_actor.size(); ++a) {
      const auto& units = order_.units_of_actor[a];
      for (size_t k = 0; k + 1 < units.size(); ++k) {
        const PlanCall& x = plan_.calls[plan_.units[units[k]].calls.front()];
        const PlanCall& y = plan_.calls[plan_.units[units[k + 1]].calls.front()];
        if (!x.collective() || !y.collective() || x.comm == y.comm) continue;
        const std::pair<uint32_t, uint32_t> px{x.comm, x.logical}, py{y.comm, y.logical};
        const bool forward = px < py;
        seen[forward ? Key{px, py} : Key{py, px}].push_back({static_cast<uint32_t>(a), forward});
      }
    }
    std::map<std::pair<uint32_t, uint32_t>, std::map<uint32_t, int>> deviants;  // comms -> actor
    for (const auto& [key, obs] : seen) {
      int fwd = 0;
      for (const auto& o : obs) fwd += o.second;
      if (fwd == 0 || fwd == static_cast<int>(obs.size())) continue;
      const bool minority_forward = fwd * 2 < static_cast<int>(obs.size());
      for (const auto& o : obs)
        if (o.second == minority_forward) deviants[{key.first.first, key.second.first}][o.first]++;
    }
    for (const auto& [comms, actors] : deviants)
      for (const auto& [actor, times] : actors)
        lines_.push_back(plan_.comms[comms.first].Label() + " and " +
                         plan_.comms[comms.second].Label() + " are used in the opposite order by " +
                         plan_.actors[actor].label + " (" + std::to_string(times) +
                         " time(s)): streams that wait on each other");
  }

  const ReplayPlan& plan_;
  const IssueOrder& order_;
  const std::vector<uint64_t>& pos_;
  bool name_comms_ = false;
  std::vector<std::string> lines_;
};

}  // namespace

std::vector<std::string> ExplainOrder(const ReplayPlan& plan, const IssueOrder& order,
                                      const std::vector<uint64_t>& positions) {
  return OrderExplainer(plan, order, positions).Explain();
}

}  // namespace ncclrr::replay
