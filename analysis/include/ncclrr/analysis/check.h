#pragma once
// Check(model) -> Report: runs every checker over a TraceModel. Each finding kind comes from a
// small Checker; the data checks (wrong_sum, buffer_race, data-based suspected_swap) plug in as
// further checkers (add them to BuiltinCheckers() in check.cc, or pass them in CheckOptions).
//
// Checkers run in order and share a CheckContext. Structural checkers claim the (comm, seq)
// positions they explained, so later checkers do not report the same positions again (an
// order_swap explains the per-position mismatches it causes; a wrong_sum at a swapped position
// is expected, not news).
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "ncclrr/analysis/finding.h"
#include "ncclrr/analysis/logical_identity.h"
#include "ncclrr/analysis/model.h"

namespace ncclrr::analysis {

struct CheckOptions {
  bool stable = false;         // no addresses, pids or times in messages
  size_t reorder_window = 64;  // longest run of calls an order_swap may permute
  // Same-shape reorders are reported as suspected_swap below this logical-identity confidence
  // unless call sites prove them (see docs/check.md).
  double swap_confidence_floor = 0.5;
  std::vector<std::shared_ptr<class Checker>> extra_checkers;  // run after the built-in ones
  std::function<void(std::string_view)> progress;              // long traces
  int threads = CoreCount();  // big communicators are analysed rank-parallel
};

// This process's part when a check is spread over processes (check_group.h): the communicators
// it checks, the pairs of communicators whose cross-communicator order it checks, and what it
// needs to know of communicators it holds only in part.
struct CheckShare {
  int member = 0;                                 // 0 prints the report
  std::vector<int> owner;                         // per comm index: the member that checks it
  std::set<std::pair<uint32_t, uint32_t>> pairs;  // (x, y) comm indices checked here
  std::vector<uint64_t> max_issued;               // per comm index, over all of its ranks
};

class CheckContext {
 public:
  CheckContext(const TraceModel& model, const CheckOptions& options,
               const LogicalIdentity& identity, const CheckShare* share = nullptr)
      : model_(model), options_(options), identity_(identity), share_(share) {}
  const TraceModel& model() const { return model_; }
  const CheckOptions& options() const { return options_; }
  const LogicalIdentity& identity() const { return identity_; }

  // Whether this process checks communicator `ci` (always, unless the check is spread), the
  // cross-communicator order of comms x and y, and what concerns the whole trace.
  bool Owns(size_t ci) const { return !share_ || share_->owner[ci] == share_->member; }
  bool ChecksPair(uint32_t x, uint32_t y) const { return !share_ || share_->pairs.count({x, y}); }
  bool Root() const { return !share_ || share_->member == 0; }
  // The number of collectives the most advanced rank of `ci` issued (all of its ranks, also
  // where this process holds only some).
  uint64_t MaxIssued(size_t ci) const {
    return share_ ? share_->max_issued[ci] : model_.comms()[ci].max_issued();
  }
  // Claims made here on communicators other processes check: they are sent to their owners.
  std::vector<std::tuple<size_t, uint64_t, uint64_t>> TakeForeignClaims() {
    return std::exchange(foreign_claims_, {});
  }

  // Positions already explained by an earlier finding: seqs first..last (inclusive).
  void Claim(size_t comm_index, uint64_t first, uint64_t last);
  void Claim(size_t comm_index, uint64_t seq) { Claim(comm_index, seq, seq); }
  bool Claimed(size_t comm_index, uint64_t seq) const;
  // Every claim so far: comm index -> first seq -> last seq (disjoint, kNoSeq: to the end).
  const std::map<size_t, std::map<uint64_t, uint64_t>>& claims() const { return claimed_; }
  // The first claimed seq of a communicator, if any (a mismatch there may mispair what follows).
  std::optional<uint64_t> FirstClaimed(size_t comm_index) const;
  // Same-shape calls the sketched data say a rank issued in another order (the data-order
  // check): the rank's call at `seq` holds the tensor the reference issued at `other`.
  void NoteDataOrder(size_t comm_index, int rank, uint64_t seq, uint64_t other) {
    data_orders_.push_back({comm_index, rank, seq, other});
  }
  struct DataOrder {
    size_t comm = 0;
    int rank = -1;
    uint64_t seq = 0, other = 0;
  };
  const std::vector<DataOrder>& data_orders() const { return data_orders_; }
  // The earliest mismatch reported on a communicator (its time on the common timeline and
  // "kind at seq N"): errors NCCL raised there after it are its consequences (nccl_error).
  void NoteMismatch(size_t comm_index, int64_t time_ns, std::string what) {
    auto [it, added] = mismatches_.try_emplace(comm_index, time_ns, what);
    if (!added && time_ns < it->second.first) it->second = {time_ns, std::move(what)};
  }
  const std::pair<int64_t, std::string>* FirstMismatch(size_t comm_index) const {
    auto it = mismatches_.find(comm_index);
    return it == mismatches_.end() ? nullptr : &it->second;
  }
  // A rank that skipped (delta > 0) or added (delta < 0) calls mid-stream, as the sequence
  // alignment found: the missing-call check adds it back before comparing how many calls each
  // rank issued, so one skipped call is reported once.
  void ExplainIssuedDifference(size_t comm_index, int rank, int64_t delta) {
    explained_[{comm_index, rank}] += delta;
  }
  int64_t ExplainedDifference(size_t comm_index, int rank) const {
    auto it = explained_.find({comm_index, rank});
    return it == explained_.end() ? 0 : it->second;
  }
  // Calls whose outputs were verified from captured buffers (`record --capture`): the sketch
  // checks leave their outputs alone. Collectives by seq; Send/Recv pairs also by (sender,
  // receiver) with their per-pair index as `seq`.
  void MarkCaptureVerified(size_t comm_index, uint64_t seq, int sender = -1, int receiver = -1) {
    capture_verified_.insert({comm_index, seq, sender, receiver});
  }
  bool CaptureVerified(size_t comm_index, uint64_t seq, int sender = -1, int receiver = -1) const {
    return capture_verified_.count({comm_index, seq, sender, receiver}) != 0;
  }
  // A wrong_sum the captured buffers prove, held back (when the trace also has sketches) until
  // the data checks know whether a buffer race explains it: then it becomes part of that
  // buffer_race finding; otherwise the data checks emit it as it is. Keys as above.
  void DeferCaptureWrongSum(size_t comm_index, uint64_t seq, int sender, int receiver, Finding f) {
    capture_wrong_.emplace(std::make_tuple(comm_index, seq, sender, receiver), std::move(f));
  }
  std::optional<Finding> TakeCaptureWrongSum(size_t comm_index, uint64_t seq, int sender = -1,
                                             int receiver = -1) {
    auto it = capture_wrong_.find({comm_index, seq, sender, receiver});
    if (it == capture_wrong_.end()) return std::nullopt;
    Finding f = std::move(it->second);
    capture_wrong_.erase(it);
    return f;
  }
  std::vector<Finding> TakeAllCaptureWrongSums() {
    std::vector<Finding> out;
    for (auto& [key, f] : capture_wrong_) out.push_back(std::move(f));
    capture_wrong_.clear();
    return out;
  }
  // Ranks whose tail cannot be trusted on a comm (missing or torn file): no hang reported.
  void MarkUntrustedTail(size_t comm_index, int rank) { untrusted_.insert({comm_index, rank}); }
  bool UntrustedTail(size_t comm_index, int rank) const {
    return untrusted_.count({comm_index, rank}) != 0;
  }

