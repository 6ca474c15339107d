// libFuzzer target: arbitrary bytes as a trace file. The reader must return a Status or a
// TraceFile with warnings, never crash, hang or leak. Seeds: scripts/fuzz.sh writes a few real
// traces into the corpus first.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "ncclrr/trace/trace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/ncclrr-fuzz-" + std::to_string(getpid()) + ".ncclrr";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  auto t = ncclrr::ReadTraceFile(path);
  if (t.ok()) {
    volatile size_t sink = t->calls.size() + t->warnings.size();
    (void)sink;
  }
  return 0;
}
