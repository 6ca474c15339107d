// Outlining a trace file: the walk FileReader makes, one frame at a time, keeping the records
// but handing the calls on; and reading chosen frames' calls back from the outline.
#include "ncclrr/trace/trace_outline.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "frame_reader.h"
#include "frame_walk.h"
#include "ncclrr/schema/trace_generated.h"

namespace ncclrr {
namespace {

bool InFlight(const CallRecord& c) { return (c.flags & call_flags::kInFlight) != 0; }

// The uids of calls seen returned. The writer numbers a thread's calls densely (its ring's
// index above bit 40, a counter below), so a bit per uid and ring holds them; uids numbered
// otherwise go to a hash set.
class UidSet {
 public:
  void Insert(uint64_t uid) {
    if (auto* word = Word(uid, true)) {
      *word |= Bit(uid);
      return;
    }
    other_.insert(uid);
  }
  bool Contains(uint64_t uid) const {
    if (const uint64_t* word = const_cast<UidSet*>(this)->Word(uid, false))
      return (*word & Bit(uid)) != 0;
    return other_.count(uid) != 0;
  }

 private:
  static constexpr uint64_t kCounterBits = 40, kDenseLimit = uint64_t{1} << 32;
  static constexpr size_t kMaxRings = 4096;
  static uint64_t Bit(uint64_t uid) { return uint64_t{1} << (uid % 64); }
  // The word of `uid`'s bit; null for a uid kept in the hash set (or not yet seen, unless
  // `grow`).
  uint64_t* Word(uint64_t uid, bool grow) {
    const uint64_t counter = uid & ((uint64_t{1} << kCounterBits) - 1);
    if (counter >= kDenseLimit) return nullptr;
    auto it = rings_.find(uid >> kCounterBits);
    if (it == rings_.end()) {
      if (!grow || rings_.size() >= kMaxRings) return nullptr;
      it = rings_.emplace(uid >> kCounterBits, std::vector<uint64_t>()).first;
    }
    std::vector<uint64_t>& bits = it->second;
    const size_t w = static_cast<size_t>(counter / 64);
    if (w >= bits.size()) {
      if (!grow) return nullptr;
      bits.resize(std::max(w + 1, bits.size() * 2), 0);
    }
    return &bits[w];
  }
  std::unordered_map<uint64_t, std::vector<uint64_t>> rings_;
  std::unordered_set<uint64_t> other_;
};

// Tells, call by call in file order, which rows ReadTraceFile leaves out: every in-flight copy
// of a call with a returned copy anywhere in the file (the writer may write either first), and
// in-flight copies after the first of a call that never returned.
class SupersededCopies {
 public:
  void See(const CallRecord& c, uint64_t row) {
    if (!InFlight(c)) {
      returned_.Insert(c.uid);
      if (first_.empty()) return;
      auto it = first_.find(c.uid);
      if (it == first_.end() || it->second == kDropped) return;
      dropped_.push_back(it->second);
      it->second = kDropped;
      return;
    }
    auto [it, added] = first_.try_emplace(c.uid, row);
    if (!added) {
      dropped_.push_back(row);  // a later copy: the first stands for the call
    } else if (returned_.Contains(c.uid)) {
      dropped_.push_back(row);
      it->second = kDropped;
    }
  }
  std::vector<uint64_t> Take() {
    std::sort(dropped_.begin(), dropped_.end());
    return std::move(dropped_);
  }

