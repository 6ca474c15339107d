// Flight Recorder dumps from a trace (see flight_recorder_export.h for the mapping). Each rank's
// file is written entry by entry, keys in the order nlohmann::json sorts them, as FR's own
// dump_json (also nlohmann::json) does; the whole dump is never held in memory. The pickle
// encoding (FR's default, what fr_trace reads) has the same structure, its numbers as numbers.
#include "ncclrr/analysis/flight_recorder_export.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "export/export_layout.h"
#include "export/pickle_writer.h"
#include "ncclrr/trace/describe.h"

namespace ncclrr::analysis {
namespace {

using nlohmann::json;

constexpr const char* kFrVersion = "2.10";

// A dump's top-level dict in either encoding: members, then the entries' list in the middle.
class JsonDump {
 public:
  explicit JsonDump(std::ostream& out) : out_(out) {}
  void Member(const char* key, const json& v) {
    out_ << (first_ ? "{" : ",") << json(key).dump() << ':' << v.dump();
    first_ = false;
  }
  void BeginEntries() {
    out_ << (first_ ? "{" : ",") << "\"entries\":[";
    first_ = false;
  }
  void Entry(const json& v, bool first) { out_ << (first ? "" : ",") << v.dump(); }
  void EndEntries() { out_ << ']'; }
  void End() { out_ << '}'; }
  static constexpr bool kNumbersAsStrings = true;  // FR's JSON variant writes pg_status so

 private:
  std::ostream& out_;
  bool first_ = true;
};

class PickleDump {
 public:
  explicit PickleDump(std::ostream& out) : p_(out) { p_.BeginDict(); }
  void Member(const char* key, const json& v) {
    p_.Key(key);
    p_.Value(v);
  }
  void BeginEntries() {
    p_.Key("entries");
    p_.BeginList();
  }
  void Entry(const json& v, bool) { p_.Value(v); }
  void EndEntries() { p_.EndList(); }
  void End() {
    p_.EndDict();
    p_.Finish();
  }
  static constexpr bool kNumbersAsStrings = false;

 private:
  PickleWriter p_;
};

// One entry of a rank's dump: a collective slot or a Send/Recv, on communicator `comm`.
struct Op {
  int64_t time = 0;
  size_t comm = 0;
  const CollectiveSlot* slot = nullptr;
  const P2pCall* p2p = nullptr;
  CallRef call() const { return slot ? slot->call : p2p->call; }
};

// Global rank of every (file, device) that holds a communicator rank: the rank on its largest
// communicator when those are distinct, else the position in (file, device) order.
std::map<ProcessKey, int> GlobalRanks(const TraceModel& m) {
  std::map<ProcessKey, int> out;
  std::set<int> seen;
  bool distinct = true;
  for (const auto& [key, b] : ProcessRanks(m)) {
    out[key] = b.rank;
    distinct = distinct && b.rank >= 0 && seen.insert(b.rank).second;
  }
  if (!distinct) {
    int next = 0;
    for (auto& [key, rank] : out) rank = next++;
  }
  return out;
}

// "[0, 1, 2]", as PyTorch's ranks_str writes pg_config's ranks.
std::string RanksString(const std::vector<int>& ranks) {
  std::string s = "[";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s + "]";
}

// "2.28.9" from NCCL's version code (22809); "" when the trace does not know it.
std::string NcclVersionString(int32_t code) {
  if (code <= 0) return "";
  return std::to_string(code / 10000) + "." + std::to_string(code % 10000 / 100) + "." +
         std::to_string(code % 100);
}

// Input and output element counts as FR records them for the flat tensors the call moves.
std::pair<uint64_t, uint64_t> Sizes(Api api, uint64_t count, int nranks) {
  const uint64_t n = static_cast<uint64_t>(std::max(nranks, 1));
  switch (CanonicalApi(api)) {
    case Api::kAllGather:
    case Api::kGather:
      return {count, count * n};
    case Api::kReduceScatter:
    case Api::kScatter:
      return {count * n, count};
    case Api::kAlltoAll:
      return {count * n, count * n};
    default:
      return {count, count};
  }
}

// A site frame's name as Python spells it: "‹module›" (SiteFrame) is "<module>" again.
std::string PythonName(std::string text) {
  for (const auto& [from, to] : {std::pair<std::string, char>{"\u2039", '<'}, {"\u203a", '>'}})
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + 1))
      text.replace(at, from.size(), 1, to);
  return text;
}

