// Chrome trace JSON (`export --format chrome-json`; ui.perfetto.dev and chrome://tracing read
// it). Times are microseconds from the start of the trace on the common timeline. Processes are
// (file, device) pairs, named after the rank they hold on their largest communicator; threads
// are streams (thread 1 holds findings and host-only calls).
#include <algorithm>
#include <charconv>
#include <cinttypes>
#include <fstream>
#include <map>

#include "export/export_layout.h"
#include "ncclrr/analysis/perfetto_export.h"
#include "ncclrr/base/json_writer.h"
#include "ncclrr/trace/describe.h"

namespace ncclrr::analysis {
namespace {

class Exporter {
 public:
  Exporter(const TraceModel& m, std::ostream& os, ExportStats* st) : m_(m), os_(os), st_(*st) {}

  void Run(const Report* report, const ExportOptions& o) {
    buf_ = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
    first_ = true;
    NameProcesses();
    for (uint32_t f = 0; f < m_.files().size(); ++f) CallSlices(f);
    GraphLaunchSlices();
    if (o.flows) Flows();
    if (report) Findings(*report);
    buf_ += "\n]}\n";
    Flush(true);
  }

 private:
  // Microseconds since the trace start, as Chrome's format wants.
  std::string Us(int64_t common_ns) const {
    char b[32];
    const int64_t d = common_ns - m_.start_ns();
    std::snprintf(b, sizeof b, "%s%" PRId64 ".%03d", d < 0 ? "-" : "", std::abs(d) / 1000,
                  static_cast<int>(std::abs(d) % 1000));
    return b;
  }
  void Event(const std::string& body) {
    if (!first_) buf_ += ",\n";
    first_ = false;
    buf_ += body;
    ++st_.events;
    Flush(false);
  }
  void Flush(bool all) { FlushExport(buf_, os_, st_.bytes, all); }
  static std::string Q(std::string_view s) {
    std::string o = "\"";
    JsonWriter::Escape(s, &o);
    return o + "\"";
  }

  int Pid(uint32_t file, int device) {
    if (file == last_pid_key_.first && device == last_pid_key_.second) return last_pid_;
    auto [it, added] = pids_.try_emplace({file, device}, static_cast<int>(pids_.size()) + 1);
    last_pid_key_ = {file, device};
    return last_pid_ = it->second;
  }
  int Tid(int pid, uint64_t stream) {
    if (stream == 0) return 1;
    if (pid == last_tid_key_.first && stream == last_tid_key_.second) return last_tid_;
    last_tid_key_ = {pid, stream};
    return last_tid_ = NewTid(pid, stream);
  }
  int NewTid(int pid, uint64_t stream) {
    auto& m = tids_[pid];
    auto [it, added] = m.try_emplace(stream, static_cast<int>(m.size()) + 2);
    if (added)
      Event("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(pid) +
            ",\"tid\":" + std::to_string(it->second) +
            ",\"args\":{\"name\":" + Q("stream " + Hex64(stream)) + "}}");
    return it->second;
  }

  void NameProcesses() {
    for (const auto& [key, b] : ProcessRanks(m_)) {
      const int pid = Pid(key.first, key.second);
      Event("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(pid) +
            ",\"args\":{\"name\":" + Q(ProcessLabel(m_.files()[key.first], key.second, b.rank)) +
            "}}");
      Event("{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" + std::to_string(pid) +
            ",\"args\":{\"sort_index\":" + std::to_string(b.rank) + "}}");
      Event("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(pid) +
            ",\"tid\":1,\"args\":{\"name\":\"host calls and findings\"}}");
    }
  }

  // Appenders with std::to_chars: exports are hundreds of MB, and printf-style formatting
  // would be most of the time.
  static void Int(std::string& o, int64_t v) {
    char b[24];
    o.append(b, static_cast<size_t>(std::to_chars(b, b + sizeof b, v).ptr - b));
  }
  static void Uint(std::string& o, uint64_t v) {
    char b[24];
    o.append(b, static_cast<size_t>(std::to_chars(b, b + sizeof b, v).ptr - b));
  }
  static void Micros(std::string& o, int64_t ns) {  // ns as microseconds with 3 decimals
    if (ns < 0) {
      o += '-';
      ns = -ns;
    }
    Int(o, ns / 1000);
    const int frac = static_cast<int>(ns % 1000);
    o += '.';
    o += static_cast<char>('0' + frac / 100);
    o += static_cast<char>('0' + frac / 10 % 10);
    o += static_cast<char>('0' + frac % 10);
  }
  static void Hex(std::string& o, uint64_t v) {
    char b[19] = "0x0000000000000000";
    for (int i = 17; i >= 2; --i, v >>= 4) b[i] = "0123456789abcdef"[v & 15];
    o.append(b, 18);
  }

