#pragma once
// Reading frames from bytes: the file header, one frame at a time (checksum, decompression,
// un-transposition, FlatBuffers verification), resynchronisation after a corrupt frame, and the
// collection of a batch's records. Shared by the whole-file reader (trace_reader.cc) and the
// follower of growing files (trace_follower.cc).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "frame_io.h"
#include "ncclrr/base/status.h"
#include "ncclrr/trace/trace_data.h"
#include "ncclrr/trace/trace_reader.h"

namespace ncclrr {
namespace fb {
struct Batch;
struct Footer;
}  // namespace fb
namespace internal {

struct ByteView {
  const uint8_t* bytes = nullptr;
  size_t length = 0;
  const uint8_t* data() const { return bytes; }
  size_t size() const { return length; }
};

// The preamble and header of `f` (named `path` in messages); `end` is where frames start.
Status ParseHeader(const std::string& path, const ByteView& f, HeaderData* out, size_t* end);

enum class FrameCheck { kOk, kTorn, kBad };
// Checks the frame at `off`; on success sets the decoded payload (which may live in `scratch`,
// two buffers) and the frame's size in the file. With `columns`, a transposed region is left in
// columns (its values, no longer deltas) and described there, for a reader that packs straight
// from columns; otherwise (and always without it) the region is rows again.
FrameCheck CheckFrame(const ByteView& f, size_t off, FrameHeader* h, std::vector<uint8_t>* scratch,
                      const uint8_t** payload, size_t* psize, size_t* frame_bytes,
                      TransposedRegion* columns = nullptr);

// The next offset after `from` where a valid frame starts, or f.size().
size_t Resync(const ByteView& f, size_t from, std::vector<uint8_t>* scratch);

// A verified footer (its 1.2 summary when it has one).
FooterData ReadFooter(const fb::Footer& f);

// Timestamps are nanoseconds since boot or since 1970: a value outside [0, 2^62] (146 years)
// is damage, and sums or differences of such values would overflow. Clamped and counted.
inline bool TimeSane(int64_t v) { return v >= 0 && v <= (int64_t{1} << 62); }
inline int ClampTime(int64_t* v) {
  if (TimeSane(*v)) return 0;
  *v = *v < 0 ? 0 : int64_t{1} << 62;
  return 1;
}
// Clamps the calls' enter and exit times; returns how many were clamped.
uint64_t ClampCallTimes(CallRecord* calls, size_t n);
bool CallTimesSane(const CallRecord* calls, size_t n);

// Appends a verified batch's records to `t`, its calls to `calls` (the caller packs them; null:
// the caller takes them from the batch itself).
void CollectBatch(const fb::Batch& b, TraceFile* t, std::vector<CallRecord>* calls);
// The same, with the calls appended to t->calls.
void CollectBatch(const fb::Batch& b, TraceFile* t);

}  // namespace internal
}  // namespace ncclrr
