// Builds a TraceModel from a TraceDir: communicators from CommRecords (and from calls on comms no
// record announced), per-rank sequences, graph launches expanded into the positions they take,
// and the common timeline.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "model/clock_sync.h"
#include "ncclrr/analysis/model.h"
#include "ncclrr/base/parallel_for.h"
#include "ncclrr/trace/format.h"

namespace ncclrr::analysis {

const CollectiveSlot* RankView::AtSeq(uint64_t seq) const {
  auto it = std::lower_bound(collectives.begin(), collectives.end(), seq,
                             [](const CollectiveSlot& s, uint64_t v) { return s.seq < v; });
  return it != collectives.end() && it->seq == seq ? &*it : nullptr;
}

uint64_t CommModel::max_issued() const {
  uint64_t m = 0;
  for (const RankView& r : ranks) m = std::max(m, r.issued());
  return m;
}

TraceModel::TraceModel() : dir_(std::make_unique<TraceDir>()) {}
TraceModel::TraceModel(TraceModel&&) noexcept = default;
TraceModel& TraceModel::operator=(TraceModel&&) noexcept = default;
TraceModel::~TraceModel() = default;

int64_t TraceModel::SlotTime(const CollectiveSlot& s) const {
  if (s.launch == 0) return CallTime(s.call);
  // A launch: the time of that launch of the graph that captured the call, as StampTimes
  // converted it. Graphs are few per rank, and a rank's calls all come from one file.
  const CallRecord c = call(s.call);
  for (auto [ci, rank] : files_[s.call.file].ranks) {
    const CommModel& comm = comms_[ci];
    if (comm.id != c.comm_id || rank != c.rank) continue;
    for (const GraphTemplate& g : comm.ranks[rank].graphs)
      if (g.graph_id == c.graph_id && s.launch <= g.launch_times_ns.size())
        return g.launch_times_ns[s.launch - 1];
  }
  return 0;
}

bool LaterCommCall(const CallRecord& c, const CallRecord* last) {
  const auto api = static_cast<Api>(c.api);
  return (IsCollective(api) || IsP2p(api)) && (last == nullptr || c.enter_ns > last->enter_ns);
}

std::optional<CallRecord> TraceModel::LastCommCall(uint32_t f) const {
  if (files_[f].last_comm_call) return files_[f].last_comm_call;
  // Found when asked (a few findings ask), not while loading: a pass over the file's calls
  // decoding only the words the rule reads, then the one row.
  std::optional<CallRecord> latest;
  size_t latest_row = 0;
  const CallTable& calls = dir_->files[f].calls;
  calls.ForEachRow(
      [&](size_t row, const CallRecord& c) {
        if (!LaterCommCall(c, latest ? &*latest : nullptr)) return;
        latest = c;
        latest_row = row;
      },
      CallTable::WordsOf(offsetof(CallRecord, enter_ns), offsetof(CallRecord, exit_ns),
                         offsetof(CallRecord, api)));
  if (latest) latest = calls[latest_row];
  return latest;
}

bool TailCollective(const CallRecord& c) {
  return IsCollective(static_cast<Api>(c.api)) && !UnplaceableCall(c);
}

bool TraceModel::MayHaveHung(uint32_t f) const {
  if (!files_[f].clean) return true;
  if (files_[f].aborted) return *files_[f].aborted;
  for (const auto& [ci, rank] : files_[f].ranks)
    for (CallRef r : comms_[ci].ranks[static_cast<size_t>(rank)].lifecycle)
      if (const CallRecord c = call(r);
          static_cast<Api>(c.api) == Api::kCommAbort && !UnplaceableCall(c))
        return true;
  return false;
}

int64_t TraceModel::TailFromNs(uint32_t f) const {
  if (files_[f].tail_from_ns) return *files_[f].tail_from_ns;
  if (!dir_->files[f].graph_events.empty()) return INT64_MIN;  // as FactsOf: seqs count launches
  const CallTable& calls = dir_->files[f].calls;
  CallTable::Reader read(
      calls, CallTable::WordsOf(offsetof(CallRecord, api), offsetof(CallRecord, enter_ns),
                                offsetof(CallRecord, comm_id), offsetof(CallRecord, rank),
                                offsetof(CallRecord, dtype), offsetof(CallRecord, count)));
  size_t seen = 0;
  int64_t from = INT64_MAX;
  for (size_t row = calls.size(); row-- > 0 && seen < kTailCollectives;) {
    const CallRecord& c = read[row];
    if (!TailCollective(c)) continue;
    ++seen;
    from = std::min(from, c.enter_ns);
  }
  return seen < kTailCollectives ? INT64_MIN : from;
}

int TraceModel::FindComm(uint64_t id, uint32_t lineage) const {
  for (size_t i = 0; i < comms_.size(); ++i)
    if (comms_[i].id == id && comms_[i].lineage == lineage) return static_cast<int>(i);
  return -1;
}

std::vector<const SketchData*> TraceModel::Sketches(CallRef r) const {
  std::vector<const SketchData*> out;
  if (r.file >= sketch_index_.size()) return out;
  const uint64_t uid = call(r).uid;
  auto [b, e] = sketch_index_[r.file].equal_range(uid);
  for (auto it = b; it != e; ++it) out.push_back(&dir_->files[r.file].sketches[it->second]);
  return out;
}

namespace {

// Larger communicators than this are treated as corrupt records (the largest NCCL jobs have
// ~100k ranks); a RankView per rank is allocated up front.
constexpr int kMaxRanks = 1 << 18;

bool IsLifecycle(Api a) {
  return (a >= Api::kCommInitRank && a <= Api::kCommRevoke) || a == Api::kAsyncErrorChange;
}

}  // namespace

class ModelBuilder {
 public:
  ModelBuilder(TraceModel* m, int threads, PartOfTrace part = {})
      : m_(*m), threads_(threads), part_(std::move(part)), totals_(part_.totals) {}

