// libFuzzer target: arbitrary bytes as a PyTorch Flight Recorder dump (pickle or JSON, chosen by
// the first byte as the importer does). The readers must return a Status or a dump, never crash,
// hang or leak; a parsed dump's entries are then shaped into calls as the importer would.
// Seeds: scripts/fuzz.sh copies the dumps of tests/data/fr into the corpus.
#include <cstdint>
#include <string_view>

#include "import/fr_calls.h"
#include "import/fr_dump.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto dump = ncclrr::fr::ParseDump(bytes);
  if (!dump.ok()) return 0;
  volatile uint64_t sink = 0;
  for (const ncclrr::fr::Entry& e : dump->entries) {
    const ncclrr::fr::CallShape s = ncclrr::fr::ShapeOf(e, 2);
    sink = sink + s.count + ncclrr::fr::CallSiteText(e.frames).size();
  }
  (void)sink;
  return 0;
}
