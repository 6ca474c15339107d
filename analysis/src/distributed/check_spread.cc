// CheckSpread: `ncclrr check DIR --mpi`. Each member reads every file's records but the calls,
// and the calls of its share of the files (file i to member i mod P); it sends each call to the
// member that checks its communicator (and to the one checking a cross-communicator pair that
// needs it), builds the model of what it holds, runs the checkers on its communicators, and
// member 0 puts the findings and notes back into the order one process would have produced.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "distributed/report_wire.h"
#include "distributed/share_plan.h"
#include "ncclrr/analysis/check.h"
#include "ncclrr/analysis/check_group.h"
#include "ncclrr/base/parallel_for.h"
#include "ncclrr/base/wire.h"
#include "ncclrr/trace/file_records_wire.h"

namespace ncclrr::analysis {
namespace {

// What the member that read a file found in all of its calls.
struct FileFacts {
  FileTotals totals;
  bool needs_whole = false;  // calls on a comm or rank no CommRecord of the file announced
  std::map<uint64_t, uint64_t> calls_per_id;
};

FileFacts FactsOf(const TraceFile& t) {
  FileFacts facts;
  std::set<std::pair<uint64_t, int>> announced;
  std::set<uint64_t> ids;
  for (const CommRecord& r : t.comms) {
    announced.insert({r.comm_id, r.rank});
    ids.insert(r.comm_id);
  }
  facts.totals.calls = t.calls.size();
  t.calls.ForEachRow([&](size_t, const CallRecord& c) {
    facts.totals.first_enter_ns = std::min(facts.totals.first_enter_ns, c.enter_ns);
    facts.totals.last_ns = std::max({facts.totals.last_ns, c.enter_ns, c.exit_ns});
    if (UnplaceableCall(c)) {
      ++facts.totals.unplaceable;
      return;
    }
    if (c.comm_id == 0) return;
    ++facts.calls_per_id[c.comm_id];
    if (!ids.count(c.comm_id) || (c.rank >= 0 && !announced.count({c.comm_id, c.rank})))
      facts.needs_whole = true;
  });
  return facts;
}

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

// The files' records but their calls (for the plan); `d` keeps its calls.
TraceDir WithoutCalls(TraceDir& d) {
  std::vector<CallTable> calls(d.files.size());
  for (size_t f = 0; f < d.files.size(); ++f) calls[f] = std::exchange(d.files[f].calls, {});
  TraceDir copy = d;
  for (size_t f = 0; f < d.files.size(); ++f) d.files[f].calls = std::move(calls[f]);
  return copy;
}

// Calls for other members: per file a part [u32 file, u32 0, u64 n, n u32 rows (the calls'
// indices in the whole file), the calls as a packed CallTable (CallTable::Save)], each part
// padded to whole 8-byte words, so that the calls stay packed on the way.
constexpr size_t kPartHeader = 16;

void PadTo8(std::string* s) { s->resize((s->size() + 7) / 8 * 8, '\0'); }

void AppendPart(uint32_t file, const std::vector<uint32_t>& rows, const CallTable& calls,
                std::string* out) {
  const uint32_t header[2] = {file, 0};
  const uint64_t n = rows.size();
  out->append(reinterpret_cast<const char*>(header), sizeof header);
  out->append(reinterpret_cast<const char*>(&n), sizeof n);
  out->append(reinterpret_cast<const char*>(rows.data()), n * sizeof(uint32_t));
  PadTo8(out);
  calls.Save(out);
  PadTo8(out);
}

class CallRouter {
 public:
  CallRouter(const SharePlan& plan, int members) : plan_(plan), members_(members) {}

