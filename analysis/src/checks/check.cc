#include "ncclrr/analysis/check.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <tuple>

#include "checks/checkers.h"
#include "checks/job_runs.h"
#include "report/text_util.h"

namespace ncclrr::analysis {

std::vector<std::shared_ptr<Checker>> BuiltinCheckers() {
  // Order matters: notes first (they mark untrusted tails), then the sequence checker and the
  // cross-communicator check (they claim the positions they explain), then missing calls and
  // everything else that reads those claims. Captured buffers are checked before sketches: calls
  // they verify exactly are left alone by the sketch identity.
  // CUDA graphs come before the sequence: a rank that launched a graph more often than the
  // others mispairs everything after, and the graph check says where and claims the rest.
  return {MakeTraceNotesChecker(), MakeGraphChecker(),       MakeSequenceChecker(),
          MakeCrossCommChecker(),  MakeMissingCallChecker(), MakeP2pChecker(),
          MakeLifecycleChecker(),  MakeNcclErrorChecker(),   MakeStragglerChecker(),
          MakeCaptureChecker(),    MakeDataOrderChecker(),   MakeDataChecker()};
}

void CheckContext::Claim(size_t comm_index, uint64_t first, uint64_t last) {
  if (!Owns(comm_index)) foreign_claims_.emplace_back(comm_index, first, last);
  auto& m = claimed_[comm_index];
  // Merge with every interval that overlaps or touches [first, last] (kNoSeq: to the end).
  auto touches = [](uint64_t a_last, uint64_t b_first) {
    return a_last == kNoSeq || a_last + 1 >= b_first;
  };
  auto it = m.upper_bound(first);
  if (it != m.begin() && touches(std::prev(it)->second, first)) --it;
  while (it != m.end() && touches(last, it->first)) {
    first = std::min(first, it->first);
    last = std::max(last, it->second);
    it = m.erase(it);
  }
  m[first] = last;
}

bool CheckContext::Claimed(size_t comm_index, uint64_t seq) const {
  auto c = claimed_.find(comm_index);
  if (c == claimed_.end()) return false;
  auto it = c->second.upper_bound(seq);
  if (it == c->second.begin()) return false;
  return std::prev(it)->second >= seq;
}

std::optional<uint64_t> CheckContext::FirstClaimed(size_t comm_index) const {
  auto c = claimed_.find(comm_index);
  if (c == claimed_.end() || c->second.empty()) return std::nullopt;
  return c->second.begin()->first;
}

std::vector<Finding> GroupRepeats(std::vector<Finding> findings) {
  auto earlier = [](const Finding& a, const Finding& b) {
    return std::make_tuple(a.first_time, a.comm, a.seq.value_or(0), a.kind) <
           std::make_tuple(b.first_time, b.comm, b.seq.value_or(0), b.kind);
  };
  std::stable_sort(findings.begin(), findings.end(), earlier);
  std::map<std::tuple<FindingKind, size_t, uint64_t, std::vector<int>, std::string>, size_t> first;
  std::vector<Finding> out;
  for (Finding& f : findings) {
    auto key = std::make_tuple(f.kind, f.comm_index, f.comm, f.ranks, f.pattern);
    auto [it, added] = first.try_emplace(key, out.size());
    if (added) {
      out.push_back(std::move(f));
      continue;
    }
    Finding& g = out[it->second];
    g.repeats += 1 + f.repeats;
    if (f.seq) g.last_seq = std::max(g.last_seq.value_or(0), f.last_seq.value_or(*f.seq));
  }
  return out;
}

Report Check(const TraceModel& model, const CheckOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  Report report;
  const LogicalIdentity identity = LogicalIdentity::Compute(model, options.threads);
  CheckContext ctx(model, options, identity);
  FindingSink sink;
  auto checkers = BuiltinCheckers();
  checkers.insert(checkers.end(), options.extra_checkers.begin(), options.extra_checkers.end());
  for (const auto& c : checkers) {
    if (options.progress) options.progress("checking: " + std::string(c->name()));
    c->Run(ctx, sink);
  }
  report.notes = std::move(sink.notes());
  const uint64_t occurrences = sink.findings().size();
  FinishReport(model, std::move(sink.findings()), occurrences, &report);
  for (Finding& f : report.findings) f.call_sites = CallSitesOf(f, model);
  report.summary.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

Explained ExplainedPositions(const TraceModel& model, const CheckOptions& options) {
  const LogicalIdentity identity = LogicalIdentity::Compute(model, options.threads);
  CheckContext ctx(model, options, identity);
  FindingSink sink;
  for (const auto& c : BuiltinCheckers()) c->Run(ctx, sink);
  Explained out;
  out.positions = ctx.claims();
  for (const CheckContext::DataOrder& d : ctx.data_orders())
    out.data_swaps.push_back({d.comm, d.rank, d.seq, d.other});
  return out;
}

// Each call's innermost frame; where two calls of the finding share it but were reached from
// different callers (a helper called from two lines), the caller that tells them apart too.
std::string CallSitesOf(const Finding& f, const TraceModel& m) {
  constexpr size_t kMaxSites = 6;
  std::vector<std::pair<const InvolvedCall*, std::string>> stacks;
  for (const InvolvedCall& c : f.calls) {
    if (c.call.file >= m.dir().files.size() ||
        c.call.index >= m.dir().files[c.call.file].calls.size())
      continue;
    const CallRecord r = m.call(c.call);
    if (r.callsite != 0) stacks.emplace_back(&c, m.file(c.call.file).String(r.callsite));
  }
  auto innermost = [](const std::string& s) { return s.substr(0, s.find('<')); };
  std::set<std::string> seen;
  std::string text;
  for (const auto& [c, stack] : stacks) {
    std::string site = innermost(stack);
    if (site.empty()) continue;
    for (const auto& [other, other_stack] : stacks)
      if (other_stack != stack && innermost(other_stack) == site) {
        const std::string caller = PartingFrames(stack, other_stack).first;
        if (!caller.empty()) site += " from " + caller;
        break;
      }
    const std::string part = "rank " + std::to_string(c->rank) +
                             (c->seq == kNoSeq ? "" : " seq " + std::to_string(c->seq)) + " at " +
                             site;
    if (seen.size() == kMaxSites || !seen.insert(part).second) continue;
    text += (text.empty() ? "" : "; ") + part;
  }
  return text;
}

void FinishReport(const TraceModel& model, std::vector<Finding> findings, uint64_t occurrences,
                  Report* report) {
  Summary& s = report->summary;
  s.occurrences = occurrences;
  report->findings = GroupRepeats(std::move(findings));
  NoteEarlierRuns(model, &report->findings);
  report->start_ns = model.start_ns();
  // Messages are sentences; checkers often start them with "rank 3 ..." (but never capitalise
  // an identifier such as ncclCommFinalize).
  for (Finding& f : report->findings)
    if (f.message.rfind("rank", 0) == 0) f.message[0] = 'R';
  // No call to check (docs/check.md: exit 2, "no usable trace"): an empty file, a process that
  // stopped before its first NCCL call, or only records no rank or communicator can hold.
  uint64_t placeable = model.total_calls();
  for (const FileView& f : model.files()) placeable -= std::min(placeable, f.unplaceable_calls);
  if (placeable == 0) {
    report->usable = false;
    Note n;
    n.kind = NoteKind::kTraceIncomplete;
    n.message = "the trace holds no NCCL call that can be checked (" +
                Plural(model.files().size(), "file", "files") +
                " read, no call record in them, or only damaged ones): nothing was checked. Was "
                "the job stopped before its first NCCL call? `ncclrr info DIR` lists what each "
                "file holds.";
    report->notes.push_back(std::move(n));
  }
  s.files = model.files().size();
  s.comms = model.comms().size();
  for (const CommModel& c : model.comms()) s.ranks += c.ranks.size();
  s.calls = model.total_calls();
  s.findings = report->findings.size();
  s.notes = report->notes.size();
  for (const Finding& f : report->findings) s.by_kind[std::string(FindingKindName(f.kind))]++;
  for (const Note& n : report->notes) s.by_kind[std::string(NoteKindName(n.kind))]++;
}

}  // namespace ncclrr::analysis
