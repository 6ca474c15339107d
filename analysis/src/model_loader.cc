// TraceModel::Load: reads the files of a trace directory on a few threads (decompression and
// verification dominate), then builds the model.
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <mutex>
#include <thread>

#include "ncclrr/analysis/model.h"
#include "ncclrr/format.h"

namespace ncclrr::analysis {

StatusOr<TraceModel> TraceModel::Load(const std::string& path, const LoadOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {  // a single file, or a path that does not exist
    auto d = LoadTraceDir(path);
    if (!d.ok()) return d.status();
    return Build(std::move(d.value()));
  }
  std::vector<std::string> paths;
  for (const auto& e : fs::directory_iterator(path, ec))
    if (e.is_regular_file() && e.path().extension() == format::kFileSuffix)
      paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  if (paths.empty())
    return NotFound("no trace files (*.ncclrr) in '" + path +
                    "'; expected a directory written by `ncclrr record -o DIR`");
  std::vector<std::optional<StatusOr<TraceFile>>> read(paths.size());
  std::atomic<size_t> next{0}, done{0};
  std::mutex progress_mu;
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < paths.size();) {
      read[i].emplace(ReadTraceFile(paths[i]));
      const size_t n = done.fetch_add(1) + 1;
      if (options.progress && (n % 16 == 0 || n == paths.size())) {
        std::lock_guard<std::mutex> lock(progress_mu);
        options.progress("read " + std::to_string(n) + " of " + std::to_string(paths.size()) +
                         " trace files");
      }
    }
  };
  const int threads =
      std::clamp(options.threads, 1, static_cast<int>(std::min<size_t>(paths.size(), 64)));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();

  TraceDir d;
  d.dir = path;
  for (auto& r : read) {
    if (!r->ok()) {
      d.warnings.push_back(r->status().message());
      continue;
    }
    d.files.push_back(std::move(r->value()));
  }
  if (d.files.empty())
    return Corrupt("none of the " + std::to_string(paths.size()) + " trace files in '" + path +
                   "' could be read: " + d.warnings.front());
  return Build(std::move(d));
}

}  // namespace ncclrr::analysis
