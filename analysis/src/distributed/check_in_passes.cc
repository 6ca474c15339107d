// CheckInPasses: a trace larger than memory, checked a group of communicators at a time. The
// groups are the members of a spread check (check_spread.cc) taken one after the other: each
// pass over the files keeps one member's calls, and what members tell each other while they
// check (clock samples, how far each communicator went, positions explained on another's
// communicator) is kept here between the passes instead of sent.
#include "ncclrr/analysis/check_in_passes.h"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "distributed/call_routing.h"
#include "distributed/share_check.h"
#include "distributed/share_plan.h"
#include "ncclrr/base/memory_use.h"
#include "ncclrr/base/parallel_for.h"
#include "ncclrr/base/spill.h"

namespace ncclrr::analysis {
namespace {

using Claim = std::tuple<size_t, uint64_t, uint64_t>;  // comm index, first, last seq

// The files in runs of about `limit` (weight[i]: file i's bytes on disk, or its calls), so that one
// run's calls are held at a time.
std::vector<std::vector<size_t>> Runs(const std::vector<uint64_t>& weight, uint64_t limit) {
  std::vector<std::vector<size_t>> runs;
  uint64_t filled = 0;
  for (size_t i = 0; i < weight.size(); ++i) {
    if (runs.empty() || (filled > 0 && filled + weight[i] > limit)) {
      runs.emplace_back();
      filled = 0;
    }
    runs.back().push_back(i);
    filled += weight[i];
  }
  return runs;
}

// What a run of files may hold while it is read: a sixteenth of the budget, at ~24 bytes per
// packed call (and, before calls are counted, at one call per byte on disk, the densest traces).
constexpr uint64_t kRunShare = 16, kPackedCallBytes = 24;

// The trace's directory (a file's, for a single file): beside the trace, on the disk it fits on.
std::string SpillDirOf(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return path;
  const std::string parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

class Passes {
 public:
  Passes(std::string dir, const PassOptions& passes, const CheckOptions& options, PassStats* stats)
      : dir_(std::move(dir)), passes_(passes), options_(options), stats_(stats) {}

  StatusOr<Report> Run();

 private:
  Status FirstPass();
  // The model of member `m`'s share: a pass over the files keeping its calls.
  StatusOr<TraceModel> ShareModel(int m, const std::function<ClockSamples(ClockSamples)>& pool,
                                  FileRows* rows);
  Status CheckMember(int m);
  // Per-call arrays from now on in a file on disk (ncclrr/base/spill.h), if the options allow;
  // whether they are.
  bool SpillFromNow();
  uint64_t Budget() const { return passes_.memory_bytes ? passes_.memory_bytes : (4ull << 30); }
  void Progress(const std::string& what) const {
    if (options_.progress) options_.progress(what);
  }

  // First, so that it goes last: spilling stops once the arrays it placed are freed.
  std::optional<SpillScope> spill_;
  std::string dir_;
  PassOptions passes_;
  CheckOptions options_;
  PassStats* stats_;
  std::vector<std::string> listed_;
  std::vector<std::vector<size_t>> runs_;
  std::vector<std::optional<uint32_t>> file_of_listed_;  // index in d_.files
  TraceDir d_;                                           // every record but the calls
  std::vector<FileTotals> totals_;
  std::map<uint64_t, uint64_t> calls_per_id_;
  bool whole_ = false;
  SharePlan plan_;
  int members_ = 1;
  std::optional<TraceModel> skeleton_;
  ClockSamples pooled_;
  std::vector<uint64_t> max_issued_;
  bool pooled_known_ = false;
  std::vector<MemberResult> results_;
  // Claims made on each member's communicators, by the checker after which they apply.
  std::vector<std::map<uint32_t, std::set<Claim>>> claims_;
  std::vector<size_t> claims_when_checked_;
};

size_t CountClaims(const std::map<uint32_t, std::set<Claim>>& by_checker) {
  size_t n = 0;
  for (const auto& [k, set] : by_checker) n += set.size();
  return n;
}

bool Passes::SpillFromNow() {
  if (spill_) return true;
  if (!passes_.spill || !stats_->spill_error.empty()) return false;
  const std::string where = passes_.spill_dir.empty() ? SpillDirOf(dir_) : passes_.spill_dir;
  auto scope = SpillScope::Start(where);
  if (!scope.ok()) {
    stats_->spill_error = scope.status().message();
    return false;
  }
  spill_.emplace(std::move(scope.value()));
  stats_->spill_dir = GetSpillStats().dir;
  return true;
}

Status Passes::FirstPass() {
  auto listed = ListTraceFiles(dir_);
  if (!listed.ok()) return listed.status();
  listed_ = std::move(listed.value());
  std::vector<uint64_t> bytes(listed_.size(), 0);
  for (size_t i = 0; i < listed_.size(); ++i) {
    std::error_code ec;
    bytes[i] = std::filesystem::file_size(listed_[i], ec);
  }
  const uint64_t run_calls = std::max<uint64_t>(Budget() / kRunShare / kPackedCallBytes, 1 << 16);
  runs_ = Runs(bytes, run_calls);
  std::vector<StatusOr<TraceFile>> read;
  std::vector<FileFacts> facts(listed_.size());
  LoadDirOptions lo;
  lo.threads = options_.threads;
  size_t done = 0;
  for (const std::vector<size_t>& run : runs_) {
    std::vector<std::string> paths;
    uint64_t run_bytes = 0;
    for (size_t i : run) {
      paths.push_back(listed_[i]);
      run_bytes += bytes[i];
    }
    // A file whose calls (at most one a byte on disk) would take half the budget while read is
    // read with them on disk, and they are dropped once counted.
    const bool spilled_run = passes_.memory_bytes > 0 && !spill_ &&
                             run_bytes * kPackedCallBytes > passes_.memory_bytes / 2 &&
                             SpillFromNow();
    std::vector<StatusOr<TraceFile>> got = ReadTraceFiles(paths, lo);
    for (size_t k = 0; k < got.size(); ++k) {
      if (got[k].ok()) {
        facts[run[k]] = FactsOf(*got[k]);
        got[k]->calls = CallTable{};
      }
      read.push_back(std::move(got[k]));
    }
    if (spilled_run) spill_.reset();
    done += run.size();
    Progress("counting the calls: " + std::to_string(done) + " of " +
             std::to_string(listed_.size()) + " files");
  }
  auto assembled = AssembleTraceDir(dir_, std::move(read));
  if (!assembled.ok()) return assembled.status();
  d_ = std::move(assembled.value());
  std::map<std::string, uint32_t> file_of_path;
  for (uint32_t f = 0; f < d_.files.size(); ++f) file_of_path[d_.files[f].path] = f;
  file_of_listed_.resize(listed_.size());
  totals_.resize(d_.files.size());
  for (size_t i = 0; i < listed_.size(); ++i) {
    auto it = file_of_path.find(listed_[i]);
    if (it == file_of_path.end()) continue;
    file_of_listed_[i] = it->second;
    totals_[it->second] = facts[i].totals;
    for (const auto& [id, n] : facts[i].calls_per_id) calls_per_id_[id] += n;
    whole_ = whole_ || facts[i].needs_whole;
  }
  for (const TraceFile& t : d_.files) whole_ = whole_ || !t.sketches.empty() || !t.captures.empty();
  std::vector<uint64_t> calls(listed_.size(), 0);
  for (size_t i = 0; i < listed_.size(); ++i) calls[i] = facts[i].totals.calls;
  runs_ = Runs(calls, run_calls);  // counted now
  malloc_trim(0);  // what reading freed goes back, so that the memory in use is measured right
  PartOfTrace part;
  part.totals = totals_;
  skeleton_.emplace(TraceModel::BuildPart(WithoutCalls(d_), part, options_.threads));
  return Status::Ok();
}

StatusOr<TraceModel> Passes::ShareModel(int m,
                                        const std::function<ClockSamples(ClockSamples)>& pool,
                                        FileRows* rows) {
  TraceDir d = WithoutCalls(d_);
  rows->assign(d.files.size(), {});
  std::vector<uint64_t> limit(d.files.size());
  for (size_t f = 0; f < limit.size(); ++f) limit[f] = totals_[f].calls;
  const CallRouter router(plan_, members_);
  LoadDirOptions lo;
  lo.threads = options_.threads;
  for (const std::vector<size_t>& run : runs_) {
    std::vector<std::string> paths;
    std::vector<uint32_t> files;
    for (size_t i : run)
      if (file_of_listed_[i]) {
        paths.push_back(listed_[i]);
        files.push_back(*file_of_listed_[i]);
      }
    std::vector<StatusOr<TraceFile>> got = ReadTraceFiles(paths, lo);
    for (size_t k = 0; k < got.size(); ++k) {
      if (!got[k].ok())
        return Status(got[k].status().code(),
                      paths[k] + " could be read in the first pass over the trace but not now (" +
                          got[k].status().message() + "): was it changed or removed meanwhile?");
      d.files[files[k]].calls = std::move(got[k]->calls);
    }
    router.Keep(d, files, m, limit, options_.threads, rows);
  }
  ++stats_->reads;
  PartOfTrace part;
  part.totals = totals_;
  for (int owner : plan_.owner) part.whole_comms.push_back(owner == m);
  part.pool_clock_samples = pool;
  uint64_t held = 0;
  for (const TraceFile& t : d.files) held += t.calls.size();
  stats_->largest_share_calls = std::max(stats_->largest_share_calls, held);
  return TraceModel::BuildPart(std::move(d), std::move(part), options_.threads);
}

Status Passes::CheckMember(int m) {
  const std::string pass =
      "group " + std::to_string(m + 1) + " of " + std::to_string(members_) + ": ";
  Progress(pass + "reading its calls");
  FileRows rows;
  auto pool = [this](ClockSamples mine) { return pooled_known_ ? pooled_ : mine; };
  auto model = ShareModel(m, pool, &rows);
  if (!model.ok()) return model.status();
  CheckShare share = ShareOf(plan_, m, model->comms().size());
  share.max_issued = max_issued_;
  share.max_issued.resize(model->comms().size(), 0);
  for (size_t ci = 0; ci < share.owner.size(); ++ci)
    if (share.owner[ci] == m) share.max_issued[ci] = model->comms()[ci].max_issued();
  // Claims on other members' communicators are kept for them; theirs on this one's are taken,
  // after the checker that made them, as a spread check passes them.
  auto pass_claims = [&](uint32_t k, CheckContext& ctx) {
    for (const auto& [ci, first, last] : ctx.TakeForeignClaims())
      if (ci < share.owner.size())
        claims_[static_cast<size_t>(share.owner[ci])][k].insert({ci, first, last});
    for (const auto& [ci, first, last] : claims_[static_cast<size_t>(m)][k])
      ctx.Claim(ci, first, last);
    return Status::Ok();
  };
  CheckOptions member_options = options_;
  if (options_.progress)
    member_options.progress = [&](std::string_view s) { Progress(pass + std::string(s)); };
  claims_when_checked_[static_cast<size_t>(m)] = CountClaims(claims_[static_cast<size_t>(m)]);
  auto checked = CheckShareOf(*model, member_options, share, rows, pass_claims);
  if (!checked.ok()) return checked.status();
  results_[static_cast<size_t>(m)] = std::move(checked.value());
  return Status::Ok();
}

StatusOr<Report> Passes::Run() {
  const auto t0 = std::chrono::steady_clock::now();
  NCCLRR_RETURN_IF_ERROR(FirstPass());
  stats_->reads = 1;
  stats_->records_bytes = ResidentBytes();
  uint64_t routed = 0;
  for (const auto& [id, n] : calls_per_id_) routed += n;
  stats_->calls = 0;
  for (const FileTotals& t : totals_) stats_->calls += t.calls;
  if (passes_.shares > 0) {
    members_ = passes_.shares;
  } else if (passes_.memory_bytes > 0) {
    if (stats_->records_bytes >= passes_.memory_bytes)
      return Status(StatusCode::kInvalidArgument,
                    "the trace's records other than its calls already take " +
                        std::to_string(stats_->records_bytes >> 20) + " MiB, more than --memory (" +
                        std::to_string(passes_.memory_bytes >> 20) +
                        " MiB): give a larger --memory, or spread the check over machines "
                        "with `mpirun -np P ncclrr check DIR --mpi`");
    const uint64_t room = passes_.memory_bytes - stats_->records_bytes -
                          std::min(passes_.memory_bytes / kRunShare,
                                   passes_.memory_bytes - stats_->records_bytes - 1);
    members_ =
        static_cast<int>(std::clamp<uint64_t>((routed * kCheckBytesPerCall + room - 1) / room, 1,
                                              std::max<uint64_t>(calls_per_id_.size(), 1)));
  }
  if (whole_) members_ = 1;
  uint64_t largest = 0;
  for (const auto& [id, n] : calls_per_id_) largest = std::max(largest, n);
  // The group that cannot be cut: one communicator, or the whole trace for the data checks.
  const uint64_t uncut = whole_ ? routed : largest;
  const bool over = passes_.memory_bytes > 0 &&
                    stats_->records_bytes + uncut * kCheckBytesPerCall > passes_.memory_bytes;
  stats_->unbounded = whole_ || over;
  // The same check on the same arrays, with their pages in a file the kernel writes out and
  // reads back as memory runs short: a report byte for byte the in-memory one's.
  if (over && !SpillFromNow() && passes_.must_bound)
    return Status(StatusCode::kUnsupported, stats_->spill_error.empty()
                                                ? "its calls do not fit, and spilling them is off"
                                                : stats_->spill_error);
  plan_ = PlanShares(*skeleton_, calls_per_id_, members_, whole_);
  stats_->shares = members_;
  results_.resize(static_cast<size_t>(members_));
  claims_.resize(static_cast<size_t>(members_));
  claims_when_checked_.assign(static_cast<size_t>(members_), 0);
  max_issued_.assign(skeleton_->comms().size(), 0);

  // Clocks of several hosts are aligned from every member's matched collectives, and a pair of
  // communicators checked by one member needs how far the other went: a pass per member first
  // learns these, when the trace needs them.
  std::set<std::string> hosts;
  for (const FileView& f : skeleton_->files()) hosts.insert(f.host);
  if (members_ > 1 && (hosts.size() > 1 || !plan_.pair_host.empty())) {
    for (int m = 0; m < members_; ++m) {
      Progress("group " + std::to_string(m + 1) + " of " + std::to_string(members_) +
               ": aligning clocks");
      FileRows rows;
      auto keep = [this](ClockSamples mine) {
        for (auto& [host, diffs] : mine)
          pooled_[host].insert(pooled_[host].end(), diffs.begin(), diffs.end());
        return ClockSamples{};
      };
      auto model = ShareModel(m, keep, &rows);
      if (!model.ok()) return model.status();
      for (size_t ci = 0; ci < model->comms().size() && ci < max_issued_.size(); ++ci)
        if (plan_.owner[ci] == m) max_issued_[ci] = model->comms()[ci].max_issued();
    }
    pooled_known_ = true;
  }
  for (int m = 0; m < members_; ++m) NCCLRR_RETURN_IF_ERROR(CheckMember(m));
  // A member checked before another claimed positions on its communicators is checked again
  // with them (claims come from cross_comm_order, which claims none itself: one round settles).
  for (int round = 0; round < members_; ++round) {
    bool again = false;
    for (int m = 0; m < members_; ++m)
      if (CountClaims(claims_[static_cast<size_t>(m)]) !=
          claims_when_checked_[static_cast<size_t>(m)]) {
        NCCLRR_RETURN_IF_ERROR(CheckMember(m));
        again = true;
      }
    if (!again) break;
  }
  Report report;
  std::vector<Finding> findings;
  uint64_t occurrences = 0;
  MergeResults(std::move(results_), &report.notes, &findings, &occurrences);
  FinishReport(*skeleton_, std::move(findings), occurrences, &report);
  // The skeleton holds the communicators the files announced; a whole model also holds one per
  // id that only calls name (an init still in flight when its process was killed, say).
  std::set<uint64_t> announced;
  for (const CommModel& c : skeleton_->comms()) announced.insert(c.id);
  for (const auto& [id, n] : calls_per_id_) report.summary.comms += announced.count(id) == 0;
  report.summary.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace

uint64_t OnePassMemoryEstimate(const std::string& dir, int threads) {
  auto listed = ListTraceFiles(dir);
  if (!listed.ok()) return 0;
  std::vector<uint64_t> calls(listed->size(), 0);
  ParallelFor(listed->size(), threads, [&](size_t i) {
    auto s = ReadFileSummary((*listed)[i], 0);
    if (s.ok()) calls[i] = s->has_footer ? s->totals.calls : s->file_bytes;
  });
  uint64_t total = 0;
  for (uint64_t n : calls) total += n;
  return total * kCheckBytesPerCall;
}

StatusOr<Report> CheckInPasses(const std::string& dir, const PassOptions& passes,
                               const CheckOptions& options, PassStats* stats) {
  PassStats local;
  PassStats* s = stats ? stats : &local;
  if (passes.must_bound && passes.memory_bytes == 0)
    return Status(StatusCode::kUnsupported, "no memory is left to check it in");
  Passes p(dir, passes, options, s);
  auto report = p.Run();
  if (!s->spill_dir.empty()) {
    const SpillStats spilled = GetSpillStats();
    s->spilled_bytes = spilled.peak_bytes;
    s->spill_fallbacks = spilled.fallbacks;
  }
  return report;
}

}  // namespace ncclrr::analysis
