#include "ncclrr/analysis/report_format.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "model/comm_matching.h"
#include "ncclrr/base/json_writer.h"
#include "ncclrr/trace/describe.h"
#include "report/text_util.h"

namespace ncclrr::analysis {
namespace {

constexpr size_t kWidth = 100;

std::string Where(const Finding& f) {
  std::string s;
  if (f.comm != 0) {
    s = f.comm_name.empty() ? "comm " + Hex64(f.comm)
                            : "comm \"" + f.comm_name + "\" (" + Hex64(f.comm) + ")";
  }
  if (f.seq)
    s += (s.empty() ? "" : " ") + std::string(f.peer ? "pair index " : "seq ") +
         std::to_string(*f.seq);
  if (f.peer) s += " peer " + std::to_string(*f.peer);
  return s;
}

void AppendTable(const std::vector<TableRow>& rows, std::string* out) {
  if (rows.empty()) return;
  size_t wr = 4, ws = 3;
  for (const TableRow& r : rows) {
    wr = std::max(wr, r.rank.size());
    ws = std::max(ws, r.seq.size());
  }
  auto line = [&](const std::string& a, const std::string& b, const std::string& c, bool mark) {
    std::string s = "    " + std::string(wr - a.size(), ' ') + a + " | " +
                    std::string(ws - b.size(), ' ') + b + " | " + c;
    if (mark) s += "   <-- differs";
    *out += s + "\n";
  };
  line("rank", "seq", "call", false);
  for (const TableRow& r : rows) line(r.rank, r.seq, r.what, r.differs);
}

std::string RepeatLine(const Finding& f) {
  std::string s =
      "same " +
      std::string(f.kind == FindingKind::kOrderSwap || f.kind == FindingKind::kSuspectedSwap
                      ? "reordering"
                      : "mistake") +
      " repeats " + Plural(f.repeats, "more time", "more times");
  if (f.last_seq && f.seq && *f.last_seq != *f.seq)
    s += " (last at seq " + std::to_string(*f.last_seq) + ")";
  return s;
}

// For a finding on a communicator split (or shrunk) from another: which one, and which of its
// ranks each of this one's ranks is ("comm 0x…: 2 ranks, split of comm 0x…, color 1; its ranks
// 0, 1 are ranks 2, 3 there"). Frameworks make process groups by splitting the world without
// naming them, and a hash alone does not say which group a finding is about. "" otherwise.
std::string SplitLine(const TraceModel& m, const Finding& f) {
  if (f.comm == 0 || f.comm_index >= m.comms().size()) return "";
  const CommModel& c = m.comms()[f.comm_index];
  if (c.id != f.comm || c.parent_id == 0 ||
      (c.origin != CommOrigin::kSplit && c.origin != CommOrigin::kShrink))
    return "";
  const int parent = m.FindComm(c.parent_id, 0);
  std::string mine, theirs;
  for (const RankView& r : c.ranks) {
    if (!r.has_file() || parent < 0) continue;
    for (const auto& [ci, rank] : m.files()[static_cast<size_t>(r.file)].ranks)
      if (ci == static_cast<size_t>(parent)) {
        mine += (mine.empty() ? "" : ", ") + std::to_string(r.rank);
        theirs += (theirs.empty() ? "" : ", ") + std::to_string(rank);
        break;
      }
  }
  std::string s = "comm " + Hex64(c.id) + ": " + CommOriginText(m, c);
  if (!mine.empty()) s += "; its ranks " + mine + " are ranks " + theirs + " there";
  return s;
}

}  // namespace

std::string FormatText(const Report& report, const TraceModel* model, const FormatOptions& o) {
  std::string out;
  const int64_t t0 = report.start_ns;
  for (const Finding& f : report.findings) {
    const std::string where = Where(f);
    out += "error[" + std::string(FindingKindName(f.kind)) + "]: " + where +
           (where.empty() ? "" : ": ") + f.short_text + "\n";
    AppendTable(f.table, &out);
    if (model)
      if (const std::string split = SplitLine(*model, f); !split.empty())
        out += Wrap(split, kWidth, "    = ");
    if (!f.call_sites.empty()) out += Wrap("call sites: " + f.call_sites, kWidth, "    = ");
    out += Wrap(f.message, kWidth, "    = ");
    if (f.confidence) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "confidence %.2f", *f.confidence);
      out += std::string("    = ") + buf + "\n";
    }
    if (f.repeats) out += "    = " + RepeatLine(f) + "\n";
    if (!o.stable) out += "    = first at +" + Seconds(f.first_time - t0) + " into the trace\n";
    out += "\n";
  }
  for (const Note& n : report.notes)
    out += Wrap("note[" + std::string(NoteKindName(n.kind)) + "]: " + n.message, kWidth, "");
  if (!report.notes.empty()) out += "\n";
  const Summary& s = report.summary;
  std::string kinds;
  for (const auto& [k, n] : s.by_kind)
    kinds += (kinds.empty() ? "" : ", ") + Thousands(n) + " " + k;
  out += "summary: " + Plural(s.findings, "finding", "findings") + ", " +
         Plural(s.notes, "note", "notes") + (kinds.empty() ? "" : " (" + kinds + ")") + " in " +
         Plural(s.files, "process file", "process files") + ", " +
         Plural(s.comms, "communicator", "communicators") + ", " +
         Plural(s.ranks, "communicator rank", "communicator ranks") + ", " +
         Plural(s.calls, "call", "calls");
  if (o.strict && std::any_of(report.notes.begin(), report.notes.end(),
                              [](const Note& n) { return IsIncompleteness(n.kind); }))
    out += "; --strict: notes count as findings";
  if (!o.stable) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "; checked in %.3f s", s.seconds);
    out += buf;
  }
  out += "\n";
  return out;
}

