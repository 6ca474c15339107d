#include "route_compare.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <tuple>

#include "ncclrr/trace/describe.h"

namespace ncclrr::profiler::test {
namespace {

using Key = std::pair<uint64_t, int>;  // (comm id, rank)

struct Side {
  std::map<Key, std::vector<CallRecord>> calls;
  std::map<Key, CommRecord> comms;
};

Side Collect(const TraceDir& dir, bool plugin_files) {
  Side s;
  for (const TraceFile& f : dir.files) {
    const bool is_plugin = f.header.route == Route::kProfilerPlugin;
    if (is_plugin != plugin_files) continue;
    for (const CommRecord& c : f.comms) s.comms[{c.comm_id, c.rank}] = c;
    for (const CallRecord& c : f.calls) {
      const Api api = static_cast<Api>(c.api);
      if (!IsCollective(api) && !IsP2p(api)) continue;
      s.calls[{c.comm_id, c.rank}].push_back(c);
      s.calls[{c.comm_id, c.rank}].back().api = static_cast<uint16_t>(CanonicalApi(api));
    }
  }
  // In the order NCCL pairs them: collectives by seq, then p2p by (peer, direction, seq).
  for (auto& [key, calls] : s.calls) {
    std::stable_sort(calls.begin(), calls.end(), [](const CallRecord& a, const CallRecord& b) {
      const bool pa = IsP2p(static_cast<Api>(a.api)), pb = IsP2p(static_cast<Api>(b.api));
      return std::make_tuple(pa, pa ? a.root_peer : 0, pa ? a.api : 0, a.seq) <
             std::make_tuple(pb, pb ? b.root_peer : 0, pb ? b.api : 0, b.seq);
    });
  }
  return s;
}

std::string Describe(const CallRecord& c) { return DescribeCall(c, /*stable=*/true); }

std::string FirstDifference(const std::vector<CallRecord>& plugin,
                            const std::vector<CallRecord>& preload) {
  const size_t n = std::min(plugin.size(), preload.size());
  for (size_t i = 0; i < n; ++i) {
    const CallRecord& a = plugin[i];
    const CallRecord& b = preload[i];
    if (a.api != b.api || a.count != b.count || a.dtype != b.dtype || a.root_peer != b.root_peer ||
        a.seq != b.seq) {
      return "call " + std::to_string(i) + ": plugin {" + Describe(a) + "} preload {" +
             Describe(b) + "}";
    }
  }
  if (plugin.size() != preload.size())
    return "plugin has " + std::to_string(plugin.size()) + " calls, preload " +
           std::to_string(preload.size());
  return "";
}

}  // namespace

StatusOr<RouteComparison> CompareRoutes(const std::string& plugin_dir,
                                        const std::string& preload_dir) {
  auto a = LoadTraceDir(plugin_dir);
  if (!a.ok()) return a.status();
  auto b = LoadTraceDir(preload_dir);
  if (!b.ok()) return b.status();
  const Side plugin = Collect(*a, true);
  const Side preload = Collect(*b, false);
  if (plugin.calls.empty())
    return NotFound("no profiler-plugin calls in " + plugin_dir +
                    " (did NCCL load the plugin? NCCL >= 2.23, NCCL_PROFILER_PLUGIN set, and a "
                    "communicator of two or more ranks: NCCL raises no events for one rank)");
  RouteComparison out;
  std::map<Key, CommAgreement> all;
  for (const auto& [key, calls] : preload.calls) {
    CommAgreement& c = all[key];
    c.comm_id = key.first;
    c.rank = key.second;
    c.in_preload = true;
    c.preload_calls = calls.size();
    auto comm = preload.comms.find(key);
    if (comm != preload.comms.end()) {
      c.kind = CommOriginName(comm->second.origin);
      c.preload_hash_known = comm->second.nccl_hash_known != 0;
    }
  }
  for (const auto& [key, calls] : plugin.calls) {
    CommAgreement& c = all[key];
    c.comm_id = key.first;
    c.rank = key.second;
    c.in_plugin = true;
    c.plugin_calls = calls.size();
  }
  static const std::vector<CallRecord> kNone;
  for (auto& [key, c] : all) {
    auto p = plugin.calls.find(key);
    auto q = preload.calls.find(key);
    c.first_difference = FirstDifference(p == plugin.calls.end() ? kNone : p->second,
                                         q == preload.calls.end() ? kNone : q->second);
    if (!c.in_plugin || !c.in_preload || !c.first_difference.empty()) out.agree = false;
    out.comms.push_back(c);
  }
  return out;
}

std::string RouteComparison::Report() const {
  std::ostringstream s;
  std::map<std::string, std::pair<int, int>> by_kind;  // kind -> (agreeing, total)
  for (const CommAgreement& c : comms) {
    const std::string kind = c.in_preload ? (c.kind.empty() ? "unknown" : c.kind)
                                          : "plugin-only (no preload comm with this id)";
    const bool ok = c.in_plugin && c.in_preload && c.first_difference.empty();
    s << Hex64(c.comm_id) << " rank " << c.rank << " [" << kind << "] " << (ok ? "agree" : "DIFFER")
      << ": plugin " << c.plugin_calls << " calls, preload " << c.preload_calls << " calls";
    if (!c.preload_hash_known) s << " (the preload's id is a stand-in: NCCL's hash collides)";
    if (!c.first_difference.empty()) s << "; " << c.first_difference;
    s << "\n";
    auto& k = by_kind[kind];
    k.first += ok ? 1 : 0;
    k.second += 1;
  }
  s << "commHash agreement by communicator kind:";
  for (const auto& [kind, n] : by_kind) s << " " << kind << " " << n.first << "/" << n.second;
  s << "\n" << (agree ? "ROUTES AGREE" : "ROUTES DIFFER") << "\n";
  return s.str();
}

}  // namespace ncclrr::profiler::test
