// lifecycle_error: communicators created inconsistently (ranks disagree on nranks, two processes
// claim one rank, calls on a comm nobody created), calls after ncclCommDestroy/Abort/Finalize,
// and collective lifecycle calls (Finalize, Split, Shrink) that only some ranks made.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "checks/checkers.h"
#include "findings/thread_interleaving.h"
#include "ncclrr/analysis/coverage.h"
#include "ncclrr/trace/describe.h"
#include "report/text_util.h"

namespace ncclrr::analysis {
namespace {

class LifecycleChecker : public Checker {
 public:
  std::string_view name() const override { return "lifecycle"; }

  void Run(CheckContext& ctx, FindingSink& sink) override {
    const TraceModel& m = ctx.model();
    for (size_t ci = 0; ci < m.comms().size(); ++ci) {
      if (!ctx.Owns(ci)) continue;
      const CommModel& c = m.comms()[ci];
      std::set<std::string> seen;
      for (const std::string& p : c.problems) {
        if (!seen.insert(p).second) continue;
        Finding f = FindingOn(FindingKind::kLifecycleError, m, ci);
        f.short_text = p;
        f.pattern = p;
        f.first_time = m.start_ns();
        f.message = "Inconsistent creation of " + CommLabel(c) + ": " + p +
                    ". Every rank must create a communicator with the same unique id and "
                    "nranks, each rank exactly once.";
        sink.Add(std::move(f));
      }
      for (size_t k = 0; k < c.rejoins.size(); ++k) Rejoined(ctx, ci, c.rejoins[k], k == 0, sink);
      for (const RankView& r : c.ranks) UseAfterEnd(ctx, ci, r, sink);
      EndBlockedByGraphs(ctx, ci, sink);
      UsedByThreadsAtOnce(ctx, ci, sink);
      CollectiveLifecycle(ctx, ci, Api::kCommFinalize, "ncclCommFinalize", sink);
      CollectiveLifecycle(ctx, ci, Api::kCommSplit, "ncclCommSplit", sink);
      CollectiveLifecycle(ctx, ci, Api::kCommShrink, "ncclCommShrink", sink);
    }
  }

 private:
  static bool IsRootInit(Api a) {
    return a == Api::kCommInitRank || a == Api::kCommInitRankConfig ||
           a == Api::kCommInitRankScalable;
  }

  // "process 1908 (vm-1908.ncclrr)", or "a process" when stable.
  static std::string ProcessOf(const TraceModel& m, int32_t f, bool stable) {
    if (f < 0) return "a process";
    const FileView& v = m.files()[static_cast<size_t>(f)];
    return stable ? "a process" : "process " + std::to_string(v.pid) + " (" + v.name + ")";
  }

