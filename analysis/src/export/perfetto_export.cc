// Perfetto's protobuf trace (`export --format perfetto`), written with a small wire encoder.
// One packet sequence; the first packet clears incremental state, and names (API names, finding
// kinds, argument names, dtypes, results) are interned in the packet that first uses them.
// Tracks: a process track per (trace file, device), its pid ordered by rank, with child tracks
// "host calls and findings" and one per CUDA stream. Each call is a TYPE_SLICE_BEGIN / _END
// pair (TrackEvent has no complete events); the calls NCCL paired share a flow id; findings are
// TYPE_INSTANT events. Timestamps are nanoseconds on the common timeline, counted from one
// second before the first call so that they stay small varints.
#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "export/export_layout.h"
#include "export/perfetto_fields.h"
#include "export/proto_writer.h"
#include "ncclrr/analysis/perfetto_export.h"
#include "ncclrr/trace/describe.h"

namespace ncclrr::analysis {
namespace {

namespace pf = perfetto_field;

// Debug annotation names, interned with these ids in the first packet.
enum Arg : uint64_t {
  kArgCount = 1,
  kArgDtype,
  kArgRoot,
  kArgPeer,
  kArgSeq,
  kArgGraphLaunch,
  kArgResult,
  kArgComm,
  kArgRank,
  kArgShort,
  kArgMessage,
  kArgRepeats,
  kArgEnd
};
constexpr std::array<const char*, kArgEnd> kArgNames = {
    "",       "count", "dtype", "root",  "peer",    "seq",    "graph_launch",
    "result", "comm",  "rank",  "short", "message", "repeats"};
enum Category : uint64_t { kCatNccl = 1, kCatFinding = 2 };

class ProtoExporter {
 public:
  ProtoExporter(const TraceModel& m, std::ostream& os, ExportStats* st)
      : m_(m), os_(os), st_(*st), base_ns_(m.start_ns() - 1'000'000'000) {}

  void Run(const Report* report, const ExportOptions& o) {
    for (uint64_t a = 1; a < kArgEnd; ++a)
      pending_.push_back({pf::kInternedAnnotationNames, a, kArgNames[a]});
    pending_.push_back({pf::kInternedCategories, kCatNccl, "nccl"});
    pending_.push_back({pf::kInternedCategories, kCatFinding, "finding"});
    if (o.flows) AssignFlows();
    DescribeRanks();
    for (uint32_t f = 0; f < m_.files().size(); ++f)
      ForEachCallSpan(m_, f, [&](const CallRecord& c, uint32_t i, int64_t start, int64_t dur) {
        CallSlice(c, f, start, dur, 0, flows_.empty() ? 0 : flows_[f][i]);
      });
    ForEachGraphLaunch(m_, [&](const CollectiveSlot& s) {
      auto it = launch_flows_.find({s.call.file, s.call.index, s.launch});
      CallSlice(m_.call(s.call), s.call.file, m_.SlotTime(s), 1000, s.launch,
                it == launch_flows_.end() ? 0 : it->second);
    });
    if (report) Findings(*report);
    Flush(true);
  }

 private:
  struct Process {
    uint64_t uuid = 0, host_uuid = 0;
    std::unordered_map<uint64_t, uint64_t> streams;  // stream -> track uuid
  };
  struct Pending {
    uint32_t field;
    uint64_t iid;
    std::string name;
  };

  // --- flows: one id per group of paired calls ---
  void AssignFlows() {
    flows_.resize(m_.files().size());
    for (uint32_t f = 0; f < flows_.size(); ++f) flows_[f].assign(m_.file(f).calls.size(), 0);
    uint64_t id = 0;
    ForEachPairedGroup(m_, [&](uint64_t, const std::vector<const CollectiveSlot*>& at) {
      ++id;
      for (const CollectiveSlot* s : at) {
        if (s->launch)
          launch_flows_[{s->call.file, s->call.index, s->launch}] = id;
        else
          flows_[s->call.file][s->call.index] = id;
      }
    });
    st_.flows = id;
  }

  // --- tracks ---
  // Process tracks of the ranked (file, device) pairs first, pids in rank order.
  void DescribeRanks() {
    std::vector<std::tuple<int, uint32_t, int>> order;  // (rank, file, device)
    for (const auto& [key, b] : ProcessRanks(m_)) order.emplace_back(b.rank, key.first, key.second);
    std::sort(order.begin(), order.end());
    for (const auto& [rank, file, device] : order) AddProcess(file, device, rank);
  }
  Process& AddProcess(uint32_t file, int device, int rank) {
    const int pid = static_cast<int>(procs_.size()) + 1;
    proc_index_.try_emplace({file, device}, procs_.size());
    Process& p = procs_.emplace_back();
    p.uuid = ++last_uuid_;
    const FileView& v = m_.files()[file];
    const std::string label =
        rank >= 0 ? ProcessLabel(v, device, rank)
                  : v.host + " pid " + std::to_string(v.pid) + " dev " + std::to_string(device);
    BeginPacket();
    ProtoWriter w(&pkt_);
    const size_t td = w.Begin(pf::kTrackDescriptor);
    w.Uint(pf::kTrackUuid, p.uuid);
    const size_t pd = w.Begin(pf::kTrackProcess);
    w.Int(pf::kProcessPid, pid);
    w.String(pf::kProcessName, label);
    if (rank >= 0) w.Int(pf::kProcessLegacySortIndex, rank);
    w.End(pd);
    w.End(td);
    EndPacket(false);
    p.host_uuid = ChildTrack(p.uuid, "host calls and findings");
    return p;
  }
  Process& ProcessOf(uint32_t file, int device) {
    auto it = proc_index_.find({file, device});
    return it != proc_index_.end() ? procs_[it->second] : AddProcess(file, device, -1);
  }
  uint64_t ChildTrack(uint64_t parent, const std::string& name) {
    const uint64_t uuid = ++last_uuid_;
    BeginPacket();
    ProtoWriter w(&pkt_);
    const size_t td = w.Begin(pf::kTrackDescriptor);
    w.Uint(pf::kTrackUuid, uuid);
    w.Uint(pf::kTrackParentUuid, parent);
    w.String(pf::kTrackName, name);
    w.End(td);
    EndPacket(false);
    return uuid;
  }
  uint64_t Track(uint32_t file, int device, uint64_t stream) {
    if (std::tie(file, device, stream) == last_track_key_) return last_track_;
    Process& p = ProcessOf(file, device);
    uint64_t uuid = p.host_uuid;
    if (stream != 0) {
      auto it = p.streams.find(stream);
      uuid = it != p.streams.end()
                 ? it->second
                 : p.streams[stream] = ChildTrack(p.uuid, "stream " + Hex64(stream));
    }
    last_track_key_ = {file, device, stream};
    return last_track_ = uuid;
  }

  // --- interning ---
  uint64_t Intern(uint32_t field, std::string_view s) {
    auto& ids = interned_[field];
    auto [it, added] = ids.try_emplace(std::string(s), ids.size() + 1);
    if (added) pending_.push_back({field, it->second, it->first});
    return it->second;
  }
  template <size_t N>
  uint64_t Cached(std::array<uint64_t, N>& cache, size_t key, uint32_t field, std::string_view s) {
    if (key >= N) return Intern(field, s);
    if (!cache[key]) cache[key] = Intern(field, s);
    return cache[key];
  }

  // --- packets ---
  void BeginPacket() { pkt_.clear(); }
  void EndPacket(bool needs_state) {
    ProtoWriter w(&pkt_);
    if (!pending_.empty()) {
      const size_t id = w.Begin(pf::kInternedData);
      for (const Pending& p : pending_) {
        const size_t e = w.Begin(p.field);
        w.Uint(pf::kInternedIid, p.iid);
        w.String(pf::kInternedName, p.name);
        w.End(e);
      }
      w.End(id);
      pending_.clear();
    }
    w.Uint(pf::kSequenceId, 1);
    uint32_t flags = needs_state ? pf::kSeqNeedsIncrementalState : 0;
    if (st_.events == 0) flags |= pf::kSeqIncrementalStateCleared;
    if (flags) w.Uint(pf::kSequenceFlags, flags);
    ProtoWriter::AppendVarint(buf_,
                              (uint64_t{pf::kTracePacket} << 3) | ProtoWriter::kLengthDelimited);
    ProtoWriter::AppendVarint(buf_, pkt_.size());
    buf_ += pkt_;
    ++st_.events;
    Flush(false);
  }
  void Flush(bool all) { FlushExport(buf_, os_, st_.bytes, all); }
  uint64_t Ts(int64_t common_ns) const {
    return static_cast<uint64_t>(std::max<int64_t>(common_ns - base_ns_, 0));
  }

  // A debug annotation whose value is a varint: uint, int (two's complement), pointer or an
  // interned string's iid, as `value_field` says.
  static void ArgVarint(ProtoWriter& w, Arg a, uint32_t value_field, uint64_t v) {
    const size_t d = w.Begin(pf::kEventDebugAnnotations);
    w.Uint(pf::kAnnotationNameIid, a);
    w.Uint(value_field, v);
    w.End(d);
  }
  static void ArgUint(ProtoWriter& w, Arg a, uint64_t v) {
    ArgVarint(w, a, pf::kAnnotationUint, v);
  }
  static void ArgInt(ProtoWriter& w, Arg a, int64_t v) {
    ArgVarint(w, a, pf::kAnnotationInt, static_cast<uint64_t>(v));
  }
  static void ArgString(ProtoWriter& w, Arg a, std::string_view v) {
    const size_t d = w.Begin(pf::kEventDebugAnnotations);
    w.Uint(pf::kAnnotationNameIid, a);
    w.String(pf::kAnnotationString, v);
    w.End(d);
  }
  void CallSlice(const CallRecord& c, uint32_t f, int64_t start, int64_t dur, uint32_t launch,
                 uint64_t flow) {
    const uint64_t track = Track(f, c.device, c.stream);
    const Api api = static_cast<Api>(c.api);
    BeginPacket();
    ProtoWriter w(&pkt_);
    w.Uint(pf::kTimestamp, Ts(start));
    const size_t te = w.Begin(pf::kTrackEvent);
    w.Uint(pf::kEventType, pf::kTypeSliceBegin);
    w.Uint(pf::kEventTrackUuid, track);
    w.Uint(pf::kEventNameIid, Cached(api_iids_, c.api, pf::kInternedEventNames, ApiName(api)));
    w.Uint(pf::kEventCategoryIids, kCatNccl);
    if (IsCollective(api) || IsP2p(api)) {
      ArgUint(w, kArgCount, c.count);
      ArgVarint(w, kArgDtype, pf::kAnnotationStringIid,
                Cached(dtype_iids_, c.dtype, pf::kInternedAnnotationStrings, DtypeName(c.dtype)));
    }
    if (IsRooted(api) || IsP2p(api)) ArgInt(w, IsP2p(api) ? kArgPeer : kArgRoot, c.root_peer);
    if (c.seq != kNoSeq) ArgUint(w, kArgSeq, c.seq);
    if (launch) ArgUint(w, kArgGraphLaunch, launch);
    if (c.result)
      ArgVarint(w, kArgResult, pf::kAnnotationStringIid,
                Cached(result_iids_, static_cast<uint8_t>(c.result), pf::kInternedAnnotationStrings,
                       NcclResultName(c.result)));
    ArgVarint(w, kArgComm, pf::kAnnotationPointer, c.comm_id);
    ArgInt(w, kArgRank, c.rank);
    if (flow) w.Fixed64(pf::kEventFlowIds, flow);
    w.End(te);
    EndPacket(true);

    BeginPacket();
    w.Uint(pf::kTimestamp, Ts(start + std::max<int64_t>(dur, 1000)));
    const size_t end = w.Begin(pf::kTrackEvent);
    w.Uint(pf::kEventType, pf::kTypeSliceEnd);
    w.Uint(pf::kEventTrackUuid, track);
    w.End(end);
    EndPacket(false);
  }

  void Findings(const Report& report) {
    for (const Finding& f : report.findings) {
      std::map<uint64_t, int64_t> at;  // host track -> earliest involved call
      for (const InvolvedCall& c : f.calls) {
        const uint64_t track = Track(c.call.file, m_.call(c.call).device, 0);
        const int64_t t = m_.CallTime(c.call);
        auto [it, added] = at.try_emplace(track, t);
        if (!added) it->second = std::min(it->second, t);
      }
      // No call named: the first rank's track (or the trace-global track 0 when none exists).
      if (at.empty()) at[procs_.empty() ? 0 : procs_[0].host_uuid] = f.first_time;
      const uint64_t name = Cached(kind_iids_, static_cast<size_t>(f.kind), pf::kInternedEventNames,
                                   FindingKindName(f.kind));
      for (const auto& [track, t] : at) {
        BeginPacket();
        ProtoWriter w(&pkt_);
        w.Uint(pf::kTimestamp, Ts(t));
        const size_t te = w.Begin(pf::kTrackEvent);
        w.Uint(pf::kEventType, pf::kTypeInstant);
        if (track) w.Uint(pf::kEventTrackUuid, track);
        w.Uint(pf::kEventNameIid, name);
        w.Uint(pf::kEventCategoryIids, kCatFinding);
        ArgString(w, kArgShort, f.short_text);
        ArgString(w, kArgMessage, f.message);
        ArgUint(w, kArgRepeats, f.repeats);
        w.End(te);
        EndPacket(true);
      }
    }
  }

  const TraceModel& m_;
  std::ostream& os_;
  ExportStats& st_;
  const int64_t base_ns_;
  std::string buf_, pkt_;
  std::vector<Pending> pending_;
  std::map<uint32_t, std::unordered_map<std::string, uint64_t>> interned_;  // field -> ids
  std::array<uint64_t, 256> api_iids_{}, dtype_iids_{}, result_iids_{}, kind_iids_{};
  std::vector<Process> procs_;
  std::map<ProcessKey, size_t> proc_index_;
  uint64_t last_uuid_ = 0;
  std::tuple<uint32_t, int, uint64_t> last_track_key_{~0u, 0, 0};
  uint64_t last_track_ = 0;
  std::vector<std::vector<uint64_t>> flows_;  // per file, per call: flow id or 0
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, uint64_t> launch_flows_;
};

}  // namespace

Status ExportPerfetto(const TraceModel& model, const Report* report, const ExportOptions& o,
                      std::ostream& out, ExportStats* stats) {
  return RunExporter<ProtoExporter>(model, report, o, out, stats);
}

}  // namespace ncclrr::analysis
