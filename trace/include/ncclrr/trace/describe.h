#pragma once
// Human-readable text for records, shared by `ncclrr dump`, `check` and the viewer's details.
#include <cstddef>
#include <string>
#include <string_view>

#include "ncclrr/base/text.h"
#include "ncclrr/trace/records.h"
#include "ncclrr/trace/trace_data.h"

namespace ncclrr {

std::string Hex64(uint64_t v);  // "0x%016llx"
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