  // A rank of the communicator also issued calls from a second process. When that process
  // began after the first had ended, it initialised a communicator with the unique id of one
  // whose processes were gone: a restarted job whose ranks read the previous attempt's id.
  // `first_rejoin`: the communicator's first, whose message also names the new attempt's
  // processes left waiting (a scan of every file, once per communicator).
  void Rejoined(CheckContext& ctx, size_t ci, const CommModel::Rejoin& j, bool first_rejoin,
                FindingSink& sink) {
    const TraceModel& m = ctx.model();
    const CommModel& c = m.comms()[ci];
    const bool stable = ctx.options().stable;
    const FileView& first = m.files()[static_cast<size_t>(j.first_file)];
    const FileView& second = m.files()[j.call.file];
    const CallRecord call = m.call(j.call);
    const int64_t start = m.CallTime(j.call);
    Finding f = FindingOn(FindingKind::kLifecycleError, m, ci);
    f.ranks = {j.rank};
    f.calls = {{j.call, j.rank, kNoSeq}};
    const std::string two = "rank " + std::to_string(j.rank) + " issued calls from two processes";
    bool all_gone = IsRootInit(static_cast<Api>(call.api));
    for (const RankView& r : c.ranks)
      all_gone &= !r.has_file() || m.files()[static_cast<size_t>(r.file)].last_alive_ns < start;
    if (!all_gone) {
      f.short_text = two + " (" + first.name + " and " + second.name + ")";
      f.pattern = f.short_text;
      f.first_time = m.start_ns();
      f.message = "Inconsistent creation of " + CommLabel(c) + ": " + f.short_text +
                  ". Every rank must create a communicator with the same unique id and nranks, "
                  "each rank exactly once.";
      sink.Add(std::move(f));
      return;
    }
    const std::string init = "nccl" + std::string(ApiName(static_cast<Api>(call.api)));
    const bool in_flight = (call.flags & call_flags::kInFlight) != 0;
    std::string outcome;
    if (in_flight)
      outcome = "it was still waiting in " + init + " when its trace ended";
    else if (call.result != 0)
      outcome = init + " returned " + NcclResultName(call.result) +
                (stable ? "" : " after " + Seconds(call.exit_ns - call.enter_ns));
    else
      outcome = init + " returned";
    f.first_time = start;
    f.pattern = "stale unique id";
    f.table.push_back({std::to_string(j.rank), "-",
                       init + (in_flight ? std::string(" (in flight)")
                                         : std::string(" -> ") + NcclResultName(call.result)),
                       true});
    f.short_text = "rank " + std::to_string(j.rank) + " was initialised again by a later " +
                   "process, with the unique id of a communicator whose processes had ended";
    f.message =
        "Rank " + std::to_string(j.rank) + " of " + CommLabel(c) + " was initialised twice: by " +
        ProcessOf(m, j.first_file, stable) + ", whose trace ended" +
        (stable ? "" : " at +" + Seconds(first.last_alive_ns - m.start_ns())) + ", and again by " +
        ProcessOf(m, static_cast<int32_t>(j.call.file), stable) + ", which started after it" +
        (stable ? "" : " (at +" + Seconds(start - m.start_ns()) + ")") +
        ". The later process passed " + init +
        " the unique id of a communicator whose processes were gone, so it waited for peers "
        "that no longer exist: " +
        outcome + "." + (first_rejoin ? NewAttempt(m, j, stable) : std::string()) +
        " A restarted job does this when a rank reads the previous attempt's unique id (left "
        "in the rendezvous store from before the restart) instead of the one its new rank 0 "
        "created. Make every attempt exchange its id through a rendezvous of its own (a store "
        "or key per attempt, e.g. one that includes the restart count), so that no rank can "
        "read an earlier attempt's.";
    sink.Add(std::move(f));
  }

  // " Meanwhile process P (...) created comm X and was still waiting in its init ..." for the
  // processes that started with the second one and waited in an init of another communicator:
  // the new attempt's ranks that used the new id. "" when none.
  static std::string NewAttempt(const TraceModel& m, const CommModel::Rejoin& j, bool stable) {
    const int64_t gone = m.files()[static_cast<size_t>(j.first_file)].last_alive_ns;
    constexpr uint32_t kFirstRows = 64;  // a process's inits come first
    std::vector<std::string> waiting;
    constexpr size_t kListed = 8;
    size_t more = 0;
    for (uint32_t f = 0; f < m.files().size(); ++f) {
      if (f == j.call.file) continue;
      const CallTable& calls = m.file(f).calls;
      for (uint32_t i = 0; i < calls.size() && i < kFirstRows; ++i) {
        const CallRecord c = calls[i];
        if (!IsRootInit(static_cast<Api>(c.api)) || !(c.flags & call_flags::kInFlight)) continue;
        if (m.CallTime(CallRef{f, i}) <= gone || c.comm_id == m.call(j.call).comm_id) continue;
        if (waiting.size() < kListed)
          waiting.push_back(ProcessOf(m, static_cast<int32_t>(f), stable) + ", in comm " +
                            Hex64(c.comm_id));
        else
          ++more;
        break;
      }
    }
    if (waiting.empty()) return "";
    std::string list;
    for (size_t k = 0; k < waiting.size(); ++k)
      list += (k == 0 ? "" : k + 1 == waiting.size() && more == 0 ? " and " : ", ") + waiting[k];
    if (more > 0) list += " and " + std::to_string(more) + " more";
    return " Meanwhile " + list + ", also started after the communicator's processes had ended, " +
           (waiting.size() == 1 ? "was" : "were") +
           " still waiting in its initialisation when the trace ended: no other process joined "
           "that id.";
  }

