#include "read_notes.h"

#include <cstdio>

#include "ncclrr/trace/describe.h"

namespace ncclrr::cli {

void PrintReadNotes(const char* verb, const TraceDir& dir) {
  for (const std::string& w : dir.warnings)
    std::fprintf(stderr, "ncclrr %s: note: a trace file could not be read and is left out: %s\n",
                 verb, Printable(w).c_str());
  for (const TraceFile& f : dir.files)
    for (const std::string& w : f.warnings)
      std::fprintf(stderr, "ncclrr %s: note: the trace is incomplete: %s\n", verb,
                   Printable(w).c_str());
}

}  // namespace ncclrr::cli
