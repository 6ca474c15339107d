// CheckSpread: `ncclrr check DIR --mpi`. Each member reads its share of the files (file i to
// member i mod P) and sends the others every record of them but the calls; each call goes to the
// member that checks its communicator (and to the one checking a cross-communicator pair that
// needs it, call_routing.h). Each member builds the model of what it holds and runs the checkers
// on its communicators; member 0 puts the findings and notes back into the order one process
// produces them (member_result.h).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "distributed/call_routing.h"
#include "distributed/member_result.h"
#include "distributed/share_check.h"
#include "distributed/share_plan.h"
#include "ncclrr/analysis/check.h"
#include "ncclrr/analysis/check_group.h"
#include "ncclrr/base/parallel_for.h"
#include "ncclrr/base/wire.h"
#include "ncclrr/trace/file_records_wire.h"

namespace ncclrr::analysis {
namespace {

void PutFacts(wire::Writer& w, uint32_t file, const FileFacts& f) {
  w.Put(file);
  w.Put(f.totals);
  w.Put<uint8_t>(f.needs_whole);
  w.Put<uint64_t>(f.calls_per_id.size());
  for (const auto& [id, n] : f.calls_per_id) {
    w.Put(id);
    w.Put(n);
  }
}

}  // namespace

StatusOr<Report> CheckSpread(const std::string& dir, CheckGroup& group, const CheckOptions& options,
                             SpreadStats* stats) {
  const auto t0 = std::chrono::steady_clock::now();
  const int members = group.size(), me = group.rank();
  auto progress = [&](const std::string& what) {
    if (options.progress && me == 0) options.progress(what);
  };
  progress("reading the files");
  auto listed = ListTraceFiles(dir);
  if (!listed.ok()) return listed.status();
  const size_t nlisted = listed->size();
  auto reader_of = [&](size_t listed_i) { return static_cast<int>(listed_i % members); };
  // This member reads its share of the files; the others' records but their calls come from
  // their readers.
  std::vector<std::optional<StatusOr<TraceFile>>> read(nlisted);
  {
    std::vector<std::string> paths;
    std::vector<size_t> index;
    for (size_t i = 0; i < nlisted; ++i)
      if (reader_of(i) == me) {
        paths.push_back((*listed)[i]);
        index.push_back(i);
      }
    LoadDirOptions lo;
    lo.threads = options.threads;
    std::vector<StatusOr<TraceFile>> got = ReadTraceFiles(paths, lo);
    std::string blob;
    wire::Writer w(&blob);
    for (size_t k = 0; k < got.size(); ++k) {
      w.Put<uint64_t>(index[k]);
      w.Put<uint8_t>(got[k].ok());
      if (got[k].ok()) {
        SaveRecordsButCalls(*got[k], &blob);
      } else {
        w.Put(got[k].status().code());
        w.Str(got[k].status().message());
      }
      read[index[k]].emplace(std::move(got[k]));
    }
    std::vector<std::string> all;
    NCCLRR_RETURN_IF_ERROR(group.AllGather(blob, &all));
    for (int m = 0; m < members; ++m) {
      if (m == me) continue;
      wire::Reader r(all[static_cast<size_t>(m)]);
      while (!r.done() && !r.bad()) {
        const auto i = r.Get<uint64_t>();
        const bool ok = r.Get<uint8_t>() != 0;
        if (i >= nlisted || reader_of(i) != m) break;
        if (!ok) {
          const auto code = r.Get<StatusCode>();
          read[i].emplace(Status(code, r.Str()));
          continue;
        }
        TraceFile t;
        size_t used = 0;
        if (!LoadRecordsButCalls(r.here(), r.left(), &used, &t)) break;
        r.Skip(used);
        read[i].emplace(std::move(t));
      }
    }
  }
  std::vector<StatusOr<TraceFile>> files;
  for (auto& r : read) {
    if (!r) return Corrupt("check --mpi: a member did not send what it read of a file");
    files.push_back(std::move(*r));
  }
  auto assembled = AssembleTraceDir(dir, std::move(files));
  if (!assembled.ok()) return assembled.status();
  TraceDir d = std::move(assembled.value());
  std::map<std::string, size_t> listed_index;
  for (size_t i = 0; i < nlisted; ++i) listed_index[(*listed)[i]] = i;
  const auto nfiles = static_cast<uint32_t>(d.files.size());
  std::vector<int> reader(nfiles);
  for (uint32_t f = 0; f < nfiles; ++f) reader[f] = reader_of(listed_index.at(d.files[f].path));

  // What each file's reader found in all of its calls, for every member.
  std::string facts_blob;
  {
    wire::Writer w(&facts_blob);
    for (uint32_t f = 0; f < nfiles; ++f)
      if (reader[f] == me) PutFacts(w, f, FactsOf(d.files[f]));
  }
  std::vector<std::string> all_facts;
  NCCLRR_RETURN_IF_ERROR(group.AllGather(facts_blob, &all_facts));
  std::vector<FileTotals> totals(nfiles);
  std::map<uint64_t, uint64_t> calls_per_id;
  // Spread only what the plan can place exactly: calls on communicators their files announced,
  // no data checks (their tallies span comms).
  bool whole = members == 1;
  for (const TraceFile& t : d.files) whole = whole || !t.sketches.empty() || !t.captures.empty();
  for (const std::string& blob : all_facts) {
    wire::Reader r(blob);
    while (!r.done() && !r.bad()) {
      const auto f = r.Get<uint32_t>();
      const auto t = r.Get<FileTotals>();
      const bool needs_whole = r.Get<uint8_t>() != 0;
      for (auto n = r.Get<uint64_t>(); n > 0 && !r.bad(); --n) {
        const auto id = r.Get<uint64_t>();
        calls_per_id[id] += r.Get<uint64_t>();
      }
      if (f < nfiles) totals[f] = t;
      whole = whole || needs_whole;
    }
    if (r.bad()) return Corrupt("check --mpi: a member sent facts this one cannot read");
  }

  progress("sharing out the communicators");
  const SharePlan plan = [&] {
    PartOfTrace part;
    part.totals = totals;
    const TraceModel skeleton = TraceModel::BuildPart(WithoutCalls(d), part, options.threads);
    return PlanShares(skeleton, calls_per_id, members, whole);
  }();

  // Each call to its communicator's owner, and to members checking a pair that needs it. One
  // member keeps the calls it read, in place.
  FileRows rows(nfiles);  // empty: the file's calls are all there
  uint64_t held = 0;
  progress("sending the calls");
  if (members > 1) {
    // In rounds of about kRoundCalls calls read per member, so that what is in flight stays
    // small beside what is kept; every member derives the same schedule from the totals.
    constexpr uint64_t kRoundCalls = 1 << 21;
    std::vector<std::vector<std::vector<uint32_t>>> rounds(static_cast<size_t>(members));
    std::vector<uint64_t> filled(static_cast<size_t>(members), 0);
    for (uint32_t f = 0; f < nfiles; ++f) {
      const auto m = static_cast<size_t>(reader[f]);
      if (rounds[m].empty() || (filled[m] + totals[f].calls > kRoundCalls && filled[m] > 0)) {
        rounds[m].emplace_back();
        filled[m] = 0;
      }
      rounds[m].back().push_back(f);
      filled[m] += totals[f].calls;
    }
    size_t nrounds = 0;
    for (const auto& r : rounds) nrounds = std::max(nrounds, r.size());
    CallRouter router(plan, members);
    for (size_t k = 0; k < nrounds; ++k) {
      std::string in;
      std::vector<uint64_t> in_sizes;
      {
        std::string out;
        std::vector<uint64_t> sizes;
        const auto& mine = rounds[static_cast<size_t>(me)];
        router.Encode(d, k < mine.size() ? mine[k] : std::vector<uint32_t>{}, options.threads, &out,
                      &sizes);
        NCCLRR_RETURN_IF_ERROR(group.AllToAllPacked(out, sizes, &in, &in_sizes));
      }
      if (!DecodeCalls(in, &d, &rows, &held))
        return Corrupt("check --mpi: a member sent calls this one cannot read");
    }
  } else {
    for (const TraceFile& t : d.files) held += t.calls.size();
  }

  progress("building the model");
  PartOfTrace part;
  part.totals = std::move(totals);
  for (int owner : plan.owner) part.whole_comms.push_back(owner == me);
  Status pooled = Status::Ok();
  part.pool_clock_samples = [&](ClockSamples mine) {
    std::string blob;
    wire::Writer w(&blob);
    for (const auto& [host, diffs] : mine) {
      w.Put(host);
      w.Vec(diffs);
    }
    std::vector<std::string> all;
    pooled = group.AllGather(blob, &all);
    ClockSamples pool;
    for (const std::string& b : all) {
      wire::Reader r(b);
      while (!r.done() && !r.bad()) {
        const int host = r.Get<int>();
        const std::vector<int64_t> diffs = r.Vec<int64_t>();
        pool[host].insert(pool[host].end(), diffs.begin(), diffs.end());
      }
    }
    return pool;
  };
  const TraceModel model = TraceModel::BuildPart(std::move(d), std::move(part), options.threads);
  NCCLRR_RETURN_IF_ERROR(pooled);
  CheckShare share = ShareOf(plan, me, model.comms().size());
  {  // The most advanced rank of each communicator, from its owner.
    std::vector<uint64_t> issued(model.comms().size(), 0);
    for (size_t ci = 0; ci < issued.size(); ++ci)
      if (share.owner[ci] == me) issued[ci] = model.comms()[ci].max_issued();
    std::string blob;
    wire::Writer(&blob).Vec(issued);
    std::vector<std::string> all;
    NCCLRR_RETURN_IF_ERROR(group.AllGather(blob, &all));
    share.max_issued.assign(issued.size(), 0);
    for (const std::string& b : all) {
      wire::Reader r(b);
      const std::vector<uint64_t> v = r.Vec<uint64_t>();
      for (size_t ci = 0; ci < v.size() && ci < issued.size(); ++ci)
        share.max_issued[ci] = std::max(share.max_issued[ci], v[ci]);
    }
  }
  // Positions explained by a checker on communicators other members check go to their owners
  // before the next checker runs.
  auto pass_claims = [&](uint32_t, CheckContext& ctx) {
    std::string blob;
    wire::Writer w(&blob);
    for (const auto& [ci, first, last] : ctx.TakeForeignClaims()) {
      w.Put<uint64_t>(ci);
      w.Put(first);
      w.Put(last);
    }
    std::vector<std::string> all;
    NCCLRR_RETURN_IF_ERROR(group.AllGather(blob, &all));
    for (const std::string& b : all) {
      wire::Reader r(b);
      while (!r.done() && !r.bad()) {
        const auto ci = r.Get<uint64_t>();
        const auto first = r.Get<uint64_t>();
        const auto last = r.Get<uint64_t>();
        if (ci < share.owner.size() && share.owner[ci] == me) ctx.Claim(ci, first, last);
      }
    }
    return Status::Ok();
  };
  CheckOptions member_options = options;
  if (me != 0) member_options.progress = nullptr;
  auto checked = CheckShareOf(model, member_options, share, rows, pass_claims);
  if (!checked.ok()) return checked.status();
  MemberResult mine = std::move(checked.value());
  if (stats) {
    stats->calls_held = held;
    stats->comms_owned =
        static_cast<uint64_t>(std::count(share.owner.begin(), share.owner.end(), me));
    stats->whole = whole;
  }

  std::vector<std::string> results;
  {
    std::vector<std::string> to(static_cast<size_t>(members));
    to[0] = EncodeResult(mine);
    NCCLRR_RETURN_IF_ERROR(group.AllToAll(to, &results));
  }
  Report report;
  if (me != 0) return report;
  std::vector<MemberResult> all;
  for (const std::string& b : results) all.push_back(DecodeResult(b));
  std::vector<Finding> findings;
  uint64_t occurrences = 0;
  MergeResults(std::move(all), &report.notes, &findings, &occurrences);
  FinishReport(model, std::move(findings), occurrences, &report);
  report.summary.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace ncclrr::analysis
