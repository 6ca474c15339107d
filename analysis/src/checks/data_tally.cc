#include "checks/data_tally.h"

#include <algorithm>

#include "report/text_util.h"

namespace ncclrr::analysis {
namespace {

// Why the check could not run, as a user would act on it.
std::string Explain(sketch::Verdict v) {
  switch (v) {
    case sketch::Verdict::kUncheckedOp:
      return "their reduction is not linear (max, min, prod, integer avg), so sketches cannot "
             "verify it: these are checked from captured data only (`ncclrr record --capture`)";
    case sketch::Verdict::kUncheckedNonFinite:
      return "their outputs hold NaN/Inf consistent with the inputs (e.g. AMP overflow steps, "
             "which the loss scaler skips): the projections are not comparable, and this is not "
             "a wrong sum";
    case sketch::Verdict::kUncheckedOverflow:
      return "a sketch overflowed (values beyond the range of its fp32 partial sums)";
    case sketch::Verdict::kMissingSketch:
      return "some rank has no sketch of them (recorded without --sketch, or the recorder "
             "skipped it while its sketch slots were busy: NCCLRR_SKETCH_SLOTS raises their "
             "number)";
    default:
      return sketch::VerdictName(v);
  }
}

}  // namespace

void DataTally::Add(sketch::Verdict v, uint64_t call_key, uint64_t comm, int rank,
                    const std::string& what) {
  Reason& r = reasons_[v];
  if (r.calls.insert(call_key).second) r.what[what]++;
  r.ranks.insert({comm, rank});
}

void DataTally::EmitNotes(FindingSink& sink) const {
  if (send_into_receive_ > 0) {
    Note n;
    n.kind = NoteKind::kDataUnchecked;
    n.count = send_into_receive_;
    n.ranks.assign(send_into_receive_ranks_.begin(), send_into_receive_ranks_.end());
    n.message = Plural(send_into_receive_, "send was", "sends were") +
                " not checked for races: a receive in the same group writes the same buffer "
                "(an in-place send/receive, as nccl-tests' in-place runs issue), so the buffer "
                "changes during the call by the job's own design. Their received data were "
                "checked.";
    sink.AddNote(std::move(n));
  }
  for (const auto& [verdict, r] : reasons_) {
    Note n;
    n.kind = NoteKind::kDataUnchecked;
    n.count = r.calls.size();
    n.ranks.assign(r.ranks.begin(), r.ranks.end());
    std::string kinds;
    for (const auto& [what, count] : r.what)
      kinds += (kinds.empty() ? "" : ", ") + Thousands(count) + " " + what;
    n.message = Plural(r.calls.size(), "call", "calls") + " with sketches (" + kinds +
                ") were not checked: " + Explain(verdict) + ". ";
    // The identity could not look at them, but output_divergence still did.
    const bool compared = verdict == sketch::Verdict::kUncheckedOp ||
                          verdict == sketch::Verdict::kUncheckedNonFinite ||
                          verdict == sketch::Verdict::kUncheckedOverflow;
    if (compared && std::any_of(r.what.begin(), r.what.end(),
                                [](const auto& w) { return w.first.rfind("AllReduce", 0) == 0; }))
      n.message +=
          "Their AllReduce outputs were still compared across ranks (they must be "
          "bit-identical on every rank). ";
    n.message += Plural(checked_, "call was", "calls were") + " checked from sketches.";
    sink.AddNote(std::move(n));
  }
}

}  // namespace ncclrr::analysis
