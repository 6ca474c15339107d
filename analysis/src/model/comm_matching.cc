#include "model/comm_matching.h"

#include <algorithm>
#include <climits>
#include <map>
#include <set>
#include <tuple>

#include "ncclrr/trace/describe.h"

namespace ncclrr::analysis {
namespace {

enum class OriginClass { kRoot, kSplit, kShrink };

OriginClass ClassOf(CommOrigin o) {
  if (o == CommOrigin::kSplit) return OriginClass::kSplit;
  if (o == CommOrigin::kShrink) return OriginClass::kShrink;
  return OriginClass::kRoot;  // init of any flavour, or unknown (imported logs)
}

// When a run created a communicator: its earliest CommRecord, then its first call.
std::pair<int64_t, int64_t> CreationTime(const TraceModel& m, const CommModel& c) {
  int64_t created = INT64_MAX, first_call = INT64_MAX;
  for (const RankView& r : c.ranks) {
    if (!r.has_file()) continue;
    const uint32_t f = static_cast<uint32_t>(r.file);
    for (uint32_t i : r.comm_records)
      created = std::min(created, m.CommonTime(f, m.file(f).comms[i].create_ns));
    if (!r.collectives.empty())
      first_call = std::min(first_call, m.SlotTime(r.collectives.front()));
    if (!r.p2p.empty()) first_call = std::min(first_call, r.p2p.front().time_ns);
  }
  return {created, first_call};
}

// Comm indices of a run in creation order.
std::vector<int> CreationOrder(const TraceModel& m) {
  std::vector<std::pair<std::pair<int64_t, int64_t>, int>> keyed;
  for (size_t i = 0; i < m.comms().size(); ++i)
    keyed.push_back({CreationTime(m, m.comms()[i]), static_cast<int>(i)});
  std::stable_sort(keyed.begin(), keyed.end());
  std::vector<int> out;
  for (const auto& k : keyed) out.push_back(k.second);
  return out;
}

// Index of the communicator's parent in the same run, or -1.
int ParentIndex(const TraceModel& m, const CommModel& c) {
  if (c.parent_id == 0 || ClassOf(c.origin) == OriginClass::kRoot) return -1;
  return m.FindComm(c.parent_id, 0);
}

// A parent token both runs agree on: the A-side index of the (matched) parent; -1 none;
// -2 - index for a parent without a counterpart (matches nothing).
using Key = std::tuple<int, int, std::string, int, int>;  // class, size, name, parent, color

class Matcher {
 public:
  Matcher(const TraceModel& a, const TraceModel& b)
      : a_(a), b_(b), a_of_b_(b.comms().size(), -1), b_of_a_(a.comms().size(), -1) {}

  std::vector<CommPair> Run() {
    const std::vector<int> order_a = CreationOrder(a_), order_b = CreationOrder(b_);
    // Parents before children: repeat strict passes while they match something new.
    for (bool progress = true; progress;) progress = Pass(order_a, order_b, /*loose=*/false);
    Pass(order_a, order_b, /*loose=*/true);
    std::vector<CommPair> out;
    for (int i : order_a)
      if (b_of_a_[i] >= 0) out.push_back({i, b_of_a_[i], loose_.count(i) != 0});
    for (int i : order_a)
      if (b_of_a_[i] < 0) out.push_back({i, -1, false});
    for (int j : order_b)
      if (a_of_b_[j] < 0) out.push_back({-1, j, false});
    return out;
  }

 private:
  Key KeyOf(const TraceModel& m, int i, bool is_a, bool loose) const {
    const CommModel& c = m.comms()[i];
    const OriginClass cls = ClassOf(c.origin);
    int parent = -1, color = 0;
    if (!loose && cls != OriginClass::kRoot) {
      color = c.color;
      const int p = ParentIndex(m, c);
      if (p >= 0) {
        const int pa = is_a ? p : a_of_b_[p];
        parent = pa >= 0 ? pa : -2 - p - (is_a ? 0 : 1'000'000);
      }
    }
    return {static_cast<int>(cls), CommSize(c), c.name, parent, color};
  }

  // Matches the unmatched communicators of equal keys in creation order; true if any matched.
  bool Pass(const std::vector<int>& order_a, const std::vector<int>& order_b, bool loose) {
    std::map<Key, std::vector<int>> waiting_b;
    for (int j : order_b)
      if (a_of_b_[j] < 0) waiting_b[KeyOf(b_, j, false, loose)].push_back(j);
    std::map<Key, size_t> taken;
    bool progress = false;
    for (int i : order_a) {
      if (b_of_a_[i] >= 0) continue;
      const Key k = KeyOf(a_, i, true, loose);
      auto it = waiting_b.find(k);
      if (it == waiting_b.end()) continue;
      size_t& next = taken[k];
      if (next >= it->second.size()) continue;
      const int j = it->second[next++];
      b_of_a_[i] = j;
      a_of_b_[j] = i;
      if (loose) loose_.insert(i);
      progress = true;
    }
    return progress;
  }

  const TraceModel& a_;
  const TraceModel& b_;
  std::vector<int> a_of_b_, b_of_a_;
  std::set<int> loose_;
};

}  // namespace

int CommSize(const CommModel& c) {
  return c.nranks > 0 ? c.nranks : static_cast<int>(c.ranks.size());
}

std::vector<CommPair> MatchComms(const TraceModel& a, const TraceModel& b) {
  return Matcher(a, b).Run();
}

std::string CommOriginText(const TraceModel& m, const CommModel& c) {
  std::string s = std::to_string(CommSize(c)) + " ranks, ";
  if (ClassOf(c.origin) == OriginClass::kRoot) {
    s += c.origin == CommOrigin::kUnknown
             ? "origin unknown"
             : "made by " + std::string(CommOriginName(static_cast<uint8_t>(c.origin)));
    return s;
  }
  s += ClassOf(c.origin) == OriginClass::kSplit ? "split" : "shrink";
  const int p = ParentIndex(m, c);
  s += " of " + (p >= 0 ? (m.comms()[p].name.empty() ? "comm " + Hex64(m.comms()[p].id)
                                                     : "comm \"" + m.comms()[p].name + "\"")
                        : "comm " + Hex64(c.parent_id) + " (not in the trace)");
  if (ClassOf(c.origin) == OriginClass::kSplit) s += ", color " + std::to_string(c.color);
  return s;
}

}  // namespace ncclrr::analysis
