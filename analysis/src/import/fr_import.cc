#include "ncclrr/analysis/fr_import.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "import/fr_calls.h"
#include "import/fr_dump.h"
#include "ncclrr/trace/format.h"
#include "ncclrr/trace/trace_writer.h"

namespace ncclrr {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMaxDumpBytes = uint64_t{1} << 30;

struct RankDump {
  int rank = -1;
  std::string path;
  fr::Dump dump;
};

// The rank a dump belongs to: the digits that end its name (nccl_trace_rank_3, ..._3.json).
int RankFromName(const std::string& path) {
  std::string stem = fs::path(path).filename().string();
  for (const char* ext : {".json", ".pkl", ".pickle"})
    if (stem.size() > std::string(ext).size() && stem.ends_with(ext))
      stem.resize(stem.size() - std::string(ext).size());
  size_t k = stem.size();
  while (k > 0 && std::isdigit(static_cast<unsigned char>(stem[k - 1]))) --k;
  if (k == stem.size() || stem.size() - k > 7) return -1;
  return std::stoi(stem.substr(k));
}

Status CollectPaths(const std::vector<std::string>& inputs, std::vector<std::string>* out) {
  for (const std::string& in : inputs) {
    std::error_code ec;
    if (!fs::is_directory(in, ec)) {
      out->push_back(in);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& e : fs::directory_iterator(in, ec))
      if (e.is_regular_file(ec) && RankFromName(e.path().string()) >= 0)
        found.push_back(e.path().string());
    if (found.empty())
      return NotFound("'" + in + "' holds no dump files named <prefix><rank> (nccl_trace_rank_0)");
    std::sort(found.begin(), found.end());
    out->insert(out->end(), found.begin(), found.end());
  }
  return Status::Ok();
}

StatusOr<RankDump> ReadDump(const std::string& path) {
  RankDump r;
  r.path = path;
  r.rank = RankFromName(path);
  if (r.rank < 0)
    return InvalidArgument("cannot tell the rank of '" + path +
                           "': Flight Recorder dumps are named <prefix><rank> (nccl_trace_rank_3)");
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) return IoError("cannot read '" + path + "': " + ec.message());
  if (size > kMaxDumpBytes) return InvalidArgument("'" + path + "' is larger than 1 GiB");
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot read '" + path + "'");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto d = fr::ParseDump(bytes);
  if (!d.ok()) return Corrupt(path + ": " + d.status().message());
  r.dump = std::move(d.value());
  return r;
}

// The same id on every rank: a hash of the group's name (FR's names are unique per job).
uint64_t CommIdOf(const std::string& pg_name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : "fr-pg:" + pg_name) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return h | 1;
}

struct CommInfo {
  uint64_t id = 0;
  std::string name;
  std::vector<int64_t> ranks;  // global ranks in group-rank order
};

// Every group of every dump; groups seen only in entries (no pg_config, before 2.1) span all
// dumped ranks.
std::map<std::string, CommInfo> Groups(const std::vector<RankDump>& dumps,
                                       std::vector<std::string>* warnings) {
  std::map<std::string, CommInfo> out;
  std::vector<int64_t> all;
  for (const RankDump& d : dumps) all.push_back(d.rank);
  for (const RankDump& d : dumps)
    for (const auto& [name, g] : d.dump.groups) {
      CommInfo& c = out[name];
      c.id = CommIdOf(name);
      c.name = g.desc.empty() || g.desc == "undefined" ? "pg " + name : g.desc;
      if (c.ranks.empty()) c.ranks = g.ranks;
    }
  for (const RankDump& d : dumps)
    for (const fr::Entry& e : d.dump.entries) {
      if (out.count(e.pg_name)) continue;
      CommInfo& c = out[e.pg_name];
      c.id = CommIdOf(e.pg_name);
      c.name = e.pg_desc.empty() || e.pg_desc == "undefined" ? "pg " + e.pg_name : e.pg_desc;
      c.ranks = all;
      warnings->push_back("process group '" + e.pg_name +
                          "' is not in pg_config: its ranks are taken to be the dumped ranks");
    }
  return out;
}

