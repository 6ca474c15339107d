// TraceModel::Load: reads the files of a trace directory on a few threads (decompression and
// verification dominate), then builds the model.
#include "ncclrr/analysis/model.h"
#include "ncclrr/trace/trace_reader.h"

namespace ncclrr::analysis {

StatusOr<TraceModel> TraceModel::Load(const std::string& path, const LoadOptions& options) {
  LoadDirOptions read;
  read.threads = options.threads;
  read.progress = options.progress;
  auto d = LoadTraceDir(path, read);
  if (!d.ok()) return d.status();
  return Build(std::move(d.value()), options.threads);
}

}  // namespace ncclrr::analysis
