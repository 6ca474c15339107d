#include "distributed/share_check.h"

#include <algorithm>
#include <set>
#include <utility>

namespace ncclrr::analysis {

FileFacts FactsOf(const TraceFile& t) {
  FileFacts facts;
  std::set<std::pair<uint64_t, int>> announced;
  std::set<uint64_t> ids;
  for (const CommRecord& r : t.comms) {
    announced.insert({r.comm_id, r.rank});
    ids.insert(r.comm_id);
  }
  facts.totals.calls = t.calls.size();
  std::vector<int64_t> tail(kTailCollectives);  // enter times of the last collectives, a ring
  uint64_t collectives = 0;
  t.calls.ForEachRow([&](size_t, const CallRecord& c) {
    if (TailCollective(c)) tail[collectives++ % kTailCollectives] = c.enter_ns;
    if (static_cast<Api>(c.api) == Api::kCommAbort && !UnplaceableCall(c)) ++facts.totals.aborts;
    facts.totals.first_enter_ns = std::min(facts.totals.first_enter_ns, c.enter_ns);
    facts.totals.last_ns = std::max({facts.totals.last_ns, c.enter_ns, c.exit_ns});
    if (LaterCommCall(c,
                      facts.totals.has_last_comm_call ? &facts.totals.last_comm_call : nullptr)) {
      facts.totals.has_last_comm_call = 1;
      facts.totals.last_comm_call = c;
    }
    if (UnplaceableCall(c)) {
      ++facts.totals.unplaceable;
      return;
    }
    if (c.comm_id == 0) return;
    ++facts.calls_per_id[c.comm_id];
    if (!ids.count(c.comm_id) || (c.rank >= 0 && !announced.count({c.comm_id, c.rank})))
      facts.needs_whole = true;
  });
  // A file with graph launches keeps them all: its seqs count the launches (ExpandGraphLaunches).
  if (collectives >= kTailCollectives && t.graph_events.empty())
    facts.totals.tail_from_ns = *std::min_element(tail.begin(), tail.end());
  return facts;
}

TraceDir WithoutCalls(TraceDir& d) {
  std::vector<CallTable> calls(d.files.size());
  for (size_t f = 0; f < d.files.size(); ++f) calls[f] = std::exchange(d.files[f].calls, {});
  TraceDir copy = d;
  for (size_t f = 0; f < d.files.size(); ++f) d.files[f].calls = std::move(calls[f]);
  return copy;
}

CheckShare ShareOf(const SharePlan& plan, int member, size_t ncomms) {
  CheckShare share;
  share.member = member;
  share.owner = plan.owner;
  share.owner.resize(ncomms, 0);
  for (const auto& [pair, host] : plan.pair_host)
    if (host == member) share.pairs.insert(pair);
  return share;
}

StatusOr<MemberResult> CheckShareOf(const TraceModel& model, const CheckOptions& options,
                                    const CheckShare& share, const FileRows& rows,
                                    const AfterChecker& after) {
  std::vector<bool> owned(model.comms().size());
  for (size_t ci = 0; ci < owned.size(); ++ci) owned[ci] = share.owner[ci] == share.member;
  if (options.progress) options.progress("checking: logical identity");
  const LogicalIdentity identity = LogicalIdentity::Compute(model, options.threads, &owned);
  CheckContext ctx(model, options, identity, &share);
  auto checkers = BuiltinCheckers();
  checkers.insert(checkers.end(), options.extra_checkers.begin(), options.extra_checkers.end());
  MemberResult mine;
  for (uint32_t k = 0; k < checkers.size(); ++k) {
    if (options.progress) options.progress("checking: " + std::string(checkers[k]->name()));
    FindingSink sink;
    checkers[k]->Run(ctx, sink);
    mine.occurrences += sink.findings().size();
    for (Finding& f : GroupRepeats(std::move(sink.findings()))) {
      f.call_sites = CallSitesOf(f, model);
      for (InvolvedCall& c : f.calls)  // rows of the whole file, as one process numbers them
        if (c.call.file < rows.size() && c.call.index < rows[c.call.file].size())
          c.call.index = rows[c.call.file][c.call.index];
      mine.findings.emplace_back(k, std::move(f));
    }
    for (Note& n : sink.notes()) mine.notes.emplace_back(k, std::move(n));
    NCCLRR_RETURN_IF_ERROR(after(k, ctx));
  }
  return mine;
}

}  // namespace ncclrr::analysis