  // Collectives or p2p issued after the rank destroyed, aborted or finalized the comm.
  void UseAfterEnd(CheckContext& ctx, size_t ci, const RankView& r, FindingSink& sink) {
    const TraceModel& m = ctx.model();
    const CommModel& c = m.comms()[ci];
    std::optional<CallRecord> end;
    for (CallRef ref : r.lifecycle) {
      const CallRecord call = m.call(ref);
      const Api a = static_cast<Api>(call.api);
      if ((a == Api::kCommDestroy || a == Api::kCommAbort || a == Api::kCommFinalize) &&
          (!end || call.enter_ns < end->enter_ns))
        end = call;
    }
    if (!end) return;
    // A call that never returned (in flight when the trace ended) has no exit time: the end
    // began when it was entered.
    const int64_t ended = (end->flags & call_flags::kInFlight) != 0 ? end->enter_ns : end->exit_ns;
    std::vector<const CollectiveSlot*> late;
    for (const CollectiveSlot& s : r.collectives)
      if (s.launch == 0 && m.call(s.call).enter_ns > ended) late.push_back(&s);
    if (late.empty()) return;
    const std::string ender =
        "ncclComm" + std::string(ApiName(static_cast<Api>(end->api))).substr(4);
    Finding f = FindingOn(FindingKind::kLifecycleError, m, ci);
    f.seq = late.front()->seq;
    f.ranks = {r.rank};
    f.first_time = m.SlotTime(*late.front());
    f.pattern = "after " + ender;
    for (const CollectiveSlot* s : late) f.calls.push_back({s->call, r.rank, s->seq});
    const CallRecord& first = m.call(late.front()->call);
    f.table.push_back({std::to_string(r.rank), "-", ender, false});
    f.table.push_back({std::to_string(r.rank), std::to_string(first.seq), ShortCall(first), true});
    f.short_text =
        "rank " + std::to_string(r.rank) + " issued " + ShortCall(first) + " after " + ender;
    f.message = "Rank " + std::to_string(r.rank) + " called " + ender + " on " + CommLabel(c) +
                " and then issued " + Plural(late.size(), "more call", "more calls") +
                " on it, starting with " + ShortCall(first) + " at seq " +
                std::to_string(first.seq) +
                ". The communicator is gone: NCCL returns ncclInvalidUsage or crashes, and the "
                "other ranks wait for these calls. Finish all collectives before destroying the "
                "communicator.";
    sink.Add(std::move(f));
  }

  // Ranks whose calls on the communicator came from two threads at once: one thread issued a
  // call while another's was still inside NCCL. NCCL requires a communicator to be used by one
  // thread at a time, and such threads' calls reach it in an order of their timing.
  void UsedByThreadsAtOnce(CheckContext& ctx, size_t ci, FindingSink& sink) {
    const TraceModel& m = ctx.model();
    const CommModel& c = m.comms()[ci];
    Finding f = FindingOn(FindingKind::kLifecycleError, m, ci);
    std::optional<ThreadOverlap> first;  // the earliest overlap, on rank `first_rank`
    int first_rank = -1;
    for (const RankView& r : c.ranks) {
      const std::optional<ThreadOverlap> o = FirstThreadOverlap(m, r);
      if (!o) continue;
      f.ranks.push_back(r.rank);
      f.calls.push_back({o->first, r.rank, m.call(o->first).seq});
      f.calls.push_back({o->second, r.rank, m.call(o->second).seq});
      const int64_t t = m.CallTime(o->second);
      if (!first || t < f.first_time) {
        first = o;
        first_rank = r.rank;
        f.first_time = t;
      }
    }
    if (!first) return;
    const CallRecord a = m.call(first->first), b = m.call(first->second);
    if (b.seq != kNoSeq && IsCollective(static_cast<Api>(b.api))) f.seq = b.seq;
    auto describe = [&](CallRef ref) {
      const CallRecord call = m.call(ref);
      std::string site = call.callsite ? m.file(ref.file).String(call.callsite) : std::string();
      site = site.substr(0, site.find('<'));
      const bool coll = call.seq != kNoSeq && IsCollective(static_cast<Api>(call.api));
      return ShortCall(call) + (coll ? " (seq " + std::to_string(call.seq) + ")" : "") +
             (site.empty() ? "" : " at " + site);
    };
    std::vector<int> others;
    for (int r : f.ranks)
      if (r != first_rank) others.push_back(r);
    f.pattern = "two threads at once";
    f.short_text = RankList(f.ranks) + " used the communicator from two threads at once";
    f.message =
        "Rank " + std::to_string(first_rank) + " issued " + describe(first->second) +
        " from one thread while " + describe(first->first) + ", from another, " +
        ((a.flags & call_flags::kInFlight) != 0 ? "never returned" : "was still inside NCCL") +
        (others.empty() ? std::string() : " (and so did " + RankList(others) + ")") +
        ": two threads used the communicator at once. NCCL requires a communicator to be used "
        "by one thread at a time, and the calls of threads that run independently of each "
        "other (a monitoring, logging or checkpointing thread beside the training loop) reach "
        "the communicator in the order of their timing, which differs between the ranks: NCCL "
        "then pairs different calls across the ranks (wrong sums where the sizes agree, a hang "
        "where they do not). Issue the communicator's calls from one thread, or give the other "
        "thread a communicator of its own (dist.new_group() called on every rank before the "
        "thread starts).";
    sink.Add(std::move(f));
  }

