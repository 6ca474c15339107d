#include "findings/capture_findings.h"

#include <algorithm>

#include "checks/checkers.h"
#include "findings/data_findings.h"
#include "report/text_util.h"

namespace ncclrr::analysis {
namespace {

const OutputCheck* CheckOf(const std::vector<OutputCheck>& checks, int rank) {
  for (const OutputCheck& o : checks)
    if (o.rank == rank) return &o;
  return nullptr;
}

// "element 17 is 3.5, the inputs give 4 (tolerance 1.2e-06); 3 of 64 elements differ"
std::string Detail(const OutputCheck& o) {
  std::string s = "element " + std::to_string(o.first) + " is " + o.observed +
                  (o.copy ? ", its source holds " : ", the inputs give ") + o.expected;
  if (o.tolerance > 0) s += " (tolerance " + Sci(o.tolerance) + ")";
  return s + "; " + Thousands(o.wrong) + " of " + Thousands(o.checked) + " elements differ";
}

std::string State(const OutputCheck* o) {
  if (o == nullptr) return "";
  if (o->wrong == 0) return o->copy ? "output equals its source" : "output matches its inputs";
  return "output " + Detail(*o);
}

}  // namespace

Finding CaptureWrongSum(const TraceModel& m, size_t ci, uint64_t seq, std::optional<int> peer,
                        const std::vector<RankBuffers>& ranks,
                        const std::vector<OutputCheck>& checks,
                        const std::vector<const OutputCheck*>& wrong) {
  Finding f = FindingOn(FindingKind::kWrongSum, m, ci);
  f.seq = seq;
  f.peer = peer;
  f.first_time = INT64_MAX;
  for (const RankBuffers& r : ranks) {
    f.first_time = std::min(f.first_time, r.time_ns);
    f.calls.push_back({r.call, r.rank, seq});
  }
  for (const OutputCheck* o : wrong) f.ranks.push_back(o->rank);
  std::sort(f.ranks.begin(), f.ranks.end());
  // Rows: the ranks that are right share one; each wrong output gets its own.
  std::vector<int> right;
  for (const RankBuffers& r : ranks) {
    const OutputCheck* o = peer && r.rank != *peer ? nullptr : CheckOf(checks, r.rank);
    if (o != nullptr && o->wrong > 0) continue;
    right.push_back(r.rank);
  }
  const CallRecord& c = m.call(ranks[0].call);
  const std::string call = ShortCall(c);
  if (!right.empty()) {
    const OutputCheck* o = peer ? nullptr : CheckOf(checks, right[0]);
    const std::string state = State(o);
    f.table.push_back({CompactRanks(right), std::to_string(seq),
                       call + (state.empty() ? "" : ": " + state), false});
  }
  for (const RankBuffers& r : ranks) {
    const OutputCheck* o = CheckOf(checks, r.rank);
    if (o == nullptr || o->wrong == 0 || (peer && r.rank != *peer)) continue;
    f.table.push_back({std::to_string(r.rank), std::to_string(seq),
                       ShortCall(m.call(r.call)) + ": " + State(o), true});
  }
  const bool copy = wrong[0]->copy;
  const std::string who = RankList(f.ranks);
  f.pattern = std::string("captured:") + call;
  f.short_text = (f.ranks.size() == 1 ? who + "'s output" : "the outputs of " + who) + " of " +
                 call + (f.ranks.size() == 1 ? " is" : " are") +
                 (copy ? " not a copy of what was sent" : " not what the ranks' inputs give");
  std::string details;
  for (size_t i = 0; i < wrong.size() && i < 4; ++i)
    details += " Rank " + std::to_string(wrong[i]->rank) + ": " + Detail(*wrong[i]) + ".";
  if (wrong.size() > 4) details += " (" + std::to_string(wrong.size() - 4) + " more ranks.)";
  f.message =
      std::string(peer ? "At pair index " : "At seq ") + std::to_string(seq) + " the output of " +
      call + " on " + who +
      (copy ? " differs from what was sent" : " is not what the ranks' inputs combine to") +
      ", although NCCL reported success. The buffers captured by `record --capture` (each send "
      "buffer before the call, each output after it) prove it element by element" +
      (copy || wrong[0]->tolerance == 0
           ? " (data movement and max/min/integer results must match exactly):"
           : " (beyond any rounding a summation order can make):") +
      details +
      " Look for a send buffer written by another stream or the host while the collective "
      "ran, an output read or overwritten before the collective's stream was waited on, or "
      "ranks that passed different buffers; `ncclrr replay --data captured` re-runs the call "
      "on these inputs.";
  return f;
}

}  // namespace ncclrr::analysis