  void Build() {
    const auto& files = m_.dir_->files;
    m_.files_.resize(files.size());
    m_.sketch_index_.resize(files.size());
    for (uint32_t f = 0; f < files.size(); ++f) DescribeFile(f);
    for (uint32_t f = 0; f < files.size(); ++f) AddCommRecords(f);
    AddCalls(threads_);
    for (uint32_t f = 0; f < totals_.size(); ++f)
      m_.files_[f].unplaceable_calls = totals_[f].unplaceable;
    FinishComms();
    if (part_.pool_clock_samples) {
      const std::vector<bool>* only = part_.whole_comms.empty() ? nullptr : &part_.whole_comms;
      ApplyClockCorrections(&m_.files_, part_.pool_clock_samples(SampleClockDifferences(
                                            m_.files_, m_.comms_, *m_.dir_, only)));
    } else {
      RefineClocksAcrossHosts(&m_.files_, m_.comms_, *m_.dir_);
    }
    StampTimes();
  }

 private:
  void DescribeFile(uint32_t f) {
    const TraceFile& t = m_.dir_->files[f];
    FileView& v = m_.files_[f];
    v.name = std::filesystem::path(t.path).filename().string();
    v.host = t.header.host;
    v.pid = t.header.pid;
    v.clock_offset_ns = MonotonicToRealtimeOffset(t);
    v.has_footer = t.footer.has_value();
    if (t.footer) {
      const size_t at = t.footer->reason.find(format::kWriteErrorPrefix);
      if (at != std::string::npos)
        v.write_error = t.footer->reason.substr(at + std::strlen(format::kWriteErrorPrefix));
    }
    v.clean = t.footer && t.footer->clean;
    v.torn = t.torn;
    v.ring_mode = t.header.ring_mode;
    v.bad_frames = t.bad_frames;
    v.dropped = t.DroppedRecords();
    m_.total_calls_ += f < totals_.size() ? totals_[f].calls : t.calls.size();
    for (uint32_t i = 0; i < t.sketches.size(); ++i)
      m_.sketch_index_[f].emplace(t.sketches[i].call_uid, i);
  }

  size_t CommFor(uint64_t id, uint32_t lineage) {
    auto [it, added] = index_.try_emplace({id, lineage}, m_.comms_.size());
    if (added) {
      m_.comms_.emplace_back();
      m_.comms_.back().id = id;
      m_.comms_.back().lineage = lineage;
    }
    return it->second;
  }

  RankView& RankOf(size_t ci, int rank) {
    CommModel& c = m_.comms_[ci];
    if (rank >= static_cast<int>(c.ranks.size())) c.ranks.resize(rank + 1);
    c.ranks[rank].rank = rank;
    return c.ranks[rank];
  }