  // Ranks blocked for good in ncclCommFinalize or ncclCommDestroy (in flight when the trace
  // ended) while a CUDA graph holding calls on the communicator was still instantiated: NCCL
  // keeps a graph's captured work on the communicator until the graph is destroyed, and the
  // job hangs at exit (PyTorch: destroy_process_group with a torch.cuda.CUDAGraph alive).
  void EndBlockedByGraphs(CheckContext& ctx, size_t ci, FindingSink& sink) {
    const TraceModel& m = ctx.model();
    const CommModel& c = m.comms()[ci];
    std::vector<int> blocked;
    std::optional<CallRef> first_end;
    std::vector<InvolvedCall> f_calls;
    size_t live_graphs = 0;
    std::string graphs;
    for (const RankView& r : c.ranks) {
      if (!r.has_file() || r.graphs.empty()) continue;
      std::optional<CallRef> end;
      for (CallRef ref : r.lifecycle) {
        const CallRecord call = m.call(ref);
        const Api a = static_cast<Api>(call.api);
        if ((a == Api::kCommFinalize || a == Api::kCommDestroy) &&
            (call.flags & call_flags::kInFlight) != 0)
          end = ref;
      }
      if (!end) continue;
      const std::vector<size_t> live = LiveGraphs(m, r, m.call(*end).enter_ns);
      if (live.empty()) continue;
      blocked.push_back(r.rank);
      f_calls.push_back({*end, r.rank, kNoSeq});
      if (!first_end || m.CallTime(*end) < m.CallTime(*first_end)) first_end = end;
      if (graphs.empty()) live_graphs = live.size();
      if (graphs.empty())
        for (size_t k : live) {
          const GraphTemplate& g = r.graphs[k];
          graphs +=
              (graphs.empty() ? "" : "; ") + std::string("graph #") + std::to_string(k + 1) + " (" +
              ShortCall(m.call(g.calls.front())) +
              (g.calls.size() > 1 ? " and " + Plural(g.calls.size() - 1, "more call", "more calls")
                                  : std::string()) +
              ", launched " + Plural(g.launch_times_ns.size(), "time", "times") + ")";
        }
    }
    if (blocked.empty()) return;
    const std::string ender =
        "ncclComm" + std::string(ApiName(static_cast<Api>(m.call(*first_end).api))).substr(4);
    Finding f = FindingOn(FindingKind::kLifecycleError, m, ci);
    f.ranks = blocked;
    f.calls = std::move(f_calls);
    f.first_time = m.CallTime(*first_end);
    f.pattern = "blocked in " + ender + " by graphs";
    for (int r : blocked)
      f.table.push_back({std::to_string(r), "-", ender + " (never returned)", true});
    f.short_text = RankList(blocked) + " never returned from " + ender +
                   ": a CUDA graph holding calls on this communicator was still alive";
    f.message = RankList(blocked) + " called " + ender + " on " + CommLabel(c) +
                " and had not returned when the trace ended, while " +
                (live_graphs > 1 ? "the CUDA graphs that captured calls on it were"
                                 : "the CUDA graph that captured calls on it was") +
                " still instantiated (never destroyed): " + graphs +
                ". NCCL keeps a graph's captured work on the communicator until the graph is "
                "destroyed, so " +
                ender +
                " waits for it and the job hangs at exit. Destroy the graphs first (delete the "
                "torch.cuda.CUDAGraph objects, or cudaGraphExecDestroy) and then the "
                "communicator (destroy_process_group).";
    sink.Add(std::move(f));
  }

