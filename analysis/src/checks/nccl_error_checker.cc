// nccl_error: calls that returned an error (ncclInProgress from a nonblocking communicator is
// not one) and asynchronous errors the communicator reported.
#include <optional>
#include <string>

#include "checks/checkers.h"
#include "ncclrr/trace/describe.h"
#include "report/text_util.h"

namespace ncclrr::analysis {
namespace {

constexpr int kInProgress = 7;
constexpr int kRemoteError = 6;

const char* Advice(int result) {
  switch (result) {
    case 1:
      return "A CUDA call inside NCCL failed: look for an earlier CUDA error, an out-of-memory "
             "device or a lost GPU.";
    case 2:
      return "A system call or the network failed: run with NCCL_DEBUG=INFO to see which.";
    case 3:
      return "NCCL hit an internal error: memory corruption or an NCCL bug; NCCL_DEBUG=INFO "
             "says more.";
    case 4:
      return "An argument was invalid: a null or misaligned buffer, a bad count, datatype, op, "
             "root or peer.";
    case 5:
      return "The API was misused: a communicator used after destroy, unbalanced groups, or "
             "calls from the wrong thread.";
    case 6:
      return "A remote peer failed: another rank crashed or aborted its communicator; look at "
             "that rank first.";
    default:
      return "See NCCL_DEBUG=INFO for details.";
  }
}

class NcclErrorChecker : public Checker {
 public:
  std::string_view name() const override { return "NCCL errors"; }

  void Run(CheckContext& ctx, FindingSink& sink) override {
    for (const FlaggedCall& fc : ctx.model().flagged_calls())
      if (ctx.Owns(fc.comm_index)) Inspect(ctx, fc.comm_index, fc.rank, fc.call, sink);
  }

 private:
  void Inspect(CheckContext& ctx, size_t ci, int rank, CallRef ref, FindingSink& sink) {
    const TraceModel& m = ctx.model();
    const CallRecord& call = m.call(ref);
    if (call.result == 0 || call.result == kInProgress) return;
    const CommModel& c = m.comms()[ci];
    const Api api = static_cast<Api>(call.api);
    const std::string result = NcclResultName(call.result);
    Finding f = FindingOn(FindingKind::kNcclError, m, ci);
    if (IsCollective(api) || IsP2p(api)) f.seq = call.seq;
    if (IsP2p(api)) f.peer = call.root_peer;
    f.ranks = {rank};
    f.first_time = m.CallTime(ref);
    f.calls = {{ref, rank, call.seq}};
    f.pattern = std::string(ApiName(api)) + ":" + result;
    const bool async = api == Api::kAsyncErrorChange;
    const std::string what =
        IsCollective(api) || IsP2p(api) ? ShortCall(call) : "nccl" + std::string(ApiName(api));
    f.table.push_back(
        {std::to_string(rank), f.seq ? std::to_string(*f.seq) : "-", what + " -> " + result, true});
    const std::string group = api == Api::kGroupEnd ? GroupCalls(m, ci, ref, &f) : "";
    f.short_text = async ? "rank " + std::to_string(rank) + " saw the asynchronous error " + result
                         : what + " on rank " + std::to_string(rank) + " returned " + result;
    f.message = (async ? "The communicator's asynchronous error on rank " + std::to_string(rank) +
                             " became " + result + "."
                       : what + " on rank " + std::to_string(rank) + " of " + CommLabel(c) +
                             " returned " + result + group + ".") +
                " " +
                AfterMismatch(ctx, ci, f.first_time, call.result)
                    .value_or(std::string(Advice(call.result)) +
                              (call.result == kRemoteError
                                   ? StoppedFirst(m, ci, rank, f.first_time, ctx.options().stable)
                                   : ""));
    sink.Add(std::move(f));
  }