  void AddCommRecords(uint32_t f) {
    const TraceFile& t = m_.dir_->files[f];
    for (uint32_t i = 0; i < t.comms.size(); ++i) {
      const CommRecord& r = t.comms[i];
      const size_t ci = CommFor(r.comm_id, r.lineage);
      CommModel& c = m_.comms_[ci];
      if (r.nranks <= 0 || r.nranks > kMaxRanks) {
        c.problems.push_back("a CommRecord claims " + std::to_string(r.nranks) +
                             " ranks; it is left out");
        continue;
      }
      if (c.nranks == 0) {
        c.nranks = r.nranks;
        c.parent_id = r.parent_id;
        c.color = r.color;
        c.origin = static_cast<CommOrigin>(r.origin);
      } else if (c.nranks != r.nranks) {
        c.problems.push_back("rank " + std::to_string(r.rank) + " created it with " +
                             std::to_string(r.nranks) + " ranks, an earlier rank with " +
                             std::to_string(c.nranks));
      }
      if (c.name.empty() && r.name_id) c.name = t.String(r.name_id);
      if (r.rank < 0 || r.rank >= std::max(r.nranks, 1) || r.nranks > kMaxRanks) {
        c.problems.push_back("a CommRecord names rank " + std::to_string(r.rank) + " of " +
                             std::to_string(r.nranks));
        continue;
      }
      RankView& rv = RankOf(ci, r.rank);
      if (rv.file >= 0 && rv.file != static_cast<int32_t>(f))
        c.problems.push_back("rank " + std::to_string(r.rank) + " is claimed by two processes (" +
                             m_.files_[rv.file].name + " and " + m_.files_[f].name + ")");
      rv.file = static_cast<int32_t>(f);
      rv.device = r.device;
      rv.comm_records.push_back(i);
      file_comms_[f].push_back({r.comm_id, ci, r.create_ns});
    }
  }

  // The comm a call of file f belongs to: the latest one with its id created before the call
  // (commHashes may collide across lineages; NCCL reuses handles after destroy). SIZE_MAX when
  // the file announced none with its id.
  size_t FileCommOfCall(uint32_t f, const CallRecord& c) const {
    size_t best = SIZE_MAX;
    int64_t best_t = INT64_MIN;
    for (const auto& fc : file_comms_.at(f))
      if (fc.id == c.comm_id &&
          (best == SIZE_MAX || (fc.create_ns <= c.enter_ns && fc.create_ns >= best_t))) {
        best = fc.index;
        best_t = fc.create_ns;
      }
    return best;
  }

  // A comm for a call on an id its file never announced (one thread at a time).
  size_t NewCommOfCall(uint32_t f, const CallRecord& c) {
    const size_t ci = CommFor(c.comm_id, 0);
    if (m_.comms_[ci].nranks == 0) unannounced_.insert(ci);
    file_comms_[f].push_back({c.comm_id, ci, INT64_MIN});
    return ci;
  }

  // What placing a file's calls found that touches state shared with other files: a problem
  // for a comm, a flagged call, or a call to place later, one file at a time (a comm no
  // CommRecord announced, a rank no process claimed). Kept with their row so that applying
  // them in row order gives what placing every call in order would have.
  struct FileScan {
    struct Problem {
      uint32_t row;
      size_t comm;
      std::string text;
    };
    std::vector<Problem> problems;
    std::vector<FlaggedCall> flagged;
    std::vector<uint32_t> deferred;
    std::map<std::tuple<size_t, int, uint64_t>, size_t> graph_of;  // (comm, rank, graph) -> index
    std::vector<uint32_t> failed_group_ends;  // rows of ncclGroupEnd calls that returned an error
  };

  // Files are placed on several threads: a call touches only the RankViews its file's
  // CommRecords claimed; the rest waits for ApplyScan, in file order.
  void AddCalls(int threads) {
    const auto nfiles = static_cast<uint32_t>(m_.dir_->files.size());
    for (uint32_t f = 0; f < nfiles; ++f) file_comms_[f];  // no insertion while threads read
    for (CommModel& c : m_.comms_)
      if (static_cast<int>(c.ranks.size()) < c.nranks) c.ranks.resize(c.nranks);
    std::vector<FileScan> scans(nfiles);
    ParallelFor(nfiles, threads, [&](size_t f) { ScanFile(static_cast<uint32_t>(f), &scans[f]); });
    for (uint32_t f = 0; f < nfiles; ++f) ApplyScan(f, &scans[f]);
  }

