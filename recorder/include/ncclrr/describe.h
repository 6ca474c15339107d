#pragma once
// Human-readable text for records, shared by `ncclrr dump`, `check` and the viewer's details.
#include <string>
#include <string_view>

#include "ncclrr/records.h"
#include "ncclrr/trace_data.h"

namespace ncclrr {

std::string Hex64(uint64_t v);  // "0x%016llx"
// `text` with control bytes (and DEL) written as \xNN: strings from a trace (names, notes,
// hosts, paths) never reach a terminal as escape sequences.
std::string Printable(std::string_view text);
// One line in the spirit of NCCL's COLL log: "AllReduce: opCount 3 sendbuff 0x.. ...".
// `stable` leaves out addresses, thread ids and times (golden tests).
std::string DescribeCall(const CallRecord& c, bool stable);
std::string DescribeComm(const CommRecord& c, const std::string& name, bool stable);
// "sketch send_before first 0 count 1024 float32 dots [1.5 0 ...] sumsq 9 nan 1 ... samples 256
// [0.25 0.5 ...]": the first dots and samples, enough to compare ranks by eye.
std::string DescribeSketch(const SketchData& s);
const char* NcclResultName(int result);
const char* CommOriginName(uint8_t origin);

}  // namespace ncclrr