  // The calls of `files` (read here; their calls are dropped) for every member, end to end in
  // member order in `out`, sizes[m] bytes for member m. Files are encoded on `threads` threads.
  void Encode(TraceDir& d, const std::vector<uint32_t>& files, int threads, std::string* out,
              std::vector<uint64_t>* sizes) const {
    const auto members = static_cast<size_t>(members_);
    struct Parts {
      std::vector<std::vector<uint32_t>> rows;
      std::vector<CallTable> tables;
    };
    std::vector<Parts> parts(files.size());
    ParallelFor(files.size(), threads, [&](size_t i) {
      Parts& p = parts[i];
      p.rows.resize(members);
      p.tables.resize(members);
      Split(files[i], &d.files[files[i]].calls, &p.rows, &p.tables);
    });
    out->clear();
    sizes->assign(members, 0);
    for (size_t m = 0; m < members; ++m) {
      const size_t before = out->size();
      for (size_t i = 0; i < files.size(); ++i)
        if (!parts[i].rows[m].empty())
          AppendPart(files[i], parts[i].rows[m], parts[i].tables[m], out);
      (*sizes)[m] = out->size() - before;
    }
  }

 private:
  // Calls without a communicator are never placed, nor are damaged ones (the files' totals count
  // them).
  static bool Routed(const CallRecord& c) { return c.comm_id != 0 && !UnplaceableCall(c); }

  // The members that need the calls of file `f` on comm `id`: its owner, and members checking a
  // cross-communicator pair that needs them.
  std::vector<int> Dests(uint32_t f, uint64_t id) const {
    std::vector<int> dests{plan_.OwnerOfId(id)};
    if (auto x = plan_.extra.find({f, id}); x != plan_.extra.end())
      for (int m : x->second)
        if (m != dests.front()) dests.push_back(m);
    return dests;
  }

  // File f's calls, per member that needs them (rows and calls); the file's table is emptied.
  void Split(uint32_t f, CallTable* calls, std::vector<std::vector<uint32_t>>* rows,
             std::vector<CallTable>* tables) const {
    constexpr size_t kStage = 1024;  // rows gathered per member before they are packed
    std::vector<std::vector<CallRecord>> stage(rows->size());
    auto flush = [&](size_t m) {
      (*tables)[m].Append(stage[m].data(), stage[m].size());
      stage[m].clear();
    };
    std::map<uint64_t, std::vector<int>> dests;  // per comm id, as the file goes
    calls->ForEachRow([&](size_t row, const CallRecord& c) {
      if (!Routed(c)) return;
      auto it = dests.find(c.comm_id);
      if (it == dests.end()) it = dests.emplace(c.comm_id, Dests(f, c.comm_id)).first;
      for (int dest : it->second) {
        const auto m = static_cast<size_t>(dest);
        (*rows)[m].push_back(static_cast<uint32_t>(row));
        stage[m].push_back(c);
        if (stage[m].size() == kStage) flush(m);
      }
    });
    for (size_t m = 0; m < stage.size(); ++m) flush(m);
    *calls = CallTable{};
  }

