#include "findings/thread_interleaving.h"

#include <algorithm>
#include <vector>

namespace ncclrr::analysis {
namespace {

constexpr size_t kMaxThreads = 8;
constexpr size_t kMaxScan = size_t{1} << 20;  // calls of one rank looked at, at most

// One rank's calls on the communicator by thread: threads numbered in the order they first
// issue on it, each thread's shapes in its order, and the thread of the call at `seq`.
struct ThreadCalls {
  std::vector<uint32_t> tids;
  std::vector<std::vector<uint32_t>> shapes;  // per thread number
  int at = -1;                                // thread number of the call at seq
  std::string site;                           // its call site ("" without one)
  bool ok = false;
};

ThreadCalls Split(const SequenceContext& sc, int rank, uint64_t seq) {
  ThreadCalls out;
  const TraceModel& m = sc.ctx.model();
  const RankView& rv = m.comms()[sc.ci].ranks[rank];
  if (rv.file < 0 || rv.collectives.size() > kMaxScan) return out;
  const NarrowUints& shapes = sc.ctx.identity().comm(sc.ci).shapes[rank];
  for (size_t k = 0; k < rv.collectives.size(); ++k) {
    const CallRecord c = m.call(rv.collectives[k].call);
    auto it = std::find(out.tids.begin(), out.tids.end(), c.tid);
    if (it == out.tids.end()) {
      if (out.tids.size() == kMaxThreads) return out;
      out.tids.push_back(c.tid);
      out.shapes.emplace_back();
      it = out.tids.end() - 1;
    }
    const auto n = static_cast<size_t>(it - out.tids.begin());
    out.shapes[n].push_back(static_cast<uint32_t>(shapes[k]));
    if (rv.collectives[k].seq == seq) {
      out.at = static_cast<int>(n);
      if (c.callsite != 0) {
        out.site = m.file(rv.collectives[k].call.file).String(c.callsite);
        out.site = out.site.substr(0, out.site.find('<'));
      }
    }
  }
  out.ok = out.at >= 0;
  return out;
}

// Each thread's calls on one rank are, as far as both go, the same thread's on the other.
bool EachThreadAgrees(const ThreadCalls& a, const ThreadCalls& b) {
  for (size_t t = 0; t < a.shapes.size(); ++t) {
    const size_t n = std::min(a.shapes[t].size(), b.shapes[t].size());
    if (!std::equal(a.shapes[t].begin(), a.shapes[t].begin() + n, b.shapes[t].begin()))
      return false;
  }
  return true;
}

std::string Ordinal(int n) {
  static const char* const kWords[] = {"first", "second", "third",   "fourth",
                                       "fifth", "sixth",  "seventh", "eighth"};
  return kWords[n];
}

}  // namespace

std::optional<ThreadOverlap> FirstThreadOverlap(const TraceModel& m, const RankView& rv) {
  struct Span {
    int64_t enter, exit;  // exit: INT64_MAX for a call that never returned
    uint32_t tid;
    CallRef call;
  };
  if (rv.file < 0 || rv.collectives.size() + rv.p2p.size() > kMaxScan) return std::nullopt;
  std::vector<Span> spans;
  auto add = [&](CallRef ref) {
    const CallRecord c = m.call(ref);
    if (c.capture != 0 || c.enter_ns <= 0) return;  // captured: runs when its graph does
    const bool returned = (c.flags & call_flags::kInFlight) == 0 && c.exit_ns >= c.enter_ns;
    spans.push_back({c.enter_ns, returned ? c.exit_ns : INT64_MAX, c.tid, ref});
  };
  for (const CollectiveSlot& s : rv.collectives)
    if (s.launch == 0) add(s.call);
  for (const P2pCall& p : rv.p2p) add(p.call);
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.enter < b.enter; });
  const Span* longest = nullptr;  // of the calls entered so far, the one that returned last
  for (const Span& s : spans) {
    if (longest != nullptr && s.enter < longest->exit && s.tid != longest->tid)
      return ThreadOverlap{longest->call, s.call};
    if (longest == nullptr || s.exit > longest->exit) longest = &s;
  }
  return std::nullopt;
}

std::string ThreadsInterleaved(const SequenceContext& sc, int rank, uint64_t seq,
                               uint64_t ref_seq) {
  const ThreadCalls mine = Split(sc, rank, seq);
  const ThreadCalls ref = Split(sc, sc.ref, ref_seq);
  if (!mine.ok || !ref.ok || mine.tids.size() < 2 || mine.tids.size() != ref.tids.size() ||
      mine.at == ref.at || mine.site.empty() || ref.site.empty())
    return "";
  const CommModel& c = sc.ctx.model().comms()[sc.ci];
  const bool at_once = FirstThreadOverlap(sc.ctx.model(), c.ranks[rank]).has_value() ||
                       FirstThreadOverlap(sc.ctx.model(), c.ranks[sc.ref]).has_value();
  if (!at_once && !EachThreadAgrees(mine, ref)) return "";
  const std::string r = "rank " + std::to_string(rank), q = "rank " + std::to_string(sc.ref);
  const std::string n = std::to_string(mine.tids.size());
  return "The calls at seq " + std::to_string(seq) + " came from different threads: " + r +
         "'s from the " + Ordinal(mine.at) + " of the " + n +
         " threads that issue collectives on this communicator (" + mine.site + "), " + q +
         "'s from the " + Ordinal(ref.at) + " (" + ref.site +
         (at_once ? "), and the threads of a rank used the communicator at once (see the "
                    "lifecycle_error). "
                  : "), and so far each thread issued the same calls on both ranks. ") +
         "NCCL pairs calls in the "
         "order they reach the communicator, whichever thread issued them: threads that run "
         "independently of each other (a monitoring, logging or checkpointing thread beside the "
         "training loop) interleave their calls by timing, differently on each rank, and that "
         "alone mispairs them. If nothing in the program orders these threads' calls (autograd "
         "does order the gradient hooks it runs on its own thread, as DDP's and FSDP's), issue "
         "this communicator's collectives from one thread, or give the other thread its own "
         "communicator (dist.new_group() called on every rank before the thread starts). "
         "If they are ordered: ";
}

}  // namespace ncclrr::analysis