  std::string Slice(const CallRecord& c, uint32_t f, int64_t t, int64_t dur, int launch) {
    const int pid = Pid(f, c.device);
    const int tid = Tid(pid, c.stream);
    const Api api = static_cast<Api>(c.api);
    std::string o;
    o.reserve(256);
    o += "{\"ph\":\"X\",\"name\":\"";
    o += ApiName(api);
    o += "\",\"cat\":\"nccl\",\"pid\":";
    Int(o, pid);
    o += ",\"tid\":";
    Int(o, tid);
    o += ",\"ts\":";
    Micros(o, t - m_.start_ns());
    o += ",\"dur\":";
    Micros(o, std::max<int64_t>(dur, 1000));
    o += ",\"args\":{";
    if (IsCollective(api) || IsP2p(api)) {
      o += "\"count\":";
      Uint(o, c.count);
      o += ",\"dtype\":\"";
      o += DtypeName(c.dtype);
      o += "\",";
    }
    if (IsRooted(api) || IsP2p(api)) {
      o += IsP2p(api) ? "\"peer\":" : "\"root\":";
      Int(o, c.root_peer);
      o += ',';
    }
    if (c.seq != kNoSeq) {
      o += "\"seq\":";
      Uint(o, c.seq);
      o += ',';
    }
    if (launch) {
      o += "\"graph_launch\":";
      Int(o, launch);
      o += ',';
    }
    if (c.result) {
      o += "\"result\":\"";
      o += NcclResultName(c.result);
      o += "\",";
    }
    o += "\"comm\":\"";
    Hex(o, c.comm_id);
    o += "\",\"rank\":";
    Int(o, c.rank);
    o += "}}";
    return o;
  }

  void CallSlices(uint32_t f) {
    ForEachCallSpan(m_, f, [&](const CallRecord& c, uint32_t, int64_t start, int64_t dur) {
      Event(Slice(c, f, start, dur, 0));
    });
  }

  void GraphLaunchSlices() {
    ForEachGraphLaunch(m_, [&](const CollectiveSlot& s) {
      Event(Slice(m_.call(s.call), s.call.file, m_.SlotTime(s), 1000, s.launch));
    });
  }

  void Flows() {
    uint64_t id = 0;
    ForEachPairedGroup(m_, [&](uint64_t seq, const std::vector<const CollectiveSlot*>& at) {
      ++id;
      ++st_.flows;
      for (size_t k = 0; k < at.size(); ++k) {
        const CallRecord& call = m_.call(at[k]->call);
        const int pid = Pid(at[k]->call.file, call.device);
        const char* ph = k == 0 ? "s" : (k + 1 == at.size() ? "f" : "t");
        std::string o = "{\"ph\":\"";
        o += ph;
        o += "\",\"bp\":\"e\",\"cat\":\"seq\",\"name\":\"seq ";
        Uint(o, seq);
        o += "\",\"id\":";
        Uint(o, id);
        o += ",\"pid\":";
        Int(o, pid);
        o += ",\"tid\":";
        Int(o, Tid(pid, call.stream));
        o += ",\"ts\":";
        Micros(o, SlotTime(m_, *at[k]) - m_.start_ns());
        o += '}';
        Event(o);
      }
    });
  }

  void Findings(const Report& report) {
    for (const Finding& f : report.findings) {
      std::map<int, int64_t> pids;  // pid -> time
      for (const InvolvedCall& c : f.calls) {
        const int pid = Pid(c.call.file, m_.call(c.call).device);
        const int64_t t = m_.CallTime(c.call);
        if (!pids.count(pid) || t < pids[pid]) pids[pid] = t;
      }
      if (pids.empty()) pids[1] = f.first_time;
      for (const auto& [pid, t] : pids)
        Event("{\"ph\":\"i\",\"s\":\"p\",\"cat\":\"finding\",\"name\":" +
              Q(std::string(FindingKindName(f.kind))) + ",\"pid\":" + std::to_string(pid) +
              ",\"tid\":1,\"ts\":" + Us(t) + ",\"args\":{\"short\":" + Q(f.short_text) +
              ",\"message\":" + Q(f.message) + ",\"repeats\":" + std::to_string(f.repeats) + "}}");
    }
  }

  const TraceModel& m_;
  std::ostream& os_;
  ExportStats& st_;
  std::string buf_;
  bool first_ = true;
  std::map<std::pair<uint32_t, int>, int> pids_;
  std::pair<uint32_t, int> last_pid_key_{~0u, 0};  // the last lookups, usually repeated
  int last_pid_ = 0;
  std::pair<int, uint64_t> last_tid_key_{-1, 0};
  int last_tid_ = 0;
  std::map<int, std::map<uint64_t, int>> tids_;
};

}  // namespace

Status ExportChromeJson(const TraceModel& model, const Report* report, const ExportOptions& o,
                        std::ostream& out, ExportStats* stats) {
  return RunExporter<Exporter>(model, report, o, out, stats);
}

}  // namespace ncclrr::analysis