  const SharePlan& plan_;
  int members_;
};

// Takes the calls the members sent: each part becomes its file's calls, with their rows.
bool Decode(const std::string& in, TraceDir* d, std::vector<std::vector<uint32_t>>* rows,
            uint64_t* held) {
  size_t at = 0;
  while (at < in.size()) {
    if (in.size() - at < kPartHeader) return false;
    uint32_t header[2];
    uint64_t n = 0;
    std::memcpy(header, in.data() + at, sizeof header);
    std::memcpy(&n, in.data() + at + 8, sizeof n);
    const uint32_t f = header[0];
    at += kPartHeader;
    if (f >= d->files.size() || n > (in.size() - at) / sizeof(uint32_t)) return false;
    auto& r = (*rows)[f];
    r.resize(n);
    std::memcpy(r.data(), in.data() + at, n * sizeof(uint32_t));
    at = (at + n * sizeof(uint32_t) + 7) / 8 * 8;
    size_t used = 0;
    CallTable& calls = d->files[f].calls;
    if (at > in.size() || !calls.Load(in.data() + at, in.size() - at, &used) || calls.size() != n)
      return false;
    at = (at + used + 7) / 8 * 8;
    *held += n;
  }
  return true;
}

// Findings and notes of one member, each with the index of the checker that made it.
struct MemberResult {
  std::vector<std::pair<uint32_t, Finding>> findings;
  std::vector<std::pair<uint32_t, Note>> notes;
  uint64_t occurrences = 0;
};

std::string EncodeResult(const MemberResult& r) {
  std::string out;
  wire::Writer w(&out);
  w.Put(r.occurrences);
  w.Put<uint64_t>(r.findings.size());
  for (const auto& [k, f] : r.findings) {
    w.Put(k);
    wire::PutFinding(w, f);
  }
  w.Put<uint64_t>(r.notes.size());
  for (const auto& [k, n] : r.notes) {
    w.Put(k);
    wire::PutNote(w, n);
  }
  return out;
}

MemberResult DecodeResult(const std::string& blob) {
  MemberResult r;
  wire::Reader rd(blob);
  r.occurrences = rd.Get<uint64_t>();
  for (auto n = rd.Get<uint64_t>(); n > 0 && !rd.bad(); --n) {
    const auto k = rd.Get<uint32_t>();
    r.findings.emplace_back(k, wire::GetFinding(rd));
  }
  for (auto n = rd.Get<uint64_t>(); n > 0 && !rd.bad(); --n) {
    const auto k = rd.Get<uint32_t>();
    r.notes.emplace_back(k, wire::GetNote(rd));
  }
  return r;
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
  std::vector<std::vector<uint32_t>> rows(nfiles);  // empty: the file's calls are all there
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
      if (!Decode(in, &d, &rows, &held))
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
  CheckShare share;
  share.member = me;
  share.owner = plan.owner;
  share.owner.resize(model.comms().size(), 0);  // comms the plan did not see: only when whole
  for (const auto& [pair, host] : plan.pair_host)
    if (host == me) share.pairs.insert(pair);
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
  std::vector<bool> owned(model.comms().size());
  for (size_t ci = 0; ci < owned.size(); ++ci) owned[ci] = share.owner[ci] == me;
  progress("checking: logical identity");
  const LogicalIdentity identity = LogicalIdentity::Compute(model, options.threads, &owned);
  CheckContext ctx(model, options, identity, &share);
  auto checkers = BuiltinCheckers();
  checkers.insert(checkers.end(), options.extra_checkers.begin(), options.extra_checkers.end());
  MemberResult mine;
  for (uint32_t k = 0; k < checkers.size(); ++k) {
    progress("checking: " + std::string(checkers[k]->name()));
    FindingSink sink;
    checkers[k]->Run(ctx, sink);
    mine.occurrences += sink.findings().size();
    for (Finding& f : GroupRepeats(std::move(sink.findings()))) {
      f.call_sites = CallSitesOf(f, model);
      for (InvolvedCall& c : f.calls)  // rows of the whole file, as one process numbers them
        if (c.call.file < nfiles && c.call.index < rows[c.call.file].size())
          c.call.index = rows[c.call.file][c.call.index];
      mine.findings.emplace_back(k, std::move(f));
    }
    for (Note& n : sink.notes()) mine.notes.emplace_back(k, std::move(n));
    // Positions explained here on communicators other members check.
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
        if (ci < owned.size() && owned[ci]) ctx.Claim(ci, first, last);
      }
    }
  }
  if (stats) {
    stats->calls_held = held;
    stats->comms_owned = static_cast<uint64_t>(std::count(owned.begin(), owned.end(), true));
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
  // Notes: per checker, those about the whole trace (member 0's), then the communicators' in
  // comm order, as one process emits them.
  std::vector<std::pair<uint32_t, Note>> notes;
  for (const MemberResult& r : all)
    for (const auto& kn : r.notes)
      if (kn.second.comm_index >= 0 || &r == &all.front()) notes.push_back(kn);
  std::stable_sort(notes.begin(), notes.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first, a.second.comm_index) < std::tie(b.first, b.second.comm_index);
  });
  for (auto& [k, n] : notes) report.notes.push_back(std::move(n));
  std::vector<std::pair<uint32_t, Finding>> tagged;
  uint64_t occurrences = 0;
  for (MemberResult& r : all) {
    occurrences += r.occurrences;
    for (auto& kf : r.findings) tagged.push_back(std::move(kf));
  }
  std::stable_sort(tagged.begin(), tagged.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first, a.second.comm_index) < std::tie(b.first, b.second.comm_index);
  });
  std::vector<Finding> findings;
  for (auto& [k, f] : tagged) findings.push_back(std::move(f));
  FinishReport(model, std::move(findings), occurrences, &report);
  report.summary.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace ncclrr::analysis