  void ScanFile(uint32_t f, FileScan* scan) {
    const TraceFile& t = m_.dir_->files[f];
    // Most files hold one rank of one or a few comms: reserve to avoid regrowing big vectors.
    const std::vector<FileComm>& fcs = file_comms_.at(f);
    if (!fcs.empty()) {
      const size_t share = t.calls.size() / fcs.size();
      for (const FileComm& fc : fcs)
        for (RankView& rv : m_.comms_[fc.index].ranks)
          if (rv.file == static_cast<int32_t>(f)) rv.collectives.reserve(share);
    }
    t.calls.ForEachRow(
        [&](size_t row, const CallRecord& c) {
          if (!PlaceCall(f, static_cast<uint32_t>(row), c, *scan, true))
            scan->deferred.push_back(static_cast<uint32_t>(row));
        },
        kPlaceWords);
  }

  // Every field PlaceCall reads, with UnplaceableCall, FileCommOfCall and NewCommOfCall: only
  // these columns of the packed calls are decoded to place them.
  static constexpr uint32_t kPlaceWords = CallTable::WordsOf(
      offsetof(CallRecord, api), offsetof(CallRecord, comm_id), offsetof(CallRecord, rank),
      offsetof(CallRecord, dtype), offsetof(CallRecord, count), offsetof(CallRecord, enter_ns),
      offsetof(CallRecord, device), offsetof(CallRecord, result), offsetof(CallRecord, capture),
      offsetof(CallRecord, graph_id), offsetof(CallRecord, seq), offsetof(CallRecord, root_peer));

  void ApplyScan(uint32_t f, FileScan* scan) {
    size_t p = 0, g = 0;
    auto apply_until = [&](uint32_t row) {
      for (; p < scan->problems.size() && scan->problems[p].row < row; ++p)
        m_.comms_[scan->problems[p].comm].problems.push_back(std::move(scan->problems[p].text));
      for (; g < scan->flagged.size() && scan->flagged[g].call.index < row; ++g)
        m_.flagged_.push_back(scan->flagged[g]);
    };
    for (const uint32_t row : scan->deferred) {
      apply_until(row);
      PlaceCall(f, row, m_.dir_->files[f].calls[row], *scan, false);
    }
    apply_until(UINT32_MAX);
    for (const uint32_t row : scan->failed_group_ends) FlagGroupEnd(f, row);
  }

  // A failed ncclGroupEnd names no communicator: it is flagged on the communicators of the calls
  // of its group (the same group id, issued before it in the same file).
  void FlagGroupEnd(uint32_t f, uint32_t row) {
    const CallTable& calls = m_.dir_->files[f].calls;
    const uint64_t group = calls[row].group_id;
    if (group == 0) return;
    constexpr uint32_t kLookBack = 1 << 16;  // a group holds at most a few thousand calls
    std::set<size_t> flagged;
    const uint32_t tid = calls[row].tid;
    for (uint32_t i = row; i-- > 0 && row - i <= kLookBack;) {
      const CallRecord c = calls[i];
      if (c.tid == tid && c.group_id != group) break;  // the thread's calls before the group
      if (c.group_id != group) continue;
      if (c.comm_id == 0 || c.rank < 0 || UnplaceableCall(c)) continue;
      const size_t ci = FileCommOfCall(f, c);
      if (ci == SIZE_MAX || !flagged.insert(ci).second) continue;
      m_.flagged_.push_back({CallRef{f, row}, ci, c.rank});
    }
  }

