#pragma once
// Reading the side files of `ncclrr record --capture` (<host>-<pid>.capture beside the .ncclrr
// files): the buffer a CaptureRef points at. Shared by `ncclrr check` and `ncclrr replay --data
// captured`, so both say the same thing about a missing or truncated file.
#include <string>

#include "ncclrr/base/status.h"
#include "ncclrr/trace/trace_data.h"

namespace ncclrr {

// Whether a CaptureRef's file is a bare name (the only kind the recorder writes): no '/', not
// "." or "..". Others are refused, so a crafted trace cannot make a reader open files elsewhere.
bool CaptureFileNameIsSafe(const std::string& name);

// The file a CaptureRef names, in the trace directory `dir`.
std::string CaptureFilePath(const std::string& dir, const CaptureRefData& ref);

// The referenced bytes. Errors name the file, what was expected and what was found (missing,
// shorter than offset + bytes), and what to do.
StatusOr<std::string> ReadCapturedBuffer(const std::string& dir, const CaptureRefData& ref);

}  // namespace ncclrr
