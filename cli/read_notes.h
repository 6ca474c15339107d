#pragma once
// Notes on stderr about what reading a trace left out: files that could not be read, and files
// that are torn, were not closed or hold corrupt frames. Commands whose output is data (dump,
// export) write these to stderr, so a user who pipes or opens the output still learns that the
// trace is incomplete.
#include "ncclrr/trace/trace_reader.h"

namespace ncclrr::cli {

// "ncclrr VERB: note: ..." per problem; nothing for a complete trace.
void PrintReadNotes(const char* verb, const TraceDir& dir);

}  // namespace ncclrr::cli