  // Places call `i` of file f. On a worker thread, returns false before changing anything
  // shared when the call needs that, and records problems and flagged calls in the scan;
  // otherwise does it all.
  // Reads only the fields of kPlaceWords: add any other it comes to need there.
  bool PlaceCall(uint32_t f, uint32_t i, const CallRecord& c, FileScan& scan, bool on_worker) {
    if (UnplaceableCall(c)) {
      ++m_.files_[f].unplaceable_calls;
      return true;
    }
    if (c.comm_id == 0) {
      if (FailedGroupEnd(c)) scan.failed_group_ends.push_back(i);
      return true;
    }
    size_t ci = FileCommOfCall(f, c);
    if (ci == SIZE_MAX) {
      if (on_worker) return false;
      ci = NewCommOfCall(f, c);
    }
    if (c.rank < 0) return true;  // lifecycle calls made before the rank was known
    auto problem = [&](std::string text) {
      if (on_worker)
        scan.problems.push_back({i, ci, std::move(text)});
      else
        m_.comms_[ci].problems.push_back(std::move(text));
    };
    const int nranks = m_.comms_[ci].nranks;
    if (c.rank >= kMaxRanks || (nranks > 0 && c.rank >= nranks)) {
      problem("a call names rank " + std::to_string(c.rank) + " of " + std::to_string(nranks) +
              "; it is left out");
      return true;
    }
    if (on_worker && (c.rank >= static_cast<int>(m_.comms_[ci].ranks.size()) ||
                      m_.comms_[ci].ranks[c.rank].file < 0))
      return false;
    RankView& rv = RankOf(ci, c.rank);
    if (rv.file < 0) {
      rv.file = static_cast<int32_t>(f);
      rv.device = c.device;
    } else if (rv.file != static_cast<int32_t>(f)) {
      if (on_worker) return false;  // placed in file order, so the first call of `f` is kept
      std::vector<CommModel::Rejoin>& rejoins = m_.comms_[ci].rejoins;
      const bool known = std::any_of(rejoins.begin(), rejoins.end(), [&](const auto& r) {
        return r.rank == c.rank && r.call.file == f;
      });
      if (!known) rejoins.push_back({c.rank, rv.file, CallRef{f, i}});
      return true;
    }
    const CallRef ref{f, i};
    const Api api = static_cast<Api>(c.api);
    constexpr int8_t kInProgress = 7;
    if ((c.result != 0 && c.result != kInProgress) || c.capture == 2)
      (on_worker ? scan.flagged : m_.flagged_).push_back({ref, ci, c.rank});
    if (c.capture == 1 && (IsCollective(api) || IsP2p(api))) {
      auto [it, added] = scan.graph_of.try_emplace({ci, c.rank, c.graph_id}, rv.graphs.size());
      if (added) rv.graphs.push_back({c.graph_id, {}, {}});
      rv.graphs[it->second].calls.push_back(ref);
    } else if (IsCollective(api)) {
      // Only a damaged record (or one without a seq) counts past kMaxSeq: the rank is then
      // renumbered in issue order (RenumberIfInconsistent).
      // Built aside and copied whole: constructed in place, the seq bit-field would be a
      // read-modify-write of fresh memory (a copy-on-write fault per page, a TLB shootdown
      // across the loading threads).
      const CollectiveSlot slot{.seq = std::min(c.seq, CollectiveSlot::kMaxSeq), .call = ref};
      rv.collectives.push_back(slot);
    } else if (IsP2p(api)) {
      rv.p2p.push_back({ref, c.root_peer, api == Api::kSend, c.seq, 0});
    } else if (IsLifecycle(api)) {
      rv.lifecycle.push_back(ref);
    } else {
      rv.other.push_back(ref);
    }
    return true;
  }

