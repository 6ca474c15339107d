// libFuzzer target: arbitrary bytes as an NCCL/RCCL console log. Reading lines, inferring
// communicators and ranks must return a result (calls skipped, warnings), never crash, hang,
// leak or take time out of proportion to the input. Seeds: scripts/fuzz.sh copies the real
// logs of tests/data/nccl-logs into the corpus.
#include <cstdint>
#include <string>

#include "ncclrr/analysis/nccl_log_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Two "files": the same bytes split at a point the first byte chooses, as a job's logs are
  // often several files whose processes share communicators.
  const std::string text(reinterpret_cast<const char*>(data), size);
  const size_t cut = size > 0 ? (data[0] * size) / 256 : 0;
  auto r = ncclrr::DescribeNcclLogs({text.substr(0, cut), text.substr(cut)});
  volatile size_t sink = r.calls + r.notes.size() + r.warnings.size();
  (void)sink;
  return 0;
}
