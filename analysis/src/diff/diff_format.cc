// Text and JSON renderings of a DiffReport (docs/diff.md shows both).
#include <algorithm>
#include <map>

#include "model/comm_matching.h"
#include "ncclrr/analysis/trace_diff.h"
#include "ncclrr/base/json_writer.h"
#include "ncclrr/trace/describe.h"
#include "report/text_util.h"

namespace ncclrr::analysis {
namespace {

constexpr size_t kWidth = 100;

std::string CommName(const TraceModel& a, const TraceModel& b, int ia, int ib) {
  const CommModel* ca = ia >= 0 ? &a.comms()[ia] : nullptr;
  const CommModel* cb = ib >= 0 ? &b.comms()[ib] : nullptr;
  const std::string name = ca && !ca->name.empty() ? ca->name : cb ? cb->name : "";
  std::string ids;
  if (ca) ids += "A " + Hex64(ca->id);
  if (cb) ids += std::string(ids.empty() ? "" : ", ") + "B " + Hex64(cb->id);
  return name.empty() ? "comm (" + ids + ")" : "comm \"" + name + "\" (" + ids + ")";
}

// Each rank's calls in both runs, one line per run ("A, B:" when they read the same).
void AppendTable(const std::vector<DiffRow>& rows, std::string* out) {
  size_t w = 0;
  for (const DiffRow& r : rows) w = std::max(w, std::to_string(r.rank).size());
  for (const DiffRow& r : rows) {
    const std::string rank = std::to_string(r.rank);
    const std::string head = "    rank " + std::string(w - rank.size(), ' ') + rank + "  ";
    const std::string pad(head.size(), ' ');
    const std::string a = r.a.empty() ? "(no call)" : r.a, b = r.b.empty() ? "(no call)" : r.b;
    if (a == b && !r.differs) {
      *out += head + "A, B: " + a + "\n";
      continue;
    }
    *out += head + "A: " + a + "\n" + pad + "B: " + b + (r.differs ? "   <-- differs" : "") + "\n";
  }
}

uint64_t Calls(const TraceModel& m) {
  uint64_t n = 0;
  for (const CommModel& c : m.comms())
    for (const RankView& r : c.ranks) n += r.collectives.size() + r.p2p.size();
  return n;
}

std::string RunLine(const char* which, const std::string& path, const TraceModel& m, bool stable) {
  return std::string("run ") + which + (stable || path.empty() ? "" : " = " + path) + ": " +
         Plural(m.files().size(), "process file", "process files") + ", " +
         Plural(m.comms().size(), "communicator", "communicators") + ", " +
         Plural(Calls(m), "call", "calls") + "\n";
}

std::map<std::string, uint64_t> ByKind(const DiffReport& r) {
  std::map<std::string, uint64_t> n;
  for (const Divergence& d : r.divergences) ++n[std::string(DiffKindName(d.kind))];
  return n;
}

std::string Compared(const DiffSummary& s) {
  std::string c = "order, arguments, call counts";
  if (s.call_sites_compared) c += ", call sites";
  if (s.data_compared) c += ", data";
  if (s.timing_compared) c += ", GPU timing";
  return c;
}

}  // namespace

std::string FormatDiffText(const DiffReport& r, const TraceModel& a, const TraceModel& b,
                           const DiffFormatOptions& o) {
  std::string out =
      RunLine("A", o.path_a, a, o.stable) + RunLine("B", o.path_b, b, o.stable) + "\n";
  for (const Divergence& d : r.divergences) {
    std::string where = CommName(a, b, d.comm_a, d.comm_b);
    if (d.seq_a) where += " " + std::string(d.p2p ? "p2p #" : "seq ") + std::to_string(*d.seq_a);
    out += "difference[" + std::string(DiffKindName(d.kind)) + "]: " + where + ": " + d.short_text +
           "\n";
    AppendTable(d.table, &out);
    out += Wrap(d.message, kWidth, "    = ");
    if (d.more)
      out += "    = the same kind of difference at " +
             Plural(d.more, "more position", "more positions") + " on this communicator\n";
    out += "\n";
  }
  for (const std::string& n : r.notes) out += Wrap("note: " + n, kWidth, "");
  if (!r.notes.empty()) out += "\n";
  const DiffSummary& s = r.summary;
  std::string kinds;
  for (const auto& [k, n] : ByKind(r))
    kinds += (kinds.empty() ? "" : ", ") + Thousands(n) + " " + k;
  out += "summary: " +
         (r.divergences.empty()
              ? std::string("equivalent, no differences")
              : Plural(r.divergences.size(), "difference", "differences") + " (" + kinds + ")") +
         "; " + Thousands(s.matched) + " of " + Thousands(s.comms_a) + " + " +
         Thousands(s.comms_b) + " communicators matched, " + Thousands(s.paired) + " of " +
         Thousands(s.calls_a) + " + " + Thousands(s.calls_b) + " calls paired; compared " +
         Compared(s) + "\n";
  return out;
}

std::string FormatDiffJson(const DiffReport& r, const TraceModel& a, const TraceModel& b,
                           const DiffFormatOptions& o) {
  std::string out;
  JsonWriter w(&out);
  auto comm_id = [&](const TraceModel& m, int i) {
    i >= 0 ? w.Str(Hex64(m.comms()[i].id)) : w.Null();
  };
  auto run = [&](const std::string& path, const TraceModel& m) {
    w.BeginObject().Key("path");
    o.stable || path.empty() ? w.Null() : w.Str(path);
    w.Key("files").Uint(m.files().size()).Key("comms").Uint(m.comms().size());
    w.Key("calls").Uint(Calls(m)).EndObject();
  };
  w.BeginObject().Key("runs").BeginObject().Key("a");
  run(o.path_a, a);
  w.Key("b");
  run(o.path_b, b);
  w.EndObject().Key("comms").BeginArray();
  for (const CommPair& p : r.comms) {
    const CommModel& c = p.a >= 0 ? a.comms()[p.a] : b.comms()[p.b];
    w.BeginObject().Key("a");
    comm_id(a, p.a);
    w.Key("b");
    comm_id(b, p.b);
    w.Key("name").Str(c.name).Key("nranks").Int(CommSize(c));
    w.Key("origin").Str(CommOriginText(p.a >= 0 ? a : b, c)).Key("loose").Bool(p.loose);
    w.EndObject();
  }
  w.EndArray().Key("divergences").BeginArray();
  for (const Divergence& d : r.divergences) {
    w.BeginObject().Key("kind").Str(DiffKindName(d.kind));
    w.Key("comm_a");
    comm_id(a, d.comm_a);
    w.Key("comm_b");
    comm_id(b, d.comm_b);
    const CommModel& c = d.comm_a >= 0 ? a.comms()[d.comm_a] : b.comms()[d.comm_b];
    w.Key("comm_name").Str(c.name);
    w.Key("seq_a");
    d.seq_a ? w.Uint(*d.seq_a) : w.Null();
    w.Key("seq_b");
    d.seq_b ? w.Uint(*d.seq_b) : w.Null();
    w.Key("p2p").Bool(d.p2p).Key("ranks").BeginArray();
    for (int rank : d.ranks) w.Int(rank);
    w.EndArray().Key("more").Uint(d.more);
    w.Key("short").Str(d.short_text).Key("message").Str(d.message);
    w.Key("table").BeginArray();
    for (const DiffRow& row : d.table)
      w.BeginObject()
          .Key("rank")
          .Int(row.rank)
          .Key("a")
          .Str(row.a)
          .Key("b")
          .Str(row.b)
          .Key("differs")
          .Bool(row.differs)
          .EndObject();
    w.EndArray();
    if (!o.stable) {
      for (const auto& [key, calls] : {std::pair{"calls_a", &d.calls_a}, {"calls_b", &d.calls_b}}) {
        w.Key(key).BeginArray();
        for (const CallRef& cr : *calls)
          w.BeginObject().Key("file").Uint(cr.file).Key("index").Uint(cr.index).EndObject();
        w.EndArray();
      }
    }
    w.EndObject();
  }
  w.EndArray().Key("notes").BeginArray();
  for (const std::string& n : r.notes) w.Str(n);
  w.EndArray();
  const DiffSummary& s = r.summary;
  w.Key("summary").BeginObject();
  w.Key("differences").Uint(r.divergences.size()).Key("by_kind").BeginObject();
  for (const auto& [k, n] : ByKind(r)) w.Key(k).Uint(n);
  w.EndObject();
  w.Key("comms_a").Uint(s.comms_a).Key("comms_b").Uint(s.comms_b).Key("matched").Uint(s.matched);
  w.Key("calls_a").Uint(s.calls_a).Key("calls_b").Uint(s.calls_b).Key("paired").Uint(s.paired);
  w.Key("compared").BeginObject().Key("call_sites").Bool(s.call_sites_compared);
  w.Key("data").Bool(s.data_compared).Key("timing").Bool(s.timing_compared).EndObject();
  w.Key("exit_code").Int(r.ExitCode());
  w.EndObject().EndObject();
  out += "\n";
  return out;
}

}  // namespace ncclrr::analysis
