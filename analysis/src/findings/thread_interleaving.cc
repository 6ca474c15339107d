#include "findings/thread_interleaving.h"

#include <algorithm>
#include <cstddef>

#include "findings/sequence_findings.h"

namespace ncclrr::analysis {
namespace {

constexpr size_t kMaxThreads = 8;
constexpr size_t kMaxScan = size_t{1} << 20;  // calls of one rank looked at, at most
constexpr uint8_t kUnknownThread = 0xff;

// What a thread's calls are told by: its id, times, whether it returned and was captured.
constexpr uint32_t kThreadWords = CallTable::WordsOf(
    offsetof(CallRecord, tid), offsetof(CallRecord, enter_ns), offsetof(CallRecord, exit_ns),
    offsetof(CallRecord, flags), offsetof(CallRecord, capture));

// Call times that are the host's: enter and return of the application's call.
bool HostTimes(const TraceModel& m, int32_t file) {
  const Route r = m.file(static_cast<uint32_t>(file)).header.route;
  return r == Route::kPreload || r == Route::kSonameShim;
}

RankThreads ReadThreads(const TraceModel& m, const RankView& rv) {
  RankThreads out;
  if (rv.file < 0 || rv.collectives.size() > kMaxScan) return out;
  CallTable::Reader calls(m.file(static_cast<uint32_t>(rv.file)).calls, kThreadWords);
  out.number.assign(rv.collectives.size(), kUnknownThread);
  for (size_t k = 0; k < rv.collectives.size(); ++k) {
    if (rv.collectives[k].launch != 0) continue;  // the capturing thread's, not the launcher's
    const uint32_t tid = calls[rv.collectives[k].call.index].tid;
    auto it = std::find(out.tids.begin(), out.tids.end(), tid);
    if (it == out.tids.end()) {
      if (out.tids.size() == kMaxThreads) return RankThreads{};
      out.tids.push_back(tid);
      it = out.tids.end() - 1;
    }
    out.number[k] = static_cast<uint8_t>(it - out.tids.begin());
  }
  out.ok = true;
  return out;
}

RankThreads& ThreadsOf(const SequenceContext& sc, int rank) {
  auto [it, added] = sc.threads.try_emplace(rank);
  if (added) it->second = ReadThreads(sc.ctx.model(), sc.ctx.model().comms()[sc.ci].ranks[rank]);
  return it->second;
}

// Each thread's calls on `a`'s rank are, as far as both go, the same thread's on `b`'s (by
// shape).
bool EachThreadAgrees(const SequenceContext& sc, int ra, const RankThreads& a, int rb,
                      const RankThreads& b) {
  const CommIdentity& id = sc.ctx.identity().comm(sc.ci);
  for (uint8_t t = 0; t < a.tids.size(); ++t) {
    size_t i = 0, j = 0;
    while (true) {
      while (i < a.number.size() && a.number[i] != t) ++i;
      while (j < b.number.size() && b.number[j] != t) ++j;
      if (i == a.number.size() || j == b.number.size()) break;
      if (id.shapes[ra][i] != id.shapes[rb][j]) return false;
      ++i;
      ++j;
    }
  }
  return true;
}

bool AtOnce(const SequenceContext& sc, int rank) {
  RankThreads& t = ThreadsOf(sc, rank);
  if (!t.at_once)
    t.at_once =
        FirstThreadOverlap(sc.ctx.model(), sc.ctx.model().comms()[sc.ci].ranks[rank]).has_value();
  return *t.at_once;
}

std::string SiteAt(const TraceModel& m, const RankView& rv, uint64_t seq) {
  const CollectiveSlot* s = rv.AtSeq(seq);
  if (s == nullptr) return "";
  const CallRecord c = m.call(s->call);
  if (c.callsite == 0) return "";
  const std::string site = m.file(s->call.file).String(c.callsite);
  return site.substr(0, site.find('<'));
}

int ThreadAt(const RankView& rv, const RankThreads& t, uint64_t seq) {
  const CollectiveSlot* s = rv.AtSeq(seq);
  if (s == nullptr) return -1;
  const uint8_t n = t.number[static_cast<size_t>(s - rv.collectives.data())];
  return n == kUnknownThread ? -1 : n;
}

std::string Ordinal(int n) {
  static const char* const kWords[] = {"first", "second", "third",   "fourth",
                                       "fifth", "sixth",  "seventh", "eighth"};
  return kWords[n];
}

}  // namespace

std::optional<ThreadOverlap> FirstThreadOverlap(const TraceModel& m, const RankView& rv) {
  if (rv.file < 0 || !HostTimes(m, rv.file) || rv.collectives.size() + rv.p2p.size() > kMaxScan)
    return std::nullopt;
  CallTable::Reader calls(m.file(static_cast<uint32_t>(rv.file)).calls, kThreadWords);
  // One thread (the usual case): nothing to look at.
  std::vector<uint32_t> tids;
  auto note_tid = [&](uint32_t index) {
    const uint32_t tid = calls[index].tid;
    if (std::find(tids.begin(), tids.end(), tid) == tids.end()) tids.push_back(tid);
  };
  for (const CollectiveSlot& s : rv.collectives)
    if (s.launch == 0) note_tid(s.call.index);
  for (const P2pCall& p : rv.p2p) note_tid(p.call.index);
  if (tids.size() < 2 || tids.size() > kMaxThreads) return std::nullopt;
  // Each thread's calls, in its own order of issue (a thread issues one call at a time).
  struct Span {
    int64_t enter, exit;  // exit: INT64_MAX for a call that never returned
    CallRef call;
  };
  std::vector<std::vector<Span>> by_thread(tids.size());
  auto add = [&](CallRef ref) {
    const CallRecord& c = calls[ref.index];
    if (c.capture != 0 || c.enter_ns <= 0) return;  // captured: runs when its graph does
    const bool in_flight = (c.flags & call_flags::kInFlight) != 0;
    // A damaged end before its start is read as an instant call, not one that never returned.
    const int64_t exit = in_flight ? INT64_MAX : std::max(c.exit_ns, c.enter_ns);
    const auto t = static_cast<size_t>(std::find(tids.begin(), tids.end(), c.tid) - tids.begin());
    by_thread[t].push_back({c.enter_ns, exit, ref});
  };
  for (const CollectiveSlot& s : rv.collectives)
    if (s.launch == 0) add(s.call);
  std::vector<size_t> collectives(tids.size());
  for (size_t t = 0; t < tids.size(); ++t) collectives[t] = by_thread[t].size();
  for (const P2pCall& p : rv.p2p) add(p.call);
  // A thread's collectives (in seq order) and its sends/receives (in issue order) are each in
  // its order of issue: merged, not sorted (a damaged trace's are sorted).
  auto earlier = [](const Span& a, const Span& b) { return a.enter < b.enter; };
  for (size_t t = 0; t < tids.size(); ++t) {
    std::vector<Span>& v = by_thread[t];
    const auto mid = v.begin() + static_cast<std::ptrdiff_t>(collectives[t]);
    if (std::is_sorted(v.begin(), mid, earlier) && std::is_sorted(mid, v.end(), earlier))
      std::inplace_merge(v.begin(), mid, v.end(), earlier);
    else
      std::stable_sort(v.begin(), v.end(), earlier);
  }
  // Merge the threads by enter time; a call overlaps another thread's when it enters before
  // the latest return seen of that thread.
  std::vector<size_t> next(tids.size(), 0);
  std::vector<const Span*> latest(tids.size(), nullptr);  // per thread: the call returning last
  while (true) {
    size_t t = tids.size();
    for (size_t u = 0; u < tids.size(); ++u)
      if (next[u] < by_thread[u].size() &&
          (t == tids.size() || by_thread[u][next[u]].enter < by_thread[t][next[t]].enter))
        t = u;
    if (t == tids.size()) return std::nullopt;
    const Span& s = by_thread[t][next[t]++];
    for (size_t u = 0; u < tids.size(); ++u)
      if (u != t && latest[u] != nullptr && s.enter < latest[u]->exit)
        return ThreadOverlap{latest[u]->call, s.call};
    if (latest[t] == nullptr || s.exit > latest[t]->exit) latest[t] = &s;
  }
}

std::string ThreadsInterleaved(const SequenceContext& sc, int rank, uint64_t seq,
                               uint64_t ref_seq) {
  const TraceModel& m = sc.ctx.model();
  const CommModel& c = m.comms()[sc.ci];
  // Recorded by the interposer only: its call sites are the issuing thread's Python frames (an
  // autograd thread's DDP buckets have none), which an import's need not be.
  if (c.ranks[rank].file < 0 || c.ranks[sc.ref].file < 0 || !HostTimes(m, c.ranks[rank].file) ||
      !HostTimes(m, c.ranks[sc.ref].file))
    return "";
  RankThreads& mine = ThreadsOf(sc, rank);
  RankThreads& ref = ThreadsOf(sc, sc.ref);
  if (!mine.ok || !ref.ok || mine.tids.size() < 2 || mine.tids.size() != ref.tids.size()) return "";
  const int at = ThreadAt(c.ranks[rank], mine, seq),
            ref_at = ThreadAt(c.ranks[sc.ref], ref, ref_seq);
  if (at < 0 || ref_at < 0 || at == ref_at) return "";
  const std::string site = SiteAt(m, c.ranks[rank], seq),
                    ref_site = SiteAt(m, c.ranks[sc.ref], ref_seq);
  if (site.empty() || ref_site.empty()) return "";
  const bool at_once = AtOnce(sc, rank) || AtOnce(sc, sc.ref);
  if (!at_once) {
    if (!mine.agrees) mine.agrees = EachThreadAgrees(sc, rank, mine, sc.ref, ref);
    if (!*mine.agrees) return "";
  }
  const std::string r = "rank " + std::to_string(rank), q = "rank " + std::to_string(sc.ref);
  const std::string n = std::to_string(mine.tids.size());
  return "The calls at seq " + std::to_string(seq) + " came from different threads: " + r +
         "'s from the " + Ordinal(at) + " of the " + n +
         " threads that issue collectives on this communicator (" + site + "), " + q +
         "'s from the " + Ordinal(ref_at) + " (" + ref_site +
         (at_once ? "), and the threads of a rank used the communicator at once (see the "
                    "lifecycle_error). "
                  : "), and so far each thread issued the same calls on both ranks. ") +
         "NCCL pairs calls in the order they reach the communicator, whichever thread issued "
         "them: threads that run independently of each other (a monitoring, logging or "
         "checkpointing thread beside the training loop) interleave their calls by timing, "
         "differently on each rank, and that alone mispairs them. If nothing in the program "
         "orders these threads' calls (autograd does order the gradient hooks it runs on its own "
         "thread, as DDP's and FSDP's), issue this communicator's collectives from one thread, or "
         "give the other thread its own communicator (dist.new_group() called on every rank "
         "before the thread starts). If they are ordered: ";
}

}  // namespace ncclrr::analysis
