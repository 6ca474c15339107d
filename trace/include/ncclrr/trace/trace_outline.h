#pragma once
// Outlines of trace files too large to hold: one pass over a file keeps every record but the
// calls, and where each frame of calls lies (its offset, its first call, its times), handing
// the calls to the caller frame by frame as they are decoded. The calls of chosen frames are
// read back later from the outline alone, numbered as ReadTraceFile numbers them, so that a
// viewer shows any stretch of a trace of 10^9 calls while holding only that stretch.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ncclrr/base/status.h"
#include "ncclrr/trace/records.h"
#include "ncclrr/trace/trace_reader.h"

namespace ncclrr {

// A frame that holds calls. Rows count every call record in file order, superseded in-flight
// copies included; times are the file's monotonic ns.
struct FrameSpan {
  uint64_t offset = 0;     // of the frame in the file
  uint64_t first_row = 0;  // row of its first call
  uint32_t calls = 0;
  int64_t first_ns = 0;  // earliest enter of its calls
  int64_t last_ns = 0;   // latest enter or exit of its calls
};

struct TraceOutline {
  TraceFile records;              // every record but the calls (records.calls is empty)
  std::vector<FrameSpan> frames;  // frames holding calls, in file order
  // Rows ReadTraceFile leaves out, ascending: a call written while in flight and again when it
  // returned is kept once, as returned (the interposer writes the in-flight copy first).
  std::vector<uint64_t> dropped;
  uint64_t rows = 0;

  uint64_t calls() const { return rows - dropped.size(); }
  // The index ReadTraceFile gives the call at `row` (not a dropped one).
  uint64_t IndexOfRow(uint64_t row) const;
  // The row of the call ReadTraceFile numbers `index`.
  uint64_t RowOfIndex(uint64_t index) const;
  // The frame holding `row`, or frames.size().
  size_t FrameOfRow(uint64_t row) const;
};

// Sees the calls of one frame as they are decoded: `first_row` is the row of calls[0]; the
// times are clamped as ReadTraceFile clamps them.
using OutlineCallsFn = std::function<void(const CallRecord* calls, size_t n, uint64_t first_row)>;

// One pass over `path`: what ReadTraceFile would find but the calls, and the frames' spans.
// The same errors as ReadTraceFile for a file that is not a trace.
StatusOr<TraceOutline> OutlineTraceFile(const std::string& path,
                                        const OutlineCallsFn& on_calls = {});

// The calls of `frames` (indices into outline.frames) with each one's ReadTraceFile index,
// superseded in-flight copies left out. Fails when the file no longer holds those frames.
StatusOr<std::vector<std::pair<uint64_t, CallRecord>>> ReadOutlinedCalls(
    const std::string& path, const TraceOutline& outline, const std::vector<size_t>& frames);

}  // namespace ncclrr