class RankWriter {
 public:
  RankWriter(const RankDump& d, const std::map<std::string, CommInfo>& groups, int64_t base,
             int64_t t0)
      : d_(d), groups_(groups), base_(base), t0_(t0) {}

  Status Write(const std::string& out_dir, FrImportResult* result) {
    WriterOptions o;
    o.dir = out_dir;
    o.file_name = "fr-rank" + std::to_string(d_.rank) + format::kFileSuffix;
    o.overflow = OverflowPolicy::kBlock;
    o.clock_interval_ms = 3'600'000;
    o.header.host = "flight-recorder";
    o.header.route = Route::kFlightRecorder;
    o.header.argv = {"ncclrr", "import-fr", d_.path};
    auto w = TraceWriter::Create(o);
    if (!w.ok()) return w.status();
    TraceWriter& tw = **w;
    tw.AddNote(NoteLevel::kInfo,
               "imported from PyTorch Flight Recorder dump " + d_.path + " (version " +
                   d_.dump.version + ", global rank " + std::to_string(d_.rank) +
                   "): FR records no reduction op, root, buffers, streams or device, so the "
                   "checks that need them (redop_mismatch, root_mismatch, buffer identity, data "
                   "checks) are skipped; entries not completed when dumped are calls in flight; "
                   "times are FR's creation times");
    WriteComms(tw);
    for (const fr::Entry& e : d_.dump.entries) AppendEntry(tw, e, result);
    result->files.push_back(tw.path());
    result->ranks.push_back(d_.rank);
    return tw.Close("imported");
  }

 private:
  int GroupRank(const CommInfo& c) const {
    const auto it = std::find(c.ranks.begin(), c.ranks.end(), d_.rank);
    return it == c.ranks.end() ? -1 : static_cast<int>(it - c.ranks.begin());
  }

  void WriteComms(TraceWriter& tw) {
    for (const auto& [name, c] : groups_) {
      const int rank = GroupRank(c);
      if (rank < 0) continue;
      Record r{};
      r.kind = RecordKind::kComm;
      r.comm.comm_id = c.id;
      r.comm.create_ns = base_;
      r.comm.nranks = static_cast<int32_t>(c.ranks.size());
      r.comm.rank = rank;
      r.comm.device = d_.rank;  // one GPU per process, as torchrun runs them
      r.comm.name_id = tw.Intern(c.name);
      r.comm.origin = static_cast<uint8_t>(CommOrigin::kUnknown);
      r.comm.blocking = 1;
      tw.Append(r);
    }
  }

  // Relative to the earliest entry of all dumps (t0 <= fr_ns), capped at ~3 years so that
  // nonsense times cannot overflow.
  int64_t Time(int64_t fr_ns) const {
    return fr_ns > 0 ? base_ + std::min<int64_t>(fr_ns - t0_, int64_t{1} << 56) : base_;
  }

