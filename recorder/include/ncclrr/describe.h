#pragma once
// Human-readable text for records, shared by `ncclrr dump`, `check` and the viewer's details.
#include <cstddef>
#include <string>
#include <string_view>

#include "ncclrr/records.h"
#include "ncclrr/trace_data.h"

namespace ncclrr {

std::string Hex64(uint64_t v);  // "0x%016llx"
// `text` with control bytes (and DEL) written as \xNN: strings from a trace (names, notes,
// hosts, paths) never reach a terminal as escape sequences.
std::string Printable(std::string_view text);
// Length (1-4) of the well-formed UTF-8 sequence that starts at text[i], or 0 when none does
// (a path in another encoding, a damaged trace).
size_t Utf8SequenceAt(std::string_view text, size_t i);
// For JSON writers, at a byte >= 0x80: appends the UTF-8 sequence at text[i], or "\ufffd" when
// none starts there, so the output stays valid UTF-8. Returns the bytes consumed (at least 1).
size_t AppendJsonUtf8(std::string_view text, size_t i, std::string* out);
// One line in the spirit of NCCL's COLL log: "AllReduce: opCount 3 sendbuff 0x.. ...".
// `stable` leaves out addresses, thread ids and times (golden tests).
std::string DescribeCall(const CallRecord& c, bool stable);
std::string DescribeComm(const CommRecord& c, const std::string& name, bool stable);
// "sketch send_before first 0 count 1024 float32 dots [1.5 0 ...] sumsq 9 nan 1 ... samples 256
// [0.25 0.5 ...]": the first dots and samples, enough to compare ranks by eye.
std::string DescribeSketch(const SketchData& s);
// One Python frame of a call site, "train.py:214 in Trainer.step": the file's base name, the
// line and the function. A site joins its frames with '<', so the '<' and '>' of Python's own
// names (<module>, <lambda>, f.<locals>.g, <string>) are written as U+2039 and U+203A.
std::string SiteFrame(std::string_view path, int line, std::string_view function);
const char* NcclResultName(int result);
const char* CommOriginName(uint8_t origin);

}  // namespace ncclrr