 private:
  const TraceModel& model_;
  const CheckOptions& options_;
  const LogicalIdentity& identity_;
  const CheckShare* share_;
  std::vector<std::tuple<size_t, uint64_t, uint64_t>> foreign_claims_;
  std::map<size_t, std::map<uint64_t, uint64_t>> claimed_;  // comm -> first -> last, disjoint
  std::set<std::pair<size_t, int>> untrusted_;
  std::map<std::pair<size_t, int>, int64_t> explained_;
  std::map<size_t, std::pair<int64_t, std::string>> mismatches_;
  std::vector<DataOrder> data_orders_;
  std::set<std::tuple<size_t, uint64_t, int, int>> capture_verified_;
  std::map<std::tuple<size_t, uint64_t, int, int>, Finding> capture_wrong_;
};

// Where checkers put what they found. Repeats are grouped after all checkers ran.
class FindingSink {
 public:
  void Add(Finding f) { findings_.push_back(std::move(f)); }
  void AddNote(Note n) { notes_.push_back(std::move(n)); }
  std::vector<Finding>& findings() { return findings_; }
  std::vector<Note>& notes() { return notes_; }

 private:
  std::vector<Finding> findings_;
  std::vector<Note> notes_;
};

class Checker {
 public:
  virtual ~Checker() = default;
  virtual std::string_view name() const = 0;
  virtual void Run(CheckContext& ctx, FindingSink& sink) = 0;
};

// The built-in checkers in the order they run (notes first, then structure, then data).
std::vector<std::shared_ptr<Checker>> BuiltinCheckers();

Report Check(const TraceModel& model, const CheckOptions& options = {});

// What the checkers of Check explained, for the replay.
struct Explained {
  // Positions whose difference across ranks a finding explains (reorderings, skipped or added
  // calls, mismatches, hangs), per communicator: comm index -> first seq -> last seq (kNoSeq: to
  // the end), as the checkers claim them. The replay takes a rank's call for another tensor
  // than the others' at the same position only there: elsewhere the check found nothing to
  // believe, and the call means what NCCL paired it with.
  std::map<size_t, std::map<uint64_t, uint64_t>> positions;
  // Same-shape reorderings only the sketched data tell (the logical identity has the calls for
  // the same tensors): rank `rank` of communicator `comm` issued at `seq` the tensor the
  // reference rank issued at `other` (a swap is two of these, a longer reordering one per call).
  struct DataSwap {
    size_t comm = 0;
    int rank = -1;
    uint64_t seq = 0, other = 0;
  };
  std::vector<DataSwap> data_swaps;
};
Explained ExplainedPositions(const TraceModel& model, const CheckOptions& options = {});

// What Check does after its checkers ran: groups repeats, fills in where each finding's calls were
// issued and the summary. `occurrences`: findings before grouping.
void FinishReport(const TraceModel& model, std::vector<Finding> findings, uint64_t occurrences,
                  Report* report);
// "rank 0 at train.py:12; rank 1 at ..." for a finding's calls, when the trace knows their call
// sites (`record --stacks`, Flight Recorder frames); "" otherwise.
std::string CallSitesOf(const Finding& f, const TraceModel& m);

// Groups repeats (same kind, comm, ranks, pattern) and sorts by first occurrence. Exposed for
// checkers' unit tests.
std::vector<Finding> GroupRepeats(std::vector<Finding> findings);

}  // namespace ncclrr::analysis
