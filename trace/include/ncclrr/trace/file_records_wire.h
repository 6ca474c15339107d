#pragma once
// A read file's records but its calls, as bytes for another process of the same build: how the
// members of a spread check (`check --mpi`) learn the communicators, clocks, notes and sketches of
// the files other members read, without reading those files again.
#include <cstddef>
#include <string>

#include "ncclrr/trace/trace_reader.h"

namespace ncclrr {

// Appends everything of `t` but its calls to `out`.
void SaveRecordsButCalls(const TraceFile& t, std::string* out);
// Reads what SaveRecordsButCalls wrote at `data` (at most n bytes) into `t` (calls left empty),
// setting `*used`; false when the bytes are not such records.
bool LoadRecordsButCalls(const char* data, size_t n, size_t* used, TraceFile* t);

}  // namespace ncclrr