 private:
  static constexpr uint64_t kDropped = UINT64_MAX;
  UidSet returned_;
  std::unordered_map<uint64_t, uint64_t> first_;  // uid -> row of its first in-flight copy
  std::vector<uint64_t> dropped_;
};

}  // namespace

uint64_t TraceOutline::IndexOfRow(uint64_t row) const {
  return row - static_cast<uint64_t>(std::lower_bound(dropped.begin(), dropped.end(), row) -
                                     dropped.begin());
}

uint64_t TraceOutline::RowOfIndex(uint64_t index) const {
  uint64_t row = index;
  for (uint64_t d : dropped) {  // few: only calls a killed or hung job left in flight
    if (d > row) break;
    ++row;
  }
  return row;
}

size_t TraceOutline::FrameOfRow(uint64_t row) const {
  auto it = std::upper_bound(frames.begin(), frames.end(), row,
                             [](uint64_t r, const FrameSpan& s) { return r < s.first_row; });
  if (it == frames.begin()) return frames.size();
  const size_t f = static_cast<size_t>(it - frames.begin()) - 1;
  return row < frames[f].first_row + frames[f].calls ? f : frames.size();
}

StatusOr<TraceOutline> OutlineTraceFile(const std::string& path, const OutlineCallsFn& on_calls) {
  TraceOutline o;
  TraceFile& t = o.records;
  t.path = path;
  SupersededCopies copies;
  std::vector<CallRecord> calls;
  auto on_batch = [&](const fb::Batch& b, size_t offset) {
    calls.clear();
    internal::CollectBatch(b, &t, &calls);
    if (calls.empty()) return;
    FrameSpan s;
    s.offset = offset;
    s.first_row = o.rows;
    s.calls = static_cast<uint32_t>(calls.size());
    s.first_ns = INT64_MAX;
    s.last_ns = INT64_MIN;
    for (size_t i = 0; i < calls.size(); ++i) {
      const CallRecord& r = calls[i];
      s.first_ns = std::min(s.first_ns, r.enter_ns);
      s.last_ns = std::max({s.last_ns, r.enter_ns, r.exit_ns});
      copies.See(r, o.rows + i);
    }
    o.frames.push_back(s);
    if (on_calls) on_calls(calls.data(), calls.size(), o.rows);
    o.rows += calls.size();
  };
  NCCLRR_RETURN_IF_ERROR(internal::ForEachFrame(path, &t.header, on_batch, &t.warnings, &t));
  o.dropped = copies.Take();
  internal::FinishReading(path, &t);
  return o;
}

StatusOr<std::vector<std::pair<uint64_t, CallRecord>>> ReadOutlinedCalls(
    const std::string& path, const TraceOutline& outline, const std::vector<size_t>& frames) {
  using internal::FrameCheck;
  internal::MappedFile file;
  NCCLRR_RETURN_IF_ERROR(file.Open(path));
  const internal::ByteView f = file.view();
  std::vector<uint8_t> scratch[2];
  std::vector<CallRecord> calls;
  std::vector<std::pair<uint64_t, CallRecord>> out;
  for (size_t k : frames) {
    if (k >= outline.frames.size())
      return Status(StatusCode::kInvalidArgument, path + ": no frame " + std::to_string(k));
    const FrameSpan& s = outline.frames[k];
    internal::FrameHeader h;
    const uint8_t* payload = nullptr;
    size_t psize = 0, frame_bytes = 0;
    calls.clear();
    TraceFile ignored;
    if (internal::CheckFrame(f, s.offset, &h, scratch, &payload, &psize, &frame_bytes) ==
        FrameCheck::kOk)
      internal::CollectBatch(*flatbuffers::GetRoot<fb::Batch>(payload), &ignored, &calls);
    if (calls.size() != s.calls)
      return Status(StatusCode::kCorrupt,
                    path + ": the frame at byte " + std::to_string(s.offset) +
                        " no longer holds the calls it held when the trace was opened: was the "
                        "file changed meanwhile? Open the trace again.");
    auto d = std::lower_bound(outline.dropped.begin(), outline.dropped.end(), s.first_row);
    uint64_t index = s.first_row - static_cast<uint64_t>(d - outline.dropped.begin());
    for (size_t i = 0; i < calls.size(); ++i) {
      const uint64_t row = s.first_row + i;
      if (d != outline.dropped.end() && *d == row) {
        ++d;
        continue;
      }
      out.emplace_back(index++, calls[i]);
    }
  }
  return out;
}

}  // namespace ncclrr