std::string FormatJson(const Report& report, const TraceModel* model, const FormatOptions& o) {
  (void)model;
  std::string out;
  JsonWriter w(&out);
  w.BeginObject().Key("findings").BeginArray();
  for (const Finding& f : report.findings) {
    w.BeginObject();
    w.Key("kind").Str(FindingKindName(f.kind));
    w.Key("comm").Str(Hex64(f.comm));
    w.Key("comm_name").Str(f.comm_name);
    w.Key("seq");
    f.seq ? w.Uint(*f.seq) : w.Null();
    w.Key("peer");
    f.peer ? w.Int(*f.peer) : w.Null();
    w.Key("ranks").BeginArray();
    for (int r : f.ranks) w.Int(r);
    w.EndArray();
    w.Key("first_time");
    o.stable ? w.Null() : w.Int(f.first_time);
    w.Key("repeats").Uint(f.repeats);
    w.Key("last_seq");
    f.last_seq ? w.Uint(*f.last_seq) : w.Null();
    w.Key("confidence");
    f.confidence ? w.Double(*f.confidence, 3) : w.Null();
    w.Key("short").Str(f.short_text);
    w.Key("message").Str(f.message);
    w.Key("calls").BeginArray();
    for (const InvolvedCall& c : f.calls) {
      w.BeginObject().Key("rank").Int(c.rank).Key("seq");
      c.seq == kNoSeq ? w.Null() : w.Uint(c.seq);
      if (!o.stable) w.Key("file").Uint(c.call.file).Key("index").Uint(c.call.index);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray().Key("notes").BeginArray();
  for (const Note& n : report.notes) {
    w.BeginObject().Key("kind").Str(NoteKindName(n.kind));
    w.Key("file");
    n.file_name.empty() || o.stable ? w.Null() : w.Str(n.file_name);
    w.Key("ranks").BeginArray();
    for (const auto& [comm, rank] : n.ranks)
      w.BeginObject().Key("comm").Str(Hex64(comm)).Key("rank").Int(rank).EndObject();
    w.EndArray();
    w.Key("count").Uint(n.count);
    w.Key("message").Str(n.message);
    w.EndObject();
  }
  w.EndArray();
  const Summary& s = report.summary;
  w.Key("summary").BeginObject();
  w.Key("files").Uint(s.files).Key("comms").Uint(s.comms).Key("ranks").Uint(s.ranks);
  w.Key("calls").Uint(s.calls).Key("findings").Uint(s.findings);
  w.Key("occurrences").Uint(s.occurrences).Key("notes").Uint(s.notes);
  w.Key("by_kind").BeginObject();
  for (const auto& [k, n] : s.by_kind) w.Key(k).Uint(n);
  w.EndObject();
  w.Key("strict").Bool(o.strict).Key("exit_code").Int(report.ExitCode(o.strict));
  if (!o.stable) w.Key("seconds").Double(s.seconds, 6);
  w.EndObject();
  w.EndObject();
  out += "\n";
  return out;
}

}  // namespace ncclrr::analysis