  // " Rank 1 is the one peer whose calls stopped before it ..." for a remote error on rank `rank`
  // at time `t`: the one peer last seen alive clearly before it (a millisecond: a socket's close
  // takes longer to reach the peers), and how its trace ended. "" when none or several were.
  static std::string StoppedFirst(const TraceModel& m, size_t ci, int rank, int64_t t,
                                  bool stable) {
    constexpr int64_t kMargin = 1'000'000;
    const CommModel& c = m.comms()[ci];
    const RankView* first = nullptr;
    int64_t first_last = 0;
    int candidates = 0;
    for (const RankView& r : c.ranks) {
      if (r.rank == rank || !r.has_file()) continue;
      // The last sign of life of the whole file (calls, clock pairs, footer): a peer blocked in
      // the same collective but alive after the error is not the one that stopped.
      const int64_t last = m.files()[static_cast<size_t>(r.file)].last_alive_ns;
      if (last + kMargin >= t) continue;
      ++candidates;
      first = &r;
      first_last = last;
    }
    if (candidates != 1) return "";
    const FileView& v = m.files()[static_cast<size_t>(first->file)];
    const std::string who = "Rank " + std::to_string(first->rank);
    const std::string when = stable ? ""
                                    : " (its last call at +" + Seconds(first_last - m.start_ns()) +
                                          ", " + Seconds(t - first_last) + " before this error)";
    if (v.clean)
      return " " + who + " is the one peer last seen alive before it" + when +
             ", and its trace was closed in order: it exited (an uncaught exception, an exit in "
             "a rank-dependent branch); its own output says why.";
    return " " + who + " is the one peer last seen alive before it" + when +
           ", and its trace was not closed: the process was killed or crashed without running "
           "its exit handlers (the kernel's out-of-memory killer, a segmentation fault, "
           "SIGKILL), and its last calls, up to ~50 ms of them, may be missing from the trace. "
           "Look at how rank " +
           std::to_string(first->rank) +
           " ended (its own output; the kernel log, dmesg, for the out-of-memory killer).";
  }

  // " (its group held Send(...) and Recv(...))": the calls of a failed ncclGroupEnd's group on
  // communicator `ci`, also added to the finding's calls and table.
  static std::string GroupCalls(const TraceModel& m, size_t ci, CallRef end, Finding* f) {
    const CallTable& calls = m.file(end.file).calls;
    const uint64_t group = calls[end.index].group_id;
    constexpr size_t kShown = 3;
    constexpr uint32_t kLookBack = 1 << 16;
    std::vector<std::string> shown;
    size_t held = 0;
    const uint32_t tid = calls[end.index].tid;
    for (uint32_t i = end.index; i-- > 0 && end.index - i <= kLookBack;) {
      const CallRecord c = calls[i];
      if (c.tid == tid && c.group_id != group) break;  // the thread's calls before the group
      if (c.group_id != group || c.comm_id != m.comms()[ci].id) continue;
      const Api api = static_cast<Api>(c.api);
      if (!IsCollective(api) && !IsP2p(api)) continue;
      ++held;
      if (shown.size() == kShown) continue;
      shown.insert(shown.begin(), ShortCall(c));
      const uint64_t seq = c.seq;
      f->calls.push_back({CallRef{end.file, i}, c.rank, seq});
      f->table.push_back({std::to_string(c.rank), seq == kNoSeq ? "-" : std::to_string(seq),
                          "in the group: " + ShortCall(c), false});
    }
    if (held == 0) return "";
    std::string text;
    for (size_t k = 0; k < shown.size(); ++k)
      text += (k == 0 ? "" : k + 1 == shown.size() ? " and " : ", ") + shown[k];
    if (held > shown.size()) text += " (" + std::to_string(held) + " calls in all)";
    return " (its group held " + text + ")";
  }

  // Mismatched calls make NCCL fail the communicator (it detects a message larger than its
  // receive buffer, and the peers then see a remote error): an error that follows a mismatch
  // found on the communicator is its consequence, and the generic advice would mislead.
  static std::optional<std::string> AfterMismatch(const CheckContext& ctx, size_t ci, int64_t t,
                                                  int result) {
    // ncclInternalError, ncclInvalidUsage, ncclRemoteError
    if (result != 3 && result != 5 && result != 6) return std::nullopt;
    const auto* cause = ctx.FirstMismatch(ci);
    if (!cause || cause->first > t) return std::nullopt;
    if (result == 3)
      return "It follows the mismatched calls reported on this communicator (" + cause->second +
             "), which may have caused it (NCCL fails in unusual ways on calls that do not "
             "pair). Fix that mismatch first; if the error remains, NCCL_DEBUG=INFO says more.";
    return result == 5
               ? "It follows the mismatched calls reported on this communicator (" + cause->second +
                     "): NCCL detects some of them itself (a message larger than the receive "
                     "buffer posted for it) and fails the communicator. Fix that mismatch; "
                     "this error goes with it."
               : "It follows the mismatched calls reported on this communicator (" + cause->second +
                     "): a peer's NCCL failed on them and aborted, or a peer's process ended "
                     "over them. Fix that mismatch; this error goes with it.";
  }
};

}  // namespace

std::shared_ptr<Checker> MakeNcclErrorChecker() { return std::make_shared<NcclErrorChecker>(); }

}  // namespace ncclrr::analysis
