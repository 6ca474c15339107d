// WindowedTrace: the outline pass with its buckets, composite models of buckets and windows of
// real calls, and the check of a trace larger than memory.
#include "models/windowed_trace.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_map>

#include "ncclrr/analysis/check_in_passes.h"
#include "ncclrr/base/parallel_for.h"

namespace ncclrr::viewer {
namespace {

// The buckets of one lane while its calls stream by: fixed-width time slots from the lane's
// first call on, the width doubled (slots merged pairwise) whenever the calls outrun `cap`.
class LaneBuckets {
 public:
  LaneBuckets(int32_t lane_device, uint64_t lane_stream, uint32_t cap)
      : device(lane_device), stream(lane_stream), cap_(cap) {}

  void Add(const CallRecord& c, uint64_t row) {
    const int64_t t = c.enter_ns, end = std::max(c.enter_ns, c.exit_ns);
    if (slots_.empty()) origin_ = t;
    uint64_t i = t <= origin_ ? 0 : static_cast<uint64_t>(t - origin_) / width_;
    while (i >= cap_) {
      Coarsen();
      i /= 2;
    }
    if (i >= slots_.size()) slots_.resize(i + 1);
    Slot& s = slots_[i];
    if (s.b.calls == 0 || row < s.first_row) {
      if (s.b.calls == 0) s.b = {t, end, 0};
      s.first = c;
      s.first_row = row;
    }
    s.b.begin = std::min(s.b.begin, t);
    s.b.end = std::max(s.b.end, end);
    ++s.b.calls;
  }

  // The non-empty buckets in time order, each with its first call made to span them all.
  void Take(std::vector<CallBucket>* buckets, std::vector<CallRecord>* reps) const {
    for (const Slot& s : slots_) {
      if (s.b.calls == 0) continue;
      buckets->push_back(s.b);
      CallRecord r = s.first;
      r.enter_ns = s.b.begin;
      r.exit_ns = s.b.end;
      r.flags &= ~call_flags::kInFlight;  // in-flight calls show among a window's real calls
      r.group_id = 0;                     // no group brackets across a bucket's span
      reps->push_back(r);
    }
  }

  const int32_t device;
  const uint64_t stream;

 private:
  struct Slot {
    CallBucket b;
    CallRecord first{};
    uint64_t first_row = 0;
  };
  void Coarsen() {
    std::vector<Slot> merged((slots_.size() + 1) / 2);
    for (size_t i = 0; i < slots_.size(); ++i) {
      Slot& into = merged[i / 2];
      const Slot& s = slots_[i];
      if (s.b.calls == 0) continue;
      if (into.b.calls == 0) {
        into = s;
        continue;
      }
      if (s.first_row < into.first_row) {
        into.first = s.first;
        into.first_row = s.first_row;
      }
      into.b.begin = std::min(into.b.begin, s.b.begin);
      into.b.end = std::max(into.b.end, s.b.end);
      into.b.calls += s.b.calls;
    }
    slots_.swap(merged);
    width_ *= 2;
  }

