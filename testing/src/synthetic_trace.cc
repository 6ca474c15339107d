#include "ncclrr/testing/synthetic_trace.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <tuple>

#include "ncclrr/trace/format.h"
#include "ncclrr/trace/trace_writer.h"

namespace ncclrr {

StatusOr<SyntheticTraceResult> WriteSyntheticTrace(const SyntheticTraceOptions& o) {
  SyntheticTraceResult result;
  const int groups = std::clamp(o.groups, 1, std::max(o.ranks, 1));
  const int group_size = std::max(o.ranks / groups, 1);
  for (int rank = 0; rank < o.ranks; ++rank) {
    const int group = std::min(rank / group_size, groups - 1);
    const int comm_rank = rank - group * group_size;
    const int comm_ranks = group == groups - 1 ? o.ranks - group * group_size : group_size;
    const uint64_t comm_id = o.base_comm_id | static_cast<uint64_t>(group + 1);
    WriterOptions w;
    w.dir = o.dir;
    w.file_name = "synthetic-rank" + std::to_string(rank) + ".ncclrr";
    w.overflow = OverflowPolicy::kBlock;
    w.compress = o.compress;
    w.header.host = "synthetic";
    w.header.route = Route::kGenerator;
    w.header.nccl_version = 22809;
    w.header.argv = {"synthetic", "--ranks", std::to_string(o.ranks)};
    auto writer = TraceWriter::Create(w);
    if (!writer.ok()) return writer.status();
    TraceWriter& tw = **writer;
    const uint32_t name = tw.Intern("synthetic.dp");
    Record comm{};
    comm.kind = RecordKind::kComm;
    comm.comm = CommRecord{comm_id, 0,          0x7f0000001000ull + rank,
                           1000,    comm_ranks, comm_rank,
                           rank,    0,          0,
                           0,       name,       static_cast<uint8_t>(CommOrigin::kInitRank),
                           1,       1,          0};
    tw.Append(comm);
    // Times: every rank starts a step at the same nominal instant plus a little skew.
    int64_t t = 1'000'000 + rank * 1'500;
    uint64_t seq = 0;
    bool stopped = false;
    for (int step = 0; step < o.steps && !stopped; ++step) {
      std::vector<size_t> order(o.counts.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      const bool swap =
          rank == o.swap_rank &&
          std::find(o.swap_steps.begin(), o.swap_steps.end(), step) != o.swap_steps.end() &&
          o.swap_index + 1 < static_cast<int>(order.size());
      if (swap) std::swap(order[o.swap_index], order[o.swap_index + 1]);
      for (size_t k = 0; k < order.size(); ++k) {
        if (rank == o.missing_rank && step == o.missing_step &&
            static_cast<int>(k) == o.missing_index) {
          stopped = true;
          break;
        }
        const size_t i = order[k];
        uint64_t count = o.counts[i];
        if (rank == o.count_delta_rank && step == o.count_delta_step &&
            static_cast<int>(k) == o.count_delta_index)
          count = static_cast<uint64_t>(static_cast<int64_t>(count) + o.count_delta);
        CallRecord c{};
        c.uid = tw.NextCallUid();
        c.comm_id = comm_id;
        c.seq = seq;
        c.type_seq = seq;
        ++seq;
        c.sendbuff = 0x7f1000000000ull + (i << 24);  // one buffer per logical tensor
        c.recvbuff = c.sendbuff;
        c.count = count;
        c.stream = 0x5000 + rank;
        c.enter_ns = t;
        c.exit_ns = t + 4'000 + static_cast<int64_t>(count / 64);
        c.tid = 100 + rank;
        c.root_peer = -1;
        c.device = rank;
        c.op = 0;
        c.rank = comm_rank;
        c.api = static_cast<uint16_t>(Api::kAllReduce);
        c.dtype = static_cast<uint8_t>(Dtype::kFloat32);
        c.flags = call_flags::kInPlace;
        tw.AppendCall(c);
        ++result.calls;
        if (o.flush_every && seq % o.flush_every == 0) tw.Flush();
        t = c.exit_ns + 20'000;
      }
      t += 1'000'000;
    }
    if (o.close_files) {
      NCCLRR_RETURN_IF_ERROR(tw.Close("synthetic trace complete"));
    } else {
      tw.Flush();
      // Leave the file as a killed process would: no footer. The writer is abandoned on purpose.
      (void)writer->release();
    }
    result.files.push_back(o.dir + "/" + w.file_name);
  }
  return result;
}

}  // namespace ncclrr

namespace ncclrr {
namespace {

// Writes one scripted process. Times start at `base` (this machine's monotonic clock, so that
// the writer's own clock pairs and footer agree with the synthetic calls).
class ScriptedProcessWriter {
 public:
  ScriptedProcessWriter(const SyntheticScript& s, int p, int64_t base)
      : s_(s), p_(s.processes[p]), index_(p), base_(base) {}

