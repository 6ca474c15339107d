#pragma once
// `record --capture BYTES --capture-filter F`: which calls' buffers are captured, and the byte
// budget. Parsed by the CLI (a clear usage error) and again by the preload from its environment
// (NCCLRR_CAPTURE_FILTER, NCCLRR_CAPTURE_BYTES), so both read the same syntax:
//
//   F := FIELD[,FIELD...]        FIELD := comm=HEX | seq=LIST | op=NAMES | step=LIST
//   LIST := N | A-B, several separated by commas: seq=1,3-7 (a bare item continues the field)
//   NAMES: API names (allreduce, broadcast, send, ...) and/or reduction ops (sum, prod, max, min,
//          avg, premulsum), case-insensitive, several separated by commas: op=allreduce,max
//
// A call is captured when it matches every field given: its communicator's commHash starts with
// the hex prefix (0x optional), its seq (collectives) or per-peer index (send/recv) lies in a
// range, its API is one of the API names given (if any) and its reduction one of the ops given
// (if any), and its step lies in a range. A step is counted per communicator: a new one begins
// each time a rank issues again the collective it issued first on that communicator (same API,
// count, datatype and buffers): the first collective of a training step.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ncclrr/base/status.h"
#include "ncclrr/trace/records.h"

namespace ncclrr {

struct CaptureFilter {
  using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;  // inclusive
  std::string comm_prefix;   // lower-case hex digits, no 0x; empty: any communicator
  Ranges seqs;               // empty: any
  Ranges steps;              // empty: any
  std::vector<Api> apis;     // empty: any
  std::vector<int32_t> ops;  // built-in RedOp values, kNumBuiltinOps for PreMulSum; empty: any

  bool empty() const {
    return comm_prefix.empty() && seqs.empty() && steps.empty() && apis.empty() && ops.empty();
  }
  // Everything but the step (the caller counts steps).
  bool Matches(uint64_t comm_id, uint64_t seq, Api api, int32_t op, uint8_t flags) const;
  bool StepMatches(uint64_t step) const;
  bool NeedsSteps() const { return !steps.empty(); }
};

// The expected form, for error messages.
inline constexpr const char* kCaptureFilterForm =
    "comm=HEXPREFIX,seq=A-B,op=NAME,step=A-B (any of them, comma-separated; seq and step take "
    "numbers and ranges such as seq=3-7 or seq=1,3-7; op takes API or reduction names such as "
    "op=allreduce or op=max)";

StatusOr<CaptureFilter> ParseCaptureFilter(std::string_view text);

// "1048576", "64K", "512M", "4G", "1T" (powers of 1024; a trailing B or iB is allowed).
StatusOr<uint64_t> ParseByteCount(std::string_view text);

}  // namespace ncclrr