// A call site as FR frames, innermost first: Python frames "train.py:214 in step" (recorded by
// default in Python processes, or imported from a dump) and native ones "libfoo.so+0x1234"
// (record --stacks), separated by '<'.
json Frames(const std::string& callsite) {
  json frames = json::array();
  size_t start = 0;
  while (start < callsite.size()) {
    size_t end = callsite.find('<', start);
    if (end == std::string::npos) end = callsite.size();
    const std::string frame = callsite.substr(start, end - start);
    const size_t in = frame.find(" in ");
    const size_t colon = in == std::string::npos ? in : frame.rfind(':', in);
    if (colon != std::string::npos && colon + 1 < in && in - colon <= 9 &&
        frame.find_first_not_of("0123456789", colon + 1) == in) {
      frames.push_back({{"name", PythonName(frame.substr(in + 4))},
                        {"filename", PythonName(frame.substr(0, colon))},
                        {"line", std::strtol(frame.c_str() + colon + 1, nullptr, 10)}});
    } else {
      frames.push_back(
          {{"name", frame}, {"filename", frame.substr(0, frame.find('+'))}, {"line", 0}});
    }
    start = end + 1;
  }
  return frames;
}

class RankDumpWriter {
 public:
  RankDumpWriter(const TraceModel& m, const std::map<ProcessKey, int>& global)
      : m_(m), global_(global) {}

  // Writes the dump of (file, device) to `out`; returns its entry count.
  template <class Dump>
  uint64_t Write(const ProcessKey& key, Dump& out) {
    const uint32_t file = key.first;
    std::vector<Op> ops;
    std::vector<size_t> comms;  // the process's communicators; pg_id = position here
    for (size_t ci = 0; ci < m_.comms().size(); ++ci)
      for (const RankView& r : m_.comms()[ci].ranks) {
        if (r.file != static_cast<int32_t>(file) || r.device != key.second) continue;
        comms.push_back(ci);
        for (const CollectiveSlot& s : r.collectives)
          ops.push_back({SlotTime(m_, s), ci, &s, nullptr});
        for (const P2pCall& p : r.p2p) ops.push_back({p.time_ns, ci, nullptr, &p});
      }
    std::stable_sort(ops.begin(), ops.end(),
                     [](const Op& a, const Op& b) { return a.time < b.time; });
    IndexGpuTimes(file);

    std::map<size_t, Counters> counters;  // comm -> running sequence numbers
    out.Member("comm_lib_version", NcclVersionString(m_.file(file).nccl_version));
    uint64_t written = 0;
    for (const Op& op : ops) {
      const size_t pg_id =
          static_cast<size_t>(std::find(comms.begin(), comms.end(), op.comm) - comms.begin());
      if (written == 0) out.BeginEntries();
      out.Entry(Entry(op, pg_id, written, counters[op.comm]), written == 0);
      ++written;
    }
    if (written) out.EndEntries();
    out.Member("pg_config", PgConfig(comms));
    out.Member("pg_status", PgStatus(comms, counters, Dump::kNumbersAsStrings));
    out.Member("version", kFrVersion);
    out.End();
    return written;
  }

 private:
  struct Counters {
    int64_t collective = 0, p2p = 0;  // last issued, 1-based (0: none yet)
    int64_t started = -1, completed = -1;
  };
  struct GpuSpan {
    int64_t start = 0, end = 0;  // end 0: a start mark only
  };

  void IndexGpuTimes(uint32_t file) {
    gpu_.clear();
    for (const GpuTimeRecord& g : m_.file(file).gpu_times) {
      GpuSpan& s = gpu_[g.call_uid];
      if (g.end_ns > 0 || s.end == 0) s = {g.start_ns, g.end_ns};
    }
  }

  std::string PgName(size_t comm) const { return std::to_string(comm); }
  std::string PgDesc(size_t comm) const {
    const CommModel& c = m_.comms()[comm];
    return c.name.empty() ? "ncclrr comm " + Hex64(c.id) : c.name;
  }

  json Entry(const Op& op, size_t pg_id, uint64_t record_id, Counters& n) {
    const CommModel& comm = m_.comms()[op.comm];
    const CallRecord& c = m_.call(op.call());
    const Api api = static_cast<Api>(c.api);
    const bool p2p = op.p2p != nullptr;
    if (p2p)
      ++n.p2p;
    else
      n.collective = static_cast<int64_t>(op.slot->seq) + 1;
    json j;
    j["record_id"] = record_id;
    j["pg_id"] = pg_id;
    j["process_group"] = {PgName(op.comm), PgDesc(op.comm)};
    j["thread_name"] = "";
    j["thread_id"] = std::to_string(c.tid);
    j["collective_seq_id"] = n.collective;
    j["p2p_seq_id"] = n.p2p;
    j["op_id"] = n.collective + n.p2p;
    j["profiling_name"] = FlightRecorderProfilingName(api, c.rank, c.root_peer);
    j["time_created_ns"] = op.time;
    const auto [in, out] = Sizes(api, c.count, comm.nranks);
    const std::string dtype(FlightRecorderDtype(c.dtype));
    j["input_sizes"] = {{in}};
    j["input_dtypes"] = {dtype};
    j["output_sizes"] = {{out}};
    j["output_dtypes"] = {dtype};
    State(op, c, n, j);
    j["timeout_ms"] = 0;  // not recorded by ncclrr
    j["is_p2p"] = p2p;
    const std::string site = c.callsite ? m_.file(op.call().file).String(c.callsite) : "";
    if (!site.empty()) j["frames"] = Frames(site);
    return j;
  }

