#include "file_reader.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <type_traits>
#include <unordered_set>

#include "ncclrr/base/parallel_for.h"
#include "ncclrr/schema/trace_generated.h"
#include "ncclrr/trace/format.h"

namespace ncclrr::internal {
namespace {

// Offsets of the frames from `off` on whose headers look whole (magic, sizes, within the file),
// at most `max`: candidates to decode in parallel. Empty when the frame at `off` is not one.
std::vector<size_t> PlausibleFrames(const ByteView& f, size_t off, size_t max) {
  std::vector<size_t> out;
  while (out.size() < max && off + format::kFrameHeaderSize <= f.size()) {
    FrameHeader h;
    std::memcpy(&h, f.data() + off, sizeof h);
    if (h.magic != format::kFrameMagic || h.stored_size > format::kMaxFrameBytes ||
        h.raw_size > format::kMaxFrameBytes || (h.flags & ~format::kFlagTransposed) != 0)
      break;
    const size_t ext = (h.flags & format::kFlagTransposed) ? format::kFrameExtensionSize : 0;
    const size_t end = off + format::kFrameHeaderSize + ext + h.stored_size;
    if (end > f.size()) break;
    out.push_back(off);
    off = end;
  }
  return out;
}

bool InFlight(const CallRecord& c) { return (c.flags & call_flags::kInFlight) != 0; }

// A call written while in flight and written again when it returned is kept once, as returned.
void DropSupersededInFlight(TraceFile* t) {
  std::unordered_set<uint64_t> seen;
  for (const CallRecord& c : t->calls)
    if (!InFlight(c)) seen.insert(c.uid);
  t->calls.Filter([&](const CallRecord& c) { return !InFlight(c) || seen.insert(c.uid).second; });
}

}  // namespace

// Whether a frame's calls, left in columns, can be packed as they are: their times are sane
// (else they are made rows and clamped) and whether any is in flight.
bool ColumnTimesSane(const uint64_t* columns, size_t n, bool* in_flight) {
  constexpr size_t kEnter = offsetof(CallRecord, enter_ns) / 8;
  constexpr size_t kExit = offsetof(CallRecord, exit_ns) / 8;
  constexpr size_t kFlags = offsetof(CallRecord, flags) / 8;
  constexpr int kFlagsShift = (offsetof(CallRecord, flags) % 8) * 8;
  bool sane = true;
  uint64_t flags = 0;
  for (size_t i = 0; i < n; ++i) {
    sane &= TimeSane(static_cast<int64_t>(columns[kEnter * n + i])) &
            TimeSane(static_cast<int64_t>(columns[kExit * n + i]));
    flags |= columns[kFlags * n + i] >> kFlagsShift;
  }
  *in_flight = (flags & call_flags::kInFlight) != 0;
  return sane;
}

void FileReader::Slot::Decode(const ByteView& f, size_t off) {
  records = TraceFile{};
  calls = nullptr;
  columns = nullptr;
  ncalls = 0;
  in_flight = false;
  FrameHeader h;
  const uint8_t* payload = nullptr;
  size_t psize = 0;
  TransposedRegion region;
  check = CheckFrame(f, off, &h, scratch, &payload, &psize, &bytes, &region);
  if (check != FrameCheck::kOk) return;
  const fb::Batch* b = flatbuffers::GetRoot<fb::Batch>(payload);
  static_assert(sizeof(CallRecord) == sizeof(fb::CallRec));
  if (!region.empty()) {
    // The writer transposes exactly the calls; a frame transposed otherwise is read as rows.
    const bool whole_calls = b->calls() && b->calls()->size() == region.rows &&
                             region.row_words == CallTable::kWords &&
                             b->calls()->Data() == payload + region.offset &&
                             reinterpret_cast<uintptr_t>(payload + region.offset) % 8 == 0;
    if (whole_calls) {
      const auto* cols = reinterpret_cast<const uint64_t*>(payload + region.offset);
      if (ColumnTimesSane(cols, region.rows, &in_flight)) {
        CollectBatch(*b, &records, nullptr);
        columns = cols;
        ncalls = region.rows;
        return;
      }
    }
    check = CheckFrame(f, off, &h, scratch, &payload, &psize, &bytes);
    if (check != FrameCheck::kOk) return;
    b = flatbuffers::GetRoot<fb::Batch>(payload);
  }
  CollectBatch(*b, &records, nullptr);
  if (!b->calls() || b->calls()->size() == 0) return;
  calls = reinterpret_cast<const CallRecord*>(b->calls()->Data());
  ncalls = b->calls()->size();
  in_flight = std::any_of(calls, calls + ncalls, InFlight);
  if (CallTimesSane(calls, ncalls)) return;
  clamped.assign(calls, calls + ncalls);
  records.clamped_times += ClampCallTimes(clamped.data(), ncalls);
  calls = clamped.data();
}

void FileReader::Slot::MoveInto(TraceFile* t) {
  for (auto& [id, text] : records.strings) t->strings[id] = std::move(text);
  t->ForEachKindWith(records, [](auto& into, auto& from) {
    if constexpr (!std::is_same_v<std::decay_t<decltype(into)>, CallTable>)
      into.insert(into.end(), std::make_move_iterator(from.begin()),
                  std::make_move_iterator(from.end()));
  });
  t->gpu_started.insert(t->gpu_started.end(), records.gpu_started.begin(),
                        records.gpu_started.end());
  t->clamped_times += records.clamped_times;
  if (records.footer) t->footer = std::move(records.footer);
  if (records.nccl_version != 0) t->nccl_version = records.nccl_version;
}

FileReader::FileReader(int threads)
    : threads_(std::max(threads, 1)), slots_(static_cast<size_t>(threads_) * 2) {}

StatusOr<TraceFile> FileReader::Read(const std::string& path) {
  TraceFile t;
  t.path = path;
  MappedFile file;
  NCCLRR_RETURN_IF_ERROR(file.Open(path, &file_bytes_));
  FrameWalk w(path, file.view(), &t.warnings);
  NCCLRR_RETURN_IF_ERROR(ParseHeader(path, w.f, &t.header, &w.off));
  // Room for the calls the footer counts (a count the file could not hold is ignored).
  if (const std::optional<FooterData> footer = LastFooter(w.f, w.off);
      footer && footer->calls <= w.f.size() * 2)
    t.calls.reserve(footer->calls);
  // A frame that fails its check ends a round; the walk goes on from it as a reader one frame
  // at a time would (resynchronising, or stopping at a torn tail).
  bool in_flight = false;
  while (w.off < w.f.size()) {
    const std::vector<size_t> offs = PlausibleFrames(w.f, w.off, slots_.size());
    ParallelFor(offs.size(), threads_, [&](size_t i) { slots_[i].Decode(w.f, offs[i]); });
    size_t i = 0;
    for (; i < offs.size() && slots_[i].check == FrameCheck::kOk; ++i) {
      Slot& s = slots_[i];
      s.MoveInto(&t);
      in_flight = in_flight || s.in_flight;
      if (s.columns)
        t.calls.AppendColumns(s.columns, s.ncalls, s.ncalls, threads_);
      else
        t.calls.Append(s.calls, s.ncalls, threads_);
      ++w.frames;
      w.off += s.bytes;
    }
    if (i < offs.size()) {
      if (!w.SkipBadFrame(slots_[i].check)) break;
    } else if (offs.empty()) {
      FrameHeader h;
      const uint8_t* payload = nullptr;
      size_t psize = 0, bytes = 0;
      if (!w.SkipBadFrame(CheckFrame(w.f, w.off, &h, w.scratch, &payload, &psize, &bytes))) break;
    }
  }
  w.Report(&t);
  if (in_flight) DropSupersededInFlight(&t);
  t.calls.Seal();
  FinishReading(path, &t);
  return t;
}

}  // namespace ncclrr::internal