  void AppendEntry(TraceWriter& tw, const fr::Entry& e, FrImportResult* result) {
    const auto g = groups_.find(e.pg_name);
    const int rank = g == groups_.end() ? -1 : GroupRank(g->second);
    const int nranks = g == groups_.end() ? 0 : static_cast<int>(g->second.ranks.size());
    const fr::CallShape s = fr::ShapeOf(e, nranks);
    if (s.api == Api::kUnknown || rank < 0) {
      ++result->skipped;
      return;
    }
    CallRecord c{};
    c.uid = tw.NextCallUid();
    c.comm_id = g->second.id;
    c.api = static_cast<uint16_t>(s.api);
    c.count = s.count;
    c.dtype = s.dtype;
    c.op = -1;         // FR does not record the reduction op
    c.root_peer = -1;  // nor the root
    c.rank = rank;
    c.device = d_.rank;
    c.tid = static_cast<uint32_t>(std::hash<std::string>{}(e.thread_id));
    c.type_seq = type_seq_[{c.comm_id, c.api}]++;
    if (IsP2p(s.api)) {
      c.root_peer = s.peer;
      c.seq = p2p_seq_[{c.comm_id, s.peer, s.api == Api::kRecv}]++;
    } else {
      // FR's collective_seq_id is 1-based and shared by the entries of one coalesced group;
      // ncclrr gives each call its own seq, so later ones shift by the extra entries.
      int64_t& last = last_coll_seq_[c.comm_id];
      uint64_t& extra = coalesced_extra_[c.comm_id];
      if (e.collective_seq_id >= 1 && e.collective_seq_id == last) ++extra;
      last = e.collective_seq_id;
      c.seq = e.collective_seq_id >= 1 ? static_cast<uint64_t>(e.collective_seq_id - 1) + extra
                                       : type_seq_[{c.comm_id, 0}]++;
    }
    c.flags = call_flags::kInPlace;  // no buffers known: nothing to compare
    c.enter_ns = Time(e.time_created_ns);
    if (e.state == "completed") {
      c.exit_ns = std::max(c.enter_ns + 1'000, Time(e.time_completed_ns));
    } else {
      c.flags |= call_flags::kInFlight;  // scheduled or started: it never finished
      c.exit_ns = 0;
      ++result->in_flight;
    }
    const std::string site = fr::CallSiteText(e.frames);
    if (!site.empty()) c.callsite = tw.Intern(site);
    tw.AppendCall(c);
    ++result->calls;
  }

  const RankDump& d_;
  const std::map<std::string, CommInfo>& groups_;
  const int64_t base_, t0_;
  std::map<std::pair<uint64_t, uint16_t>, uint64_t> type_seq_;
  std::map<std::tuple<uint64_t, int, bool>, uint64_t> p2p_seq_;
  std::map<uint64_t, int64_t> last_coll_seq_;
  std::map<uint64_t, uint64_t> coalesced_extra_;
};

}  // namespace

StatusOr<FrImportResult> ImportFlightRecorder(const std::vector<std::string>& inputs,
                                              const std::string& out_dir) {
  if (inputs.empty()) return InvalidArgument("no dump files or directories given");
  std::error_code ec;
  if (fs::exists(out_dir, ec))
    for (const auto& e : fs::directory_iterator(out_dir, ec))
      if (e.path().extension() == format::kFileSuffix)
        return InvalidArgument("'" + out_dir + "' already holds a trace (" +
                               e.path().filename().string() + "); choose an empty directory");
  std::vector<std::string> paths;
  NCCLRR_RETURN_IF_ERROR(CollectPaths(inputs, &paths));
  std::vector<RankDump> dumps;
  std::set<int> seen;
  FrImportResult result;
  for (const std::string& p : paths) {
    auto d = ReadDump(p);
    if (!d.ok()) return d.status();
    if (!seen.insert(d->rank).second)
      return InvalidArgument("two dumps for rank " + std::to_string(d->rank) + " ('" + p +
                             "' is the second); give one dump per rank");
    if (d->dump.entries_without_name)
      result.warnings.push_back(p + ": " + std::to_string(d->dump.entries_without_name) +
                                " entries without a profiling_name were skipped");
    if (!d->dump.version.starts_with("2."))
      result.warnings.push_back(p + ": dump version '" + d->dump.version +
                                "' is not one ncclrr knows (2.0 to 2.10); read as 2.10");
    dumps.push_back(std::move(d.value()));
  }
  result.version = dumps.front().dump.version;
  const auto groups = Groups(dumps, &result.warnings);
  result.comms = groups.size();
  int64_t t0 = INT64_MAX;
  for (const RankDump& d : dumps)
    for (const fr::Entry& e : d.dump.entries)
      if (e.time_created_ns > 0) t0 = std::min(t0, e.time_created_ns);
  if (t0 == INT64_MAX) t0 = 0;
  const int64_t base = MonotonicNs();
  for (const RankDump& d : dumps)
    NCCLRR_RETURN_IF_ERROR(RankWriter(d, groups, base, t0).Write(out_dir, &result));
  if (result.calls == 0)
    result.warnings.push_back(
        "the dumps hold no NCCL calls (empty buffers, or only operations "
        "without an NCCL call)");
  return result;
}

}  // namespace ncclrr