  // The graphs of rank `r` (indices into r.graphs) with an instantiation still alive at `t_ns`
  // (the file's own clock): instantiated before it and not destroyed before it.
  static std::vector<size_t> LiveGraphs(const TraceModel& m, const RankView& r, int64_t t_ns) {
    const TraceFile& t = m.dir().files[r.file];
    std::vector<size_t> live;
    for (size_t k = 0; k < r.graphs.size(); ++k) {
      std::set<uint64_t> execs;
      for (const GraphEventRecord& e : t.graph_events) {
        if (e.time_ns > t_ns) continue;
        const auto kind = static_cast<GraphEventKind>(e.kind);
        if (kind == GraphEventKind::kInstantiate && e.graph_id == r.graphs[k].graph_id)
          execs.insert(e.exec_id);
        else if (kind == GraphEventKind::kDestroy && e.exec_id != 0)
          execs.erase(e.exec_id);
      }
      if (!execs.empty()) live.push_back(k);
    }
    return live;
  }

  // Finalize, Split and Shrink are collective over the communicator: every rank must call them
  // (the same number of times). Ranks whose files may lack calls (not closed, corrupt frames
  // skipped, records dropped, a flight-recorder window) are left out: their count is unknown.
  void CollectiveLifecycle(CheckContext& ctx, size_t ci, Api api, const std::string& fn,
                           FindingSink& sink) {
    const TraceModel& m = ctx.model();
    const CommModel& c = m.comms()[ci];
    std::map<int, std::vector<CallRef>> calls;
    std::map<size_t, std::vector<int>> by_count;
    for (const RankView& r : c.ranks) {
      if (!r.has_file() || FileMayLackCalls(m.files()[r.file])) continue;
      auto& v = calls[r.rank];
      for (CallRef ref : r.lifecycle)
        if (static_cast<Api>(m.call(ref).api) == api) v.push_back(ref);
      by_count[v.size()].push_back(r.rank);
    }
    if (by_count.size() < 2) return;
    // The majority count is what ranks should have done; ties list every rank.
    size_t best = 0, members = 0;
    for (const auto& [n, rs] : by_count)
      if (rs.size() > members) {
        best = n;
        members = rs.size();
      }
    Finding f = FindingOn(FindingKind::kLifecycleError, m, ci);
    std::string stops;
    for (const auto& [n, rs] : by_count) {
      const bool differs = n != best || members * 2 <= calls.size();
      if (differs) f.ranks.insert(f.ranks.end(), rs.begin(), rs.end());
      f.table.push_back({CompactRanks(rs), "-", fn + " x " + std::to_string(n), n != best});
      stops +=
          (stops.empty() ? "" : "; ") + RankList(rs) + " called it " + Plural(n, "time", "times");
      for (int r : rs)
        for (CallRef ref : calls[r]) f.calls.push_back({ref, r, kNoSeq});
    }
    std::sort(f.ranks.begin(), f.ranks.end());
    f.first_time = f.calls.empty() ? m.start_ns() : INT64_MAX;
    for (const auto& ic : f.calls) f.first_time = std::min(f.first_time, m.CallTime(ic.call));
    f.pattern = fn;
    f.short_text = "ranks disagree on how many times they called " + fn + " on this communicator";
    f.message = fn + " is collective over " + CommLabel(c) +
                ": every rank must call it, the "
                "same number of times, or the ranks that did wait forever for the others. " +
                stops + ".";
    sink.Add(std::move(f));
  }
};

}  // namespace

std::shared_ptr<Checker> MakeLifecycleChecker() { return std::make_shared<LifecycleChecker>(); }

}  // namespace ncclrr::analysis
