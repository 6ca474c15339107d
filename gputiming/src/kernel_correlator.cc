#include "ncclrr/gputiming/kernel_correlator.h"

#include <algorithm>
#include <string>

namespace ncclrr::gputiming {
namespace {

// A scope's records keep arriving for a while: CUPTI delivers buffers when they fill or at a
// flush, and a kernel's record only once it ends, which for a collective that waits for a late
// rank can be minutes. Bookkeeping older than this many rounds is dropped, but only once more
// than kKeepCorrelations correlations (or kKeepScopes group and graph-launch scopes) gathered:
// a stalled job, whose kernel is the one worth timing, makes few new ones.
constexpr uint64_t kForgetAfterRounds = 64;
constexpr size_t kKeepCorrelations = size_t{1} << 16;
constexpr size_t kKeepScopes = size_t{1} << 12;
// A kernel whose correlation record has not arrived after this many rounds, while a nonblocking
// scope waits on its device, is taken to be that scope's (launched on NCCL's own thread, where no
// id was pushed). CUPTI's default flush holds back a buffer while any record in it is incomplete,
// so one round is not always enough.
constexpr int kRoundsBeforeUncorrelated = 2;
// Otherwise a kernel waits for its correlation record: CUPTI may deliver the launch records only
// when their buffer fills or at the final forced flush, long after the kernel records (seen in
// PyTorch jobs, whose calls are sparse). Past this many waiting kernels the oldest give up.
constexpr size_t kMaxPendingKernels = size_t{1} << 18;

}  // namespace

void KernelCorrelator::AddGroup(uint64_t ext_id, std::vector<ScopeMember> members) {
  groups_[ext_id] = {std::move(members), round_};
}

void KernelCorrelator::AddNonblockingScope(uint64_t ext_id,
                                           const std::vector<ScopeMember>& members) {
  std::map<int32_t, std::vector<uint64_t>> by_device;
  for (const ScopeMember& m : members) by_device[m.device].push_back(m.uid);
  for (auto& [device, uids] : by_device) nonblocking_[device].push_back({ext_id, std::move(uids)});
}

void KernelCorrelator::AddGraphTemplate(uint64_t graph, const ScopeMember& member,
                                        uint64_t group_id) {
  graph_templates_[graph].push_back({member, group_id});
}

void KernelCorrelator::AddGraphLaunch(uint64_t ext_id, uint64_t graph) {
  auto it = graph_templates_.find(graph);
  if (it != graph_templates_.end()) launches_[ext_id] = {it->second, round_};
}

void KernelCorrelator::ForgetGraph(uint64_t graph) { graph_templates_.erase(graph); }

void KernelCorrelator::AddExternalCorrelation(uint32_t correlation_id, uint64_t ext_id) {
  correlation_[correlation_id] = {ext_id, round_};
}

void KernelCorrelator::AddKernel(const KernelActivity& kernel) {
  ++stats_.kernels;
  pending_.push_back({kernel, 0});
}

std::vector<uint64_t> KernelCorrelator::MembersOn(const std::vector<ScopeMember>& members,
                                                  int32_t device) const {
  std::vector<uint64_t> uids;
  for (const ScopeMember& m : members)
    if (m.device == device || m.device < 0) uids.push_back(m.uid);
  if (uids.empty())  // devices unknown or inconsistent: the kernel is the scope's all the same
    for (const ScopeMember& m : members) uids.push_back(m.uid);
  return uids;
}

void KernelCorrelator::Extend(const SpanKey& key, const KernelActivity& k,
                              const std::vector<uint64_t>& uids, bool keep_kernels) {
  Span& s = spans_[key];
  if (s.uids.empty()) s.uids = uids;
  s.start = std::min(s.start, k.start_ns);
  s.end = std::max(s.end, k.end_ns);
  if (keep_kernels) s.kernels.push_back({k.start_ns, k.end_ns});
  s.round = round_;
  ++stats_.matched;
}

void KernelCorrelator::Route(const KernelActivity& k, uint64_t ext_id) {
  const SpanKey key{ext_id, k.device};
  if ((ext_id & kTagMask) == 0) {  // a single call's uid
    Extend(key, k, {ext_id}, false);
  } else if (ext_id & kGroupTag) {
    auto it = groups_.find(ext_id);
    if (it == groups_.end()) {
      ++stats_.unmatched;
      return;
    }
    Extend(key, k, MembersOn(it->second.members, k.device), false);
  } else {
    if (launches_.find(ext_id) == launches_.end()) {
      ++stats_.unmatched;
      return;
    }
    Extend(key, k, {}, true);
  }
  // A nonblocking scope that launched on the calling thread after all: leave its queue.
  for (auto& [device, queue] : nonblocking_) {
    for (auto it = queue.begin(); it != queue.end(); ++it) {
      if (it->ext_id == ext_id) {
        queue.erase(it);
        break;
      }
    }
  }
}

bool KernelCorrelator::NonblockingWaits(int32_t device) const {
  for (int32_t d : {device, -1}) {
    auto it = nonblocking_.find(d);
    if (it != nonblocking_.end() && !it->second.empty()) return true;
  }
  return false;
}

void KernelCorrelator::RouteUncorrelated(const KernelActivity& k) {
  for (int32_t device : {k.device, -1}) {
    auto it = nonblocking_.find(device);
    if (it == nonblocking_.end() || it->second.empty()) continue;
    NonblockingEntry entry = std::move(it->second.front());
    it->second.pop_front();
    // Keyed by the scope id and device, so that a second kernel of the same scope (arriving
    // before the span is emitted) cannot take the next scope's place.
    Extend({entry.ext_id, k.device}, k, entry.uids, false);
    return;
  }
  ++stats_.unmatched;
}

void KernelCorrelator::EmitSpan(const SpanKey& key, Span& span, const Emit& emit,
                                const NoteFn& note) {
  auto record = [&](uint64_t uid, int64_t start, int64_t end) {
    GpuTimeRecord r{};
    r.call_uid = uid;
    r.start_ns = start;
    r.end_ns = end;
    r.source = static_cast<uint8_t>(source_);
    emit(r);
    ++stats_.records;
  };
  if ((key.first & kGraphLaunchTag) == 0) {
    for (uint64_t uid : span.uids) record(uid, span.start, span.end);
    return;
  }
  // A graph launch: units (a group, or one ungrouped template) on this device, in capture order.
  const std::vector<Template>& templates = launches_[key.first].templates;
  std::vector<std::vector<uint64_t>> units;
  uint64_t last_group = 0;
  for (const Template& t : templates) {
    if (t.member.device != key.second && t.member.device >= 0) continue;
    if (t.group_id != 0 && t.group_id == last_group && !units.empty()) {
      units.back().push_back(t.member.uid);
    } else {
      units.push_back({t.member.uid});
    }
    last_group = t.group_id;
  }
  std::sort(span.kernels.begin(), span.kernels.end());
  if (units.size() == span.kernels.size()) {
    for (size_t i = 0; i < units.size(); ++i)
      for (uint64_t uid : units[i]) record(uid, span.kernels[i].first, span.kernels[i].second);
    return;
  }
  ++stats_.graph_count_mismatches;
  if (note && !noted_graph_mismatch_) {
    noted_graph_mismatch_ = true;
    note("a CUDA graph launch ran " + std::to_string(span.kernels.size()) +
         " NCCL kernels on device " + std::to_string(key.second) + " for " +
         std::to_string(units.size()) +
         " recorded NCCL calls (or groups); each call of that launch gets the span of all its "
         "NCCL kernels");
  }
  for (const auto& unit : units)
    for (uint64_t uid : unit) record(uid, span.start, span.end);
}

void KernelCorrelator::Match(bool final, const Emit& emit, const NoteFn& note) {
  // Attribute the kernels whose correlation is known; give the others one more round.
  std::vector<PendingKernel> still;
  const size_t excess =
      pending_.size() > kMaxPendingKernels ? pending_.size() - kMaxPendingKernels : 0;
  for (size_t i = 0; i < pending_.size(); ++i) {
    PendingKernel& p = pending_[i];
    auto it = correlation_.find(p.k.correlation_id);
    if (it != correlation_.end()) {
      Route(p.k, it->second.first);
    } else if (final || i < excess ||
               (p.rounds >= kRoundsBeforeUncorrelated && NonblockingWaits(p.k.device))) {
      RouteUncorrelated(p.k);
    } else {
      ++p.rounds;
      still.push_back(p);
    }
  }
  pending_.swap(still);

  for (auto it = spans_.begin(); it != spans_.end();) {
    if (final || it->second.round < round_) {
      EmitSpan(it->first, it->second, emit, note);
      it = spans_.erase(it);
    } else {
      ++it;
    }
  }
  if (note && stats_.unmatched > 0 && !noted_unmatched_) {
    noted_unmatched_ = true;
    note(
        "some NCCL kernels ran that no recorded call launched (calls made before recording "
        "started, or launches ncclrr could not see); they have no GPU time");
  }

  ForgetOld();
  ++round_;
}

void KernelCorrelator::ForgetOld() {
  auto old = [&](uint64_t round) { return round_ - round > kForgetAfterRounds; };
  if (correlation_.size() > kKeepCorrelations)
    for (auto it = correlation_.begin(); it != correlation_.end();)
      it = old(it->second.second) ? correlation_.erase(it) : std::next(it);
  if (round_ % 16 != 0 || groups_.size() + launches_.size() <= kKeepScopes) return;
  // A scope can still be named by a kernel that CUPTI has not delivered yet; one that is older
  // than the forget period and has no open span is done.
  auto open = [&](uint64_t ext) {
    for (const auto& [key, span] : spans_)
      if (key.first == ext) return true;
    return false;
  };
  for (auto it = groups_.begin(); it != groups_.end();)
    it = old(it->second.round) && !open(it->first) ? groups_.erase(it) : std::next(it);
  for (auto it = launches_.begin(); it != launches_.end();)
    it = old(it->second.round) && !open(it->first) ? launches_.erase(it) : std::next(it);
}

}  // namespace ncclrr::gputiming