  // Graph launches: each launch of a graph re-issues its captured calls, so they take positions
  // in the comm's sequence. Eager calls and launches are merged by time and renumbered from the
  // first recorded seq.
  void ExpandGraphLaunches(RankView& rv) {
    if (rv.graphs.empty()) return;
    const TraceFile& t = m_.dir_->files[rv.file];
    bool any = false;
    for (GraphTemplate& g : rv.graphs) {
      for (const GraphEventRecord& e : t.graph_events)
        if (e.graph_id == g.graph_id && e.kind == static_cast<uint8_t>(GraphEventKind::kLaunch))
          g.launch_times_ns.push_back(e.time_ns);
      std::sort(g.launch_times_ns.begin(), g.launch_times_ns.end());
      any |= !g.launch_times_ns.empty();
    }
    if (!any) return;
    struct Item {
      int64_t t;
      int order;
      CollectiveSlot slot;
    };
    std::vector<Item> items;
    for (const CollectiveSlot& s : rv.collectives)
      items.push_back({m_.dir_->files[s.call.file].calls[s.call.index].enter_ns, 0, s});
    for (const GraphTemplate& g : rv.graphs)
      for (size_t l = 0; l < std::min<size_t>(g.launch_times_ns.size(), CollectiveSlot::kMaxLaunch);
           ++l)
        for (size_t k = 0; k < g.calls.size(); ++k) {
          const CallRecord& c = t.calls[g.calls[k].index];
          if (!IsCollective(static_cast<Api>(c.api))) continue;
          items.push_back({g.launch_times_ns[l],
                           static_cast<int>(k) + 1,
                           {.launch = l + 1, .call = g.calls[k]}});
        }
    // Eager calls keep their seq order; launches go between them by time.
    std::vector<Item> eager, launched;
    for (Item& it : items) (it.slot.launch == 0 ? eager : launched).push_back(it);
    std::stable_sort(launched.begin(), launched.end(), [](const Item& a, const Item& b) {
      const uint64_t la = a.slot.launch, lb = b.slot.launch;
      return std::tie(a.t, la, a.order) < std::tie(b.t, lb, b.order);
    });
    items.clear();
    size_t li = 0;
    for (const Item& e : eager) {
      while (li < launched.size() && launched[li].t < e.t) items.push_back(launched[li++]);
      items.push_back(e);
    }
    while (li < launched.size()) items.push_back(launched[li++]);
    const uint64_t first = rv.collectives.empty() ? 0 : rv.collectives.front().seq;
    rv.collectives.clear();
    for (size_t k = 0; k < items.size(); ++k) {
      items[k].slot.seq = first + k;
      rv.collectives.push_back(items[k].slot);
    }
  }

  bool CreationMayBeLost(const CommModel& c) const {
    for (const RankView& rv : c.ranks)
      if (rv.file >= 0 && (m_.files_[rv.file].bad_frames > 0 || m_.files_[rv.file].dropped > 0))
        return true;
    return false;
  }

  void FinishComms() {
    for (size_t ci = 0; ci < m_.comms_.size(); ++ci) {
      CommModel& c = m_.comms_[ci];
      if (unannounced_.count(ci)) {
        c.nranks = static_cast<int>(c.ranks.size());
        // A corrupt frame or dropped records may have held the creation: the file's own note
        // says so (trace_incomplete), and it is no evidence of a lifecycle error. Nor is a log
        // without INIT lines (the importer notes it), unlike a recording that lost a process's
        // creation record.
        if (!CreationMayBeLost(c) && !OnlyFromLogs(c))
          c.problems.push_back(
              "calls were recorded on this communicator but no process recorded "
              "its creation");
      }
      if (static_cast<int>(c.ranks.size()) < c.nranks) c.ranks.resize(c.nranks);
      for (int r = 0; r < static_cast<int>(c.ranks.size()); ++r) {
        RankView& rv = c.ranks[r];
        rv.rank = r;
        auto by_seq = [](const CollectiveSlot& a, const CollectiveSlot& b) {
          return a.seq < b.seq;
        };
        if (!std::is_sorted(rv.collectives.begin(), rv.collectives.end(), by_seq))
          std::stable_sort(rv.collectives.begin(), rv.collectives.end(), by_seq);
        RenumberIfInconsistent(c, rv);
        if (rv.file >= 0) {
          ExpandGraphLaunches(rv);
          m_.files_[rv.file].ranks.push_back({ci, r});
        }
      }
    }
  }

  bool OnlyFromLogs(const CommModel& c) const {
    for (const RankView& r : c.ranks)
      if (r.file >= 0 && m_.dir_->files[r.file].header.route != Route::kNcclLog) return false;
    return true;
  }

  // Seqs come from the recorder; a span far beyond the number of calls (a recorder bug, a
  // corrupt record) would make every per-position array huge. Such a rank is renumbered in
  // issue order and the communicator says so.
  static void RenumberIfInconsistent(CommModel& c, RankView& rv) {
    if (rv.collectives.empty()) return;
    const uint64_t n = rv.collectives.size();
    const uint64_t first = rv.collectives.front().seq, last = rv.collectives.back().seq;
    if (last < CollectiveSlot::kMaxSeq && last - first < 16 * n + 1'000'000) return;
    c.problems.push_back("rank " + std::to_string(rv.rank) +
                         "'s sequence numbers are inconsistent (" + std::to_string(n) +
                         " calls span seq " + std::to_string(first) + " to " +
                         std::to_string(last) + "); they were renumbered in issue order");
    for (uint64_t k = 0; k < n; ++k) rv.collectives[k].seq = k;
  }