  StatusOr<std::string> Write(uint64_t* calls) {
    WriterOptions w;
    w.dir = s_.dir;
    w.file_name = "synthetic-rank" + std::to_string(index_) + ".ncclrr";
    w.overflow = p_.max_file_bytes ? OverflowPolicy::kDrop : OverflowPolicy::kBlock;
    w.max_file_bytes = p_.max_file_bytes;
    w.compress = s_.compress;
    w.clock_interval_ms = 3'600'000;
    w.header.host = p_.host;
    w.header.route = Route::kGenerator;
    w.header.nccl_version = 22809;
    w.header.ring_mode = p_.ring_keep > 0;
    w.header.ring_capacity = p_.ring_keep;
    w.header.argv = {"synthetic-script", "--process", std::to_string(index_)};
    auto writer = TraceWriter::Create(w);
    if (!writer.ok()) return writer.status();
    TraceWriter& tw = **writer;
    WriteComms(tw);
    if (p_.gpu_progress) tw.AddNote(NoteLevel::kInfo, format::kGpuProgressNote);
    std::vector<Record> records = Records(tw);
    size_t first = 0;
    if (p_.ring_keep > 0) {  // keep the newest ring_keep calls (and what came after the first)
      size_t kept = 0;
      for (size_t i = records.size(); i-- > 0;)
        if (records[i].kind == RecordKind::kCall && ++kept == p_.ring_keep) {
          first = i;
          break;
        }
    }
    for (size_t i = first; i < records.size(); ++i) {
      tw.Append(records[i]);
      *calls += records[i].kind == RecordKind::kCall;
      if (p_.flush_every && (i - first + 1) % p_.flush_every == 0) tw.Flush();
    }
    if (p_.alive_until_ns > 0) {
      Record r{};
      r.kind = RecordKind::kClock;
      r.clock = {t0_ + p_.alive_until_ns, t0_ + p_.alive_until_ns + RealtimeNs() - MonotonicNs()};
      tw.Append(r);
    }
    const std::string path = tw.path();
    if (p_.close) {
      NCCLRR_RETURN_IF_ERROR(tw.Close("synthetic script complete"));
    } else {
      tw.Flush();
      (void)writer->release();  // no footer, as a killed process leaves it
    }
    if (p_.truncate_bytes > 0) {
      std::error_code ec;
      const auto size = std::filesystem::file_size(path, ec);
      if (!ec && size > p_.truncate_bytes)
        std::filesystem::resize_file(path, size - p_.truncate_bytes, ec);
      if (ec) return IoError("cannot truncate '" + path + "': " + ec.message());
    }
    return path;
  }

 private:
  void WriteComms(TraceWriter& tw) {
    for (const ScriptComm& c : s_.comms) {
      const auto it = std::find(c.members.begin(), c.members.end(), index_);
      if (it == c.members.end()) continue;
      const int rank = static_cast<int>(it - c.members.begin());
      Record r{};
      r.kind = RecordKind::kComm;
      r.comm =
          CommRecord{c.id,
                     c.parent,
                     0x7f0000001000ull + static_cast<uint64_t>(index_) * 0x100,
                     base_,
                     c.nranks_override ? c.nranks_override : static_cast<int32_t>(c.members.size()),
                     rank,
                     index_,
                     c.color,
                     rank,
                     0,
                     c.name.empty() ? 0u : tw.Intern(c.name),
                     static_cast<uint8_t>(c.origin),
                     1,
                     1,
                     0};
      tw.Append(r);
    }
  }

  int CommRank(int comm) const {
    const auto& m = s_.comms[comm].members;
    return static_cast<int>(std::find(m.begin(), m.end(), index_) - m.begin());
  }