  uint32_t cap_;
  int64_t origin_ = 0;
  uint64_t width_ = 1000;  // ns
  std::vector<Slot> slots_;
};

// What the pass over one file gathers beside its outline.
struct FileFindings {
  std::vector<LaneBuckets> lanes;
  std::map<uint64_t, uint64_t> calls_per_comm;
  analysis::FileTotals totals;
};

analysis::ClockSamples NoClockSamples(analysis::ClockSamples) { return {}; }

}  // namespace

StatusOr<std::shared_ptr<WindowedTrace>> WindowedTrace::Outline(
    const std::string& path, int threads, const std::function<void(std::string_view)>& progress,
    uint64_t bucket_budget) {
  auto listed = ListTraceFiles(path);
  if (!listed.ok()) return listed.status();
  const std::vector<std::string>& paths = listed.value();
  const uint32_t cap = static_cast<uint32_t>(std::clamp<uint64_t>(
      bucket_budget / std::max<uint64_t>(paths.size() * 2, 1), 4, kMaxBucketsPerLane));
  std::vector<StatusOr<TraceOutline>> outlines(paths.size(), Status(StatusCode::kInternal, ""));
  std::vector<FileFindings> found(paths.size());
  std::atomic<size_t> done{0};
  std::mutex say;
  ParallelFor(paths.size(), std::max(threads, 1), [&](size_t f) {
    FileFindings& ff = found[f];
    size_t last = 0;
    auto lane_of = [&](const CallRecord& c) -> LaneBuckets& {
      if (last < ff.lanes.size() && ff.lanes[last].device == c.device &&
          ff.lanes[last].stream == c.stream)
        return ff.lanes[last];
      for (last = 0; last < ff.lanes.size(); ++last)
        if (ff.lanes[last].device == c.device && ff.lanes[last].stream == c.stream)
          return ff.lanes[last];
      ff.lanes.emplace_back(c.device, c.stream, cap);
      return ff.lanes.back();
    };
    outlines[f] = OutlineTraceFile(paths[f], [&](const CallRecord* calls, size_t n, uint64_t row) {
      for (size_t i = 0; i < n; ++i) {
        const CallRecord& c = calls[i];
        if (analysis::UnplaceableCall(c)) {
          ++ff.totals.unplaceable;
          continue;
        }
        ff.totals.first_enter_ns = std::min(ff.totals.first_enter_ns, c.enter_ns);
        ff.totals.last_ns = std::max({ff.totals.last_ns, c.enter_ns, c.exit_ns});
        ++ff.calls_per_comm[c.comm_id];
        lane_of(c).Add(c, row + i);
      }
    });
    if (progress) {
      const size_t n = ++done;
      std::lock_guard<std::mutex> lock(say);
      progress("outlined " + std::to_string(n) + " of " + std::to_string(paths.size()) +
               " trace files");
    }
  });

  auto w = std::make_shared<WindowedTrace>();
  w->path_ = path;
  TraceDir skeleton;
  skeleton.dir = path;
  for (size_t f = 0; f < paths.size(); ++f) {
    if (!outlines[f].ok()) {
      if (paths.size() == 1) return outlines[f].status();
      w->warnings_.push_back(paths[f] + ": " + outlines[f].status().message());
      continue;
    }
    TraceOutline& o = outlines[f].value();
    FileFindings& ff = found[f];
    ff.totals.calls = o.calls();
    std::vector<CallBucket> buckets;
    std::vector<CallRecord> reps;
    std::vector<LaneRange> lanes;
    for (const LaneBuckets& lane : ff.lanes) {
      LaneRange r{lane.device, lane.stream, static_cast<uint32_t>(buckets.size()), 0};
      lane.Take(&buckets, &reps);
      r.count = static_cast<uint32_t>(buckets.size()) - r.first;
      lanes.push_back(r);
    }
    CallTable table;
    table.Append(reps.data(), reps.size());
    table.Seal();
    for (const auto& [id, n] : ff.calls_per_comm) w->calls_per_comm_[id] += n;
    w->calls_ += o.calls();
    skeleton.files.push_back(o.records);
    w->paths_.push_back(paths[f]);
    w->outlines_.push_back(std::move(o));
    w->buckets_.push_back(std::move(buckets));
    w->representatives_.push_back(std::move(table));
    w->lanes_.push_back(std::move(lanes));
    w->totals_.push_back(ff.totals);
  }
  if (w->outlines_.empty())
    return Status(StatusCode::kNotFound, "no trace file under " + path + " could be read" +
                                             (w->warnings_.empty() ? "" : ": " + w->warnings_[0]));
  skeleton.warnings = w->warnings_;
  // The clocks: each file's recorded clock pairs. (A composite's buckets cannot align hosts by
  // matched collectives, as a whole model does, so none of its models tries.)
  analysis::PartOfTrace part;
  part.totals = w->totals_;
  part.pool_clock_samples = NoClockSamples;
  const analysis::TraceModel clocks =
      analysis::TraceModel::BuildPart(std::move(skeleton), std::move(part), threads);
  w->origin_ns_ = INT64_MAX;
  for (size_t f = 0; f < w->outlines_.size(); ++f) {
    w->clock_offset_ns_.push_back(clocks.files()[f].clock_offset_ns);
    if (w->totals_[f].first_enter_ns != INT64_MAX)
      w->origin_ns_ =
          std::min(w->origin_ns_, w->totals_[f].first_enter_ns + w->clock_offset_ns_[f]);
  }
  if (w->origin_ns_ == INT64_MAX) w->origin_ns_ = 0;
  return w;
}

uint64_t WindowedTrace::CallsIn(int64_t begin, int64_t end) const {
  uint64_t n = 0;
  for (size_t f = 0; f < buckets_.size(); ++f) {
    const int64_t shift = clock_offset_ns_[f] - origin_ns_;
    for (const CallBucket& b : buckets_[f])
      if (b.end + shift >= begin && b.begin + shift <= end) n += b.calls;
  }
  return n;
}

std::optional<uint32_t> WindowedTrace::BucketOf(uint32_t file, const CallRecord& c) const {
  if (file >= lanes_.size()) return std::nullopt;
  for (const LaneRange& lane : lanes_[file]) {
    if (lane.device != c.device || lane.stream != c.stream || lane.count == 0) continue;
    const auto first = buckets_[file].begin() + lane.first;
    const auto last = first + lane.count;
    auto it = std::upper_bound(first, last, c.enter_ns,
                               [](int64_t t, const CallBucket& b) { return t < b.begin; });
    if (it != first) --it;
    return static_cast<uint32_t>(it - buckets_[file].begin());
  }
  return std::nullopt;
}

StatusOr<analysis::TraceModel> WindowedTrace::Composite(
    std::optional<std::pair<int64_t, int64_t>> window,
    std::vector<std::vector<CompositeCall>>* what) const {
  const size_t n = outlines_.size();
  TraceDir dir;
  dir.dir = path_;
  dir.warnings = warnings_;
  dir.files.resize(n);
  what->assign(n, {});
  std::vector<Status> failed(n, Status::Ok());
  ParallelFor(n, CoreCount(), [&](size_t f) {
    const TraceOutline& o = outlines_[f];
    const int64_t shift = clock_offset_ns_[f] - origin_ns_;
    std::vector<size_t> frames;
    int64_t lo = INT64_MAX, hi = INT64_MIN;  // the loaded frames' span, monotonic
    if (window)
      for (size_t k = 0; k < o.frames.size(); ++k) {
        const FrameSpan& s = o.frames[k];
        if (s.last_ns + shift < window->first || s.first_ns + shift > window->second) continue;
        frames.push_back(k);
        lo = std::min(lo, s.first_ns);
        hi = std::max(hi, s.last_ns);
      }
    std::vector<std::pair<uint64_t, CallRecord>> real;
    if (!frames.empty()) {
      auto got = ReadOutlinedCalls(paths_[f], o, frames);
      if (!got.ok()) {
        failed[f] = got.status();
        return;
      }
      real = std::move(got.value());
    }
    // Buckets and real calls merged in time order, as a file holds its calls.
    struct Item {
      int64_t enter;
      CompositeCall what;
      CallRecord call;
    };
    std::vector<Item> items;
    const std::vector<CallBucket>& buckets = buckets_[f];
    for (uint32_t b = 0; b < buckets.size(); ++b)
      if (buckets[b].begin < lo || buckets[b].end > hi)
        items.push_back({buckets[b].begin, {CompositeCall::kBucket, b}, representatives_[f][b]});
    for (auto& [index, c] : real)
      items.push_back({c.enter_ns, {static_cast<int64_t>(index), 0}, c});
    std::stable_sort(items.begin(), items.end(),
                     [](const Item& a, const Item& b) { return a.enter < b.enter; });
    TraceFile& t = dir.files[f];
    t = o.records;
    std::vector<CallRecord> calls;
    calls.reserve(items.size());
    (*what)[f].reserve(items.size());
    for (const Item& it : items) {
      calls.push_back(it.call);
      (*what)[f].push_back(it.what);
    }
    t.calls.Append(calls.data(), calls.size());
    t.calls.Seal();
  });
  for (const Status& s : failed)
    if (!s.ok()) return s;
  analysis::PartOfTrace part;
  part.totals = totals_;
  part.pool_clock_samples = NoClockSamples;
  return analysis::TraceModel::BuildPart(std::move(dir), std::move(part), CoreCount());
}

StatusOr<analysis::Report> WindowedTrace::Check(
    uint64_t memory_bytes, const std::function<void(std::string_view)>& progress,
    const std::string& spill_dir) const {
  uint64_t largest = 0;
  for (const auto& [id, n] : calls_per_comm_) largest = std::max(largest, n);
  bool data = false;
  for (const TraceOutline& o : outlines_)
    data = data || !o.records.sketches.empty() || !o.records.captures.empty();
  const uint64_t need = (data ? calls_ : largest) * analysis::kCheckBytesPerCall;
  analysis::PassOptions passes;
  passes.memory_bytes = memory_bytes;
  passes.spill_dir = spill_dir;
  passes.must_bound = need > memory_bytes;  // not at the session's expense
  analysis::CheckOptions options;
  options.progress = progress;
  auto checked = analysis::CheckInPasses(path_, passes, options);
  // Errors other than the bound's (a file changed meanwhile) are the session's to show.
  const StatusCode code = checked.ok() ? StatusCode::kOk : checked.status().code();
  if (checked.ok() || !passes.must_bound ||
      (code != StatusCode::kUnsupported && code != StatusCode::kInvalidArgument))
    return checked;
  analysis::Report r;
  analysis::Note note;
  note.kind = analysis::NoteKind::kTraceIncomplete;
  note.message =
      std::string("not checked here: ") +
      (data ? "the trace's data checks need all of its " + std::to_string(calls_) + " calls"
            : "one communicator alone holds " + std::to_string(largest) + " calls") +
      " (~" + std::to_string(need >> 20) + " MiB to check), more than this machine has free (" +
      std::to_string(memory_bytes >> 20) + " MiB), and " + checked.status().message() +
      ". The timeline is complete; for the findings run `ncclrr check " + path_ +
      " --memory SIZE --spill DIR` with a directory on a disk with room, or on a larger machine, "
      "or `mpirun -np P ncclrr check " +
      path_ + " --mpi`.";
  r.notes.push_back(std::move(note));
  r.summary.files = outlines_.size();
  r.summary.calls = calls_;
  r.summary.notes = 1;
  return r;
}

std::map<uint64_t, CallRecord> WindowedTrace::ReadCalls(const std::vector<analysis::CallRef>& refs,
                                                        size_t limit) const {
  std::map<uint32_t, std::map<size_t, std::vector<uint64_t>>> wanted;  // file -> frame -> index
  size_t taken = 0;
  for (const analysis::CallRef& r : refs) {
    if (r.file >= outlines_.size() || taken >= limit) continue;
    const TraceOutline& o = outlines_[r.file];
    const size_t frame = o.FrameOfRow(o.RowOfIndex(r.index));
    if (frame >= o.frames.size()) continue;
    wanted[r.file][frame].push_back(r.index);
    ++taken;
  }
  std::map<uint64_t, CallRecord> out;
  for (const auto& [file, by_frame] : wanted) {
    std::vector<size_t> frames;
    for (const auto& [k, indices] : by_frame) frames.push_back(k);
    auto got = ReadOutlinedCalls(paths_[file], outlines_[file], frames);
    if (!got.ok()) continue;  // the file changed: those findings stay off the timeline
    std::unordered_map<uint64_t, const CallRecord*> by_index;
    for (const auto& [index, c] : got.value()) by_index[index] = &c;
    for (const auto& [k, indices] : by_frame)
      for (uint64_t i : indices)
        if (auto it = by_index.find(i); it != by_index.end())
          out[(uint64_t{file} << 32) | i] = *it->second;
  }
  return out;
}

}  // namespace ncclrr::viewer
