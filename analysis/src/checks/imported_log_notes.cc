#include "checks/imported_log_notes.h"

#include <set>

#include "ncclrr/analysis/nccl_log_import.h"
#include "ncclrr/trace/describe.h"
#include "report/text_util.h"

namespace ncclrr::analysis {

bool IsImportedFromLog(const TraceModel& m, size_t ci) {
  for (const RankView& r : m.comms()[ci].ranks)
    if (r.has_file() && m.file(static_cast<uint32_t>(r.file)).header.route == Route::kNcclLog)
      return true;
  return false;
}

void AddInferenceNotes(const TraceModel& m, FindingSink& sink) {
  std::set<std::string> seen;
  const std::string_view mark = kNcclLogInferenceNote;
  for (uint32_t f = 0; f < m.files().size(); ++f) {
    const TraceFile& t = m.file(f);
    if (t.header.route != Route::kNcclLog) continue;
    for (const NoteData& d : t.notes) {
      if (d.text.rfind(mark, 0) != 0 || !seen.insert(d.text).second) continue;
      Note n;
      n.kind = NoteKind::kInferred;
      n.message = d.text.substr(mark.size());
      sink.AddNote(std::move(n));
    }
  }
}

std::string AbsentFromLogs(const TraceModel& m, size_t ci, const std::vector<int>& absent) {
  const CommModel& c = m.comms()[ci];
  std::vector<int> logged;
  std::set<uint64_t> stops;
  for (const RankView& r : c.ranks)
    if (r.has_file()) {
      logged.push_back(r.rank);
      stops.insert(r.issued());
    }
  std::string s = std::to_string(logged.size()) + " of " + std::to_string(c.nranks) + " ranks of " +
                  CommLabel(c) + " logged; " + RankList(absent) +
                  " absent from the logs (their processes' logs were not given, or their hosts "
                  "were not logged).";
  if (stops.size() == 1 && *stops.begin() > 0) {
    const uint64_t last = *stops.begin() - 1;
    const CollectiveSlot* slot = c.ranks[logged.front()].AtSeq(last);
    s += " Every logged rank's last collective on it is seq " + std::to_string(last) +
         (slot ? " (" + ShortCall(m.call(slot->call)) + ")" : "") + ": if the job hung, " +
         RankList(logged) + " wait there for " + RankList(absent) +
         " — look at those ranks' logs for where they stopped.";
  }
  return s;
}

}  // namespace ncclrr::analysis