  std::vector<Record> Records(TraceWriter& tw) {
    std::vector<Record> out;
    std::map<int, uint64_t> coll_seq;                         // comm -> next seq
    std::map<std::tuple<int, int, bool>, uint64_t> p2p_seq;   // (comm, peer, recv) -> next
    std::map<std::pair<int, uint16_t>, uint64_t> type_seq;    // (comm, api) -> next
    std::map<uint64_t, std::map<int, uint64_t>> graph_colls;  // graph -> comm -> templates
    int64_t t = base_ + 1'000'000 + index_ * 1'500;
    t0_ = t;
    for (const ScriptCall& sc : p_.calls) {
      t += sc.gap_ns;
      const uint64_t stream = sc.stream ? sc.stream : 0x5000 + static_cast<uint64_t>(index_);
      if (sc.launch_graph) {
        Record r{};
        r.kind = RecordKind::kGraphEvent;
        r.graph = {sc.launch_graph,
                   sc.launch_graph,
                   stream,
                   t,
                   100u + index_,
                   static_cast<uint8_t>(GraphEventKind::kLaunch),
                   {}};
        out.push_back(r);
        for (const auto& [comm, n] : graph_colls[sc.launch_graph]) coll_seq[comm] += n;
        continue;
      }
      CallRecord c{};
      c.uid = tw.NextCallUid();
      c.comm_id = s_.comms[sc.comm].id;
      c.rank = CommRank(sc.comm);
      const Api api = sc.api;
      if (sc.capture == 1 && IsCollective(api)) {
        c.seq = graph_colls[sc.graph][sc.comm]++;
      } else if (IsCollective(api)) {
        c.seq = coll_seq[sc.comm]++;
      } else if (IsP2p(api)) {
        c.seq = p2p_seq[{sc.comm, sc.root_peer, api == Api::kRecv}]++;
      } else {
        c.seq = kNoSeq;
      }
      c.type_seq = type_seq[{sc.comm, static_cast<uint16_t>(api)}]++;
      const bool data = IsCollective(api) || IsP2p(api);
      // Buffers differ per process, as they do in a real job.
      const uint64_t process_base = s_.same_addresses ? 0 : static_cast<uint64_t>(index_) << 36;
      c.sendbuff = data ? 0x7f1000000000ull + process_base + s_.address_salt +
                              (static_cast<uint64_t>(sc.tensor) << 24)
                        : 0;
      const bool in_place = api == Api::kAllReduce && !sc.out_of_place;
      c.recvbuff = in_place ? c.sendbuff : (data ? c.sendbuff + (1u << 20) : 0);
      c.count = data ? sc.count : 0;
      c.stream = stream;
      c.group_id = sc.group;
      c.graph_id = sc.graph;
      c.enter_ns = t;
      c.exit_ns = t + 4'000 + static_cast<int64_t>(c.count / 64);
      c.tid = 100u + index_;
      c.callsite =
          sc.callsite
              ? tw.Intern("site" + std::to_string(sc.callsite) +
                          (sc.caller ? "<caller" + std::to_string(sc.caller) : std::string()))
              : 0;
      c.root_peer = sc.root_peer;
      c.device = index_;
      c.op = sc.op;
      c.api = static_cast<uint16_t>(api);
      c.dtype = static_cast<uint8_t>(sc.dtype);
      c.group_depth = sc.group ? 1 : 0;
      c.result = sc.result;
      c.capture = sc.capture;
      c.flags = in_place ? call_flags::kInPlace : 0;
      if (sc.op >= kNumBuiltinOps) {
        c.flags |= call_flags::kPreMulSum;
        c.scalar = sc.scalar;
      }
      if (sc.in_flight) {
        c.flags |= call_flags::kInFlight;
        c.exit_ns = 0;
        c.result = 0;
      }
      for (SketchData sk : sc.sketches) {
        sk.call_uid = c.uid;
        tw.AddSketch(std::move(sk));
      }
      for (CaptureRefData cap : sc.captures) {
        cap.call_uid = c.uid;
        tw.AddCapture(std::move(cap));
      }
      Record r{};
      r.kind = RecordKind::kCall;
      r.call = c;
      out.push_back(r);
      if (sc.gpu != 0) {
        Record g{};
        g.kind = RecordKind::kGpuTime;
        g.gpu.call_uid = c.uid;
        g.gpu.start_ns = c.enter_ns + sc.gpu_after_ns;
        g.gpu.end_ns = sc.gpu == 2 ? g.gpu.start_ns + sc.gpu_ns : 0;
        g.gpu.source = static_cast<uint8_t>(GpuTimeSource::kEventPair);
        out.push_back(g);
      }
      t = c.exit_ns ? c.exit_ns : c.enter_ns;
    }
    return out;
  }

  const SyntheticScript& s_;
  const ScriptProcess& p_;
  const int index_;
  const int64_t base_;
  int64_t t0_ = 0;
};

}  // namespace

StatusOr<SyntheticTraceResult> WriteSyntheticScript(const SyntheticScript& script) {
  SyntheticTraceResult result;
  const int64_t base = MonotonicNs();
  for (size_t p = 0; p < script.processes.size(); ++p) {
    auto path = ScriptedProcessWriter(script, static_cast<int>(p), base).Write(&result.calls);
    if (!path.ok()) return path.status();
    result.files.push_back(path.value());
  }
  return result;
}

}  // namespace ncclrr