  void State(const Op& op, const CallRecord& c, Counters& n, json& j) {
    int64_t started = 0, completed = 0;
    const uint32_t file = op.call().file;
    auto g = op.slot && op.slot->launch ? gpu_.end() : gpu_.find(c.uid);
    if (g != gpu_.end()) {
      started = m_.CommonTime(file, g->second.start);
      if (g->second.end) completed = m_.CommonTime(file, g->second.end);
      if (g->second.end)
        j["duration_ms"] = static_cast<double>(g->second.end - g->second.start) / 1e6;
    } else if (!(c.flags & call_flags::kInFlight) && m_.files()[file].clean) {
      // No GPU times: a returned call of a process that ended cleanly ran to completion; FR's
      // discovery times are left 0 (not observed), as FR writes them when unknown.
      completed = -1;
    }
    const char* state = completed ? "completed" : started ? "started" : "scheduled";
    if (!op.p2p) {
      if (completed) n.completed = n.collective;
      if (completed || started) n.started = n.collective;
    }
    j["state"] = state;
    j["time_discovered_started_ns"] = std::max<int64_t>(started, 0);
    j["time_discovered_completed_ns"] = std::max<int64_t>(completed, 0);
    j["retired"] = completed != 0;
  }

  json PgConfig(const std::vector<size_t>& comms) {
    json cfg = json::object();
    for (size_t ci : comms) {
      std::vector<int> ranks;
      for (const RankView& r : m_.comms()[ci].ranks) ranks.push_back(GlobalRankOf(ci, r));
      cfg[PgName(ci)] = {{"name", PgName(ci)}, {"desc", PgDesc(ci)}, {"ranks", RanksString(ranks)}};
    }
    return cfg;
  }
  // A communicator rank no trace file holds gets a global rank past every known one.
  int GlobalRankOf(size_t comm, const RankView& r) {
    if (r.file >= 0) {
      auto it = global_.find({static_cast<uint32_t>(r.file), r.device});
      if (it != global_.end()) return it->second;
    }
    auto [it, added] = absent_.try_emplace({comm, r.rank}, 0);
    if (added) {
      int top = -1;
      for (const auto& [k, g] : global_) top = std::max(top, g);
      it->second = top + 1 + static_cast<int>(absent_.size()) - 1;
    }
    return it->second;
  }

  json PgStatus(const std::vector<size_t>& comms, std::map<size_t, Counters>& counters,
                bool as_strings) {
    json st = json::object();
    // FR's JSON variant writes these numbers as strings, its pickle as ints; -1 means none.
    auto number = [&](int64_t v) { return as_strings ? json(std::to_string(v)) : json(v); };
    for (size_t i = 0; i < comms.size(); ++i) {
      const Counters& n = counters[comms[i]];
      st[std::to_string(i)] = {
          {"last_enqueued_collective", number(n.collective ? n.collective : -1)},
          {"last_started_collective", number(n.started)},
          {"last_completed_collective", number(n.completed)}};
    }
    return st;
  }

  const TraceModel& m_;
  const std::map<ProcessKey, int>& global_;
  std::unordered_map<uint64_t, GpuSpan> gpu_;
  std::map<std::pair<size_t, int>, int> absent_;
};

}  // namespace

Status ExportFlightRecorder(const TraceModel& model, const std::string& dir,
                            FlightRecorderEncoding encoding, FlightRecorderStats* stats) {
  FlightRecorderStats local;
  FlightRecorderStats& st = stats ? *stats : local;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return IoError("cannot create directory '" + dir + "': " + ec.message());
  const std::map<ProcessKey, int> global = GlobalRanks(model);
  RankDumpWriter writer(model, global);
  for (const auto& [key, rank] : global) {
    const std::string path = dir + "/nccl_trace_rank_" + std::to_string(rank);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) return IoError("cannot create '" + path + "'; check that the directory is writable");
    if (encoding == FlightRecorderEncoding::kPickle) {
      PickleDump dump(out);
      st.entries += writer.Write(key, dump);
    } else {
      JsonDump dump(out);
      st.entries += writer.Write(key, dump);
    }
    st.bytes += static_cast<uint64_t>(out.tellp());
    out.close();
    if (!out) return IoError("writing '" + path + "' failed (disk full?)");
    ++st.files;
  }
  return Status::Ok();
}

}  // namespace ncclrr::analysis
