#pragma once
// KernelCorrelator: turns NCCL kernel activity into per-call GPU times. Pure bookkeeping, no CUDA:
// the CUPTI source feeds it, tests drive it with synthetic records.
//
// Kernels reach a call through an external correlation id pushed around the launching code:
//  * the call's own uid, for a call outside a group (its kernel launches inside the call);
//  * kGroupTag|n, for the outermost ncclGroupEnd that launched the group's kernels; every member
//    on the kernel's device gets the span [first start, last end] of that device's kernels;
//  * kGraphLaunchTag|n, for a CUDA graph launch; the device's kernels, in start order, are
//    matched to the graph's NCCL templates on that device in capture order (a group counts once);
//    when the counts differ, every template gets the span and a note says so.
// Nonblocking communicators launch from NCCL's own thread, where no id is pushed: such scopes wait
// in a per-device queue and take, in order, the NCCL kernels of their device that carry no id.
//
// Records arrive in any order and across rounds (one round = one Match call after a CUPTI flush);
// a kernel is taken as uncorrelated only after two rounds without its correlation record.
// A span is emitted once it did not grow for a whole round, so each call gets one record.
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <unordered_map>
#include <vector>

#include "ncclrr/trace/records.h"

namespace ncclrr::gputiming {

inline constexpr uint64_t kGroupTag = uint64_t{1} << 63;
inline constexpr uint64_t kGraphLaunchTag = uint64_t{1} << 62;
inline constexpr uint64_t kTagMask = kGroupTag | kGraphLaunchTag;

struct KernelActivity {
  uint32_t correlation_id = 0;  // of the launching API call
  int32_t device = -1;
  int64_t start_ns = 0;  // host CLOCK_MONOTONIC
  int64_t end_ns = 0;
};

struct ScopeMember {
  uint64_t uid = 0;
  int32_t device = -1;  // -1: takes the kernels of every device
};

struct CorrelatorStats {
  uint64_t kernels = 0;
  uint64_t matched = 0;
  uint64_t unmatched = 0;
  uint64_t records = 0;
  uint64_t graph_count_mismatches = 0;
};

class KernelCorrelator {
 public:
  using Emit = std::function<void(const GpuTimeRecord&)>;
  using NoteFn = std::function<void(const std::string&)>;

  explicit KernelCorrelator(GpuTimeSource source = GpuTimeSource::kCupti) : source_(source) {}

  // What was pushed: the members of a group scope (ids with kGroupTag).
  void AddGroup(uint64_t ext_id, std::vector<ScopeMember> members);
  // A scope whose kernels NCCL launches from its own thread (nonblocking communicator).
  void AddNonblockingScope(uint64_t ext_id, const std::vector<ScopeMember>& members);
  // CUDA graphs: templates in capture order; a launch takes a snapshot of its graph's templates.
  void AddGraphTemplate(uint64_t graph, const ScopeMember& member, uint64_t group_id);
  void AddGraphLaunch(uint64_t ext_id, uint64_t graph);
  void ForgetGraph(uint64_t graph);

  // What CUPTI delivered.
  void AddExternalCorrelation(uint32_t correlation_id, uint64_t ext_id);
  void AddKernel(const KernelActivity& kernel);

  // One round: attributes what can be attributed, emits spans that stopped growing (all of them
  // when `final`). `note` hears about anomalies, once per kind.
  void Match(bool final, const Emit& emit, const NoteFn& note = nullptr);

  const CorrelatorStats& stats() const { return stats_; }
  size_t pending_kernels() const { return pending_.size(); }

 private:
  struct PendingKernel {
    KernelActivity k;
    int rounds = 0;
  };
  struct Span {
    int64_t start = INT64_MAX, end = INT64_MIN;
    std::vector<uint64_t> uids;  // members it is for (graph spans: filled at emission)
    std::vector<std::pair<int64_t, int64_t>> kernels;  // graph launches keep each kernel
    uint64_t round = 0;
  };
  struct Template {
    ScopeMember member;
    uint64_t group_id;
  };
  struct Group {
    std::vector<ScopeMember> members;
    uint64_t round = 0;  // when it was registered
  };
  struct Launch {
    std::vector<Template> templates;  // the graph's templates when it was launched
    uint64_t round = 0;
  };
  struct NonblockingEntry {
    uint64_t ext_id;
    std::vector<uint64_t> uids;
  };
  using SpanKey = std::pair<uint64_t, int32_t>;  // (external id, device)

  void Route(const KernelActivity& k, uint64_t ext_id);
  void RouteUncorrelated(const KernelActivity& k);
  bool NonblockingWaits(int32_t device) const;  // a nonblocking scope waits for a kernel there
  void Extend(const SpanKey& key, const KernelActivity& k, const std::vector<uint64_t>& uids,
              bool keep_kernels);
  void ForgetOld();
  void EmitSpan(const SpanKey& key, Span& span, const Emit& emit, const NoteFn& note);
  std::vector<uint64_t> MembersOn(const std::vector<ScopeMember>& members, int32_t device) const;

  GpuTimeSource source_;
  uint64_t round_ = 1;
  std::unordered_map<uint32_t, std::pair<uint64_t, uint64_t>> correlation_;  // -> (ext id, round)
  std::vector<PendingKernel> pending_;
  std::unordered_map<uint64_t, Group> groups_;
  std::map<SpanKey, Span> spans_;
  std::unordered_map<uint64_t, std::vector<Template>> graph_templates_;
  std::unordered_map<uint64_t, Launch> launches_;
  std::unordered_map<int32_t, std::deque<NonblockingEntry>> nonblocking_;
  CorrelatorStats stats_;
  bool noted_graph_mismatch_ = false, noted_unmatched_ = false;
};

}  // namespace ncclrr::gputiming