  void StampTimes() {
    const auto& files = m_.dir_->files;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (uint32_t f = 0; f < files.size(); ++f) {
      const TraceFile& t = files[f];
      int64_t first = INT64_MAX, last = INT64_MIN;
      t.calls.ForEachRow(
          [&](size_t, const CallRecord& c) {
            first = std::min(first, c.enter_ns);
            last = std::max(last, std::max(c.exit_ns, c.enter_ns));
          },
          CallTable::WordsOf(offsetof(CallRecord, enter_ns), offsetof(CallRecord, exit_ns)));
      if (f < totals_.size()) {
        first = std::min(first, totals_[f].first_enter_ns);
        last = std::max(last, totals_[f].last_ns);
        // The file's reader saw all of its calls; this model holds some of them.
        if (totals_[f].has_last_comm_call) m_.files_[f].last_comm_call = totals_[f].last_comm_call;
        m_.files_[f].tail_from_ns = totals_[f].tail_from_ns;
        m_.files_[f].aborted = totals_[f].aborts > 0;
      }
      if (first != INT64_MAX) {
        m_.files_[f].first_alive_ns = m_.CommonTime(f, first);
        lo = std::min(lo, m_.files_[f].first_alive_ns);
      }
      for (const ClockPairRecord& p : t.clocks) last = std::max(last, p.mono_ns);
      if (t.footer && t.footer->end_ns) last = std::max(last, t.footer->end_ns);
      for (const GraphEventRecord& e : t.graph_events) last = std::max(last, e.time_ns);
      if (last != INT64_MIN) {
        m_.files_[f].last_alive_ns = m_.CommonTime(f, last);
        hi = std::max(hi, m_.files_[f].last_alive_ns);
      }
    }
    m_.start_ns_ = lo == INT64_MAX ? 0 : lo;
    m_.end_ns_ = hi == INT64_MIN ? m_.start_ns_ : hi;
    for (CommModel& c : m_.comms_)
      for (RankView& rv : c.ranks) {
        if (rv.file < 0) continue;
        const uint32_t f = static_cast<uint32_t>(rv.file);
        const CallTable& calls = files[f].calls;
        for (GraphTemplate& g : rv.graphs)  // collectives' times: TraceModel::SlotTime
          for (int64_t& lt : g.launch_times_ns) lt = m_.CommonTime(f, lt);
        for (P2pCall& p : rv.p2p) p.time_ns = m_.CommonTime(f, calls.EnterNs(p.call.index));
      }
  }

  struct FileComm {
    uint64_t id;
    size_t index;
    int64_t create_ns;
  };
  TraceModel& m_;
  int threads_;
  PartOfTrace part_;
  const std::vector<FileTotals>& totals_;  // empty: the files hold all of their calls
  std::map<std::pair<uint64_t, uint32_t>, size_t> index_;
  std::map<uint32_t, std::vector<FileComm>> file_comms_;
  std::set<size_t> unannounced_;
};

TraceModel TraceModel::Build(TraceDir dir, int threads) {
  TraceModel m;
  *m.dir_ = std::move(dir);
  ModelBuilder(&m, threads).Build();
  return m;
}

TraceModel TraceModel::BuildPart(TraceDir dir, PartOfTrace part, int threads) {
  TraceModel m;
  *m.dir_ = std::move(dir);
  ModelBuilder(&m, threads, std::move(part)).Build();
  return m;
}

// Sizes computed from a call that moves more than any GPU holds would overflow.
bool UnplaceableCall(const CallRecord& c) {
  const Api api = static_cast<Api>(c.api);
  const bool on_comm = IsCollective(api) || IsP2p(api);
  if (!on_comm) return ApiName(api) == "Unknown";  // the rare calls: a name lookup is cheap
  if (c.comm_id == 0 || c.rank < 0) return true;
  const size_t elem = DtypeSize(c.dtype);
  constexpr uint64_t kMaxCallBytes = 1ull << 44;  // 16 TiB: more than any GPU's memory
  return elem == 0 || c.count > kMaxCallBytes / elem;
}

bool FailedGroupEnd(const CallRecord& c) {
  constexpr int8_t kInProgress = 7;
  return static_cast<Api>(c.api) == Api::kGroupEnd && c.result != 0 && c.result != kInProgress;
}

}  // namespace ncclrr::analysis
