// Notes about the trace itself: files that are missing, torn, unclosed or unreadable
// (trace_incomplete) and records the recorder could not keep (records_dropped). A missing rank's
// tail is marked untrusted so that missing_call never reports a hang the trace cannot show.
#include <string>

#include "checks/checkers.h"
#include "checks/imported_log_notes.h"
#include "report/text_util.h"

namespace ncclrr::analysis {
namespace {

class TraceNotesChecker : public Checker {
 public:
  std::string_view name() const override { return "trace notes"; }

  void Run(CheckContext& ctx, FindingSink& sink) override {
    const TraceModel& m = ctx.model();
    const bool stable = ctx.options().stable;
    if (ctx.Root()) FileNotes(m, stable, sink);
    for (size_t ci = 0; ci < m.comms().size(); ++ci) {
      if (!ctx.Owns(ci)) continue;
      const CommModel& c = m.comms()[ci];
      std::vector<int> absent;
      for (const RankView& r : c.ranks)
        if (!r.has_file()) absent.push_back(r.rank);
      if (absent.empty()) continue;
      for (int r : absent) ctx.MarkUntrustedTail(ci, r);
      Note n;
      n.kind = NoteKind::kTraceIncomplete;
      n.comm_index = static_cast<int64_t>(ci);
      for (int r : absent) n.ranks.push_back({c.id, r});
      if (IsImportedFromLog(m, ci)) {
        n.message = AbsentFromLogs(m, ci, absent);
        sink.AddNote(std::move(n));
        continue;
      }
      n.message = "no trace file holds " + RankList(absent) + " of " + CommLabel(c) + " (" +
                  std::to_string(c.nranks) +
                  " ranks): their processes were not recorded or their files are missing. "
                  "Calls of the other ranks are still compared among themselves; copy every "
                  "process's file into the trace directory to check them all.";
      sink.AddNote(std::move(n));
    }
  }

 private:
  // Notes about the files (and imported logs): the trace as a whole.
  static void FileNotes(const TraceModel& m, bool stable, FindingSink& sink) {
    for (const std::string& w : m.load_warnings()) {
      Note n;
      n.kind = NoteKind::kTraceIncomplete;
      n.message = "a trace file could not be read and is left out: " + w;
      if (stable) n.message = "a trace file could not be read and is left out";
      sink.AddNote(std::move(n));
    }
    for (size_t f = 0; f < m.files().size(); ++f) {
      const FileView& v = m.files()[f];
      const std::string who = FileLabel(m, f, stable);
      std::string why;
      if (v.torn)
        why = who +
              " ends inside a frame: the process died while writing, so its last calls "
              "(at most one flush, about 50 ms) are missing. Findings about where this "
              "process stopped are left out.";
      else if (!v.has_footer)
        why = who +
              " was not closed: the process was killed or is still running, so calls "
              "after its last flush (about 50 ms) may be missing.";
      if (!why.empty()) sink.AddNote(MakeNote(NoteKind::kTraceIncomplete, m, f, why));
      if (v.bad_frames > 0)
        sink.AddNote(MakeNote(NoteKind::kTraceIncomplete, m, f,
                              who + " has " + std::to_string(v.bad_frames) +
                                  " corrupt frame(s) that were skipped; the calls in them are "
                                  "missing (and with them, perhaps, records of a communicator's "
                                  "creation). Findings those missing calls could explain are "
                                  "left out."));
      if (v.unplaceable_calls > 0) {
        Note n = MakeNote(NoteKind::kTraceIncomplete, m, f,
                          who + " holds " + Thousands(v.unplaceable_calls) +
                              " call record(s) no rank or communicator can hold (a negative "
                              "rank, a collective without a communicator, an unknown operation, "
                              "or more data than any GPU holds): the file is damaged; they are "
                              "left out of every check.");
        n.count = v.unplaceable_calls;
        sink.AddNote(std::move(n));
      }
      if (!v.write_error.empty()) {
        const bool full = v.write_error.find("No space left") != std::string::npos;  // ENOSPC
        Note n = MakeNote(
            NoteKind::kRecordsDropped, m, f,
            who + ": writing the trace failed (" + v.write_error + ")" +
                (full ? ": the disk was full" : "") + ", and " + Thousands(v.dropped) +
                " record(s) could not be written. The process was not killed: it closed the "
                "file, but per-rank sequences have gaps from the failure on, and positions in "
                "the gaps are not compared. Record onto a disk with room (-o) to keep them.");
        n.count = v.dropped;
        sink.AddNote(std::move(n));
      } else if (v.dropped > 0) {
        Note n = MakeNote(NoteKind::kRecordsDropped, m, f,
                          who + " dropped " + Thousands(v.dropped) +
                              " record(s) (a full ring or disk): per-rank sequences have gaps "
                              "there, and positions in the gaps are not compared. Record with "
                              "a larger ring or on a faster disk to keep them.");
        n.count = v.dropped;
        sink.AddNote(std::move(n));
      }
    }
    AddInferenceNotes(m, sink);
  }

  static Note MakeNote(NoteKind kind, const TraceModel& m, size_t f, std::string message) {
    Note n;
    n.kind = kind;
    n.file = static_cast<int32_t>(f);
    n.file_name = m.files()[f].name;
    for (const auto& [ci, r] : m.files()[f].ranks) n.ranks.push_back({m.comms()[ci].id, r});
    n.message = std::move(message);
    return n;
  }
};

}  // namespace

std::shared_ptr<Checker> MakeTraceNotesChecker() { return std::make_shared<TraceNotesChecker>(); }

}  // namespace ncclrr::analysis
