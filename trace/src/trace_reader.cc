#include "ncclrr/trace/trace_reader.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "batch_encoder.h"
#include "file_reader.h"
#include "frame_reader.h"
#include "frame_walk.h"
#include "ncclrr/base/parallel_for.h"
#include "ncclrr/schema/trace_generated.h"
#include "ncclrr/trace/format.h"

namespace ncclrr {

Status ForEachBatch(const std::string& path, HeaderData* header,
                    const std::function<void(const fb::Batch&)>& on_batch,
                    std::vector<std::string>* warnings, TraceFile* stats) {
  return internal::ForEachFrame(
      path, header, [&](const fb::Batch& b, size_t) { on_batch(b); }, warnings, stats);
}

uint64_t TraceFile::DroppedRecords() const {
  if (footer) return footer->dropped;
  std::unordered_map<uint32_t, uint64_t> last;
  for (const auto& d : drops) last[d.tid] = std::max(last[d.tid], d.dropped);
  uint64_t sum = 0;
  for (const auto& [tid, n] : last) sum += n;
  return sum;
}

std::string TraceFile::String(uint32_t id) const {
  auto it = strings.find(id);
  return it == strings.end() ? std::string() : it->second;
}

StatusOr<TraceFile> ReadTraceFile(const std::string& path, int threads) {
  return internal::FileReader(threads).Read(path);
}

StatusOr<FileSummary> ReadFileSummary(const std::string& path, uint64_t scan_bytes) {
  FileSummary s;
  s.path = path;
  {
    // Its footer is all that is read of a closed file: a small one (a ring dump of a large job,
    // thousands of them) is read whole, cheaper than mapping and unmapping it.
    constexpr size_t kSmallFile = 64 << 10;
    std::vector<uint8_t> small;
    internal::MappedFile file;
    NCCLRR_RETURN_IF_ERROR(file.Open(path, &small, kSmallFile));
    size_t start = 0;
    NCCLRR_RETURN_IF_ERROR(internal::ParseHeader(path, file.view(), &s.header, &start));
    s.file_bytes = file.size();
    if (auto footer = internal::LastFooter(file.view(), start)) {
      s.has_footer = s.counted = true;
      s.totals = std::move(*footer);
      if (!s.totals.summary) s.totals.summary.emplace();  // a 1.1 file: no more than its counts
      return s;
    }
  }
  if (s.file_bytes > scan_bytes) return s;
  // No footer: count what the file holds, one batch at a time.
  FooterSummary& sum = s.totals.summary.emplace();
  std::unordered_set<uint64_t> captured, in_flight;
  std::unordered_map<uint32_t, uint64_t> drops;  // per thread: the last count (DroppedRecords)
  std::vector<std::string> warnings;
  const Status st = ForEachBatch(
      path, &s.header,
      [&](const fb::Batch& b) {
        TraceFile one;
        std::vector<CallRecord> calls;
        internal::CollectBatch(b, &one, &calls);
        s.totals.calls += internal::AddToFooterSummary(
            one.comms, calls, one.gpu_times, one.captures, one.notes, &sum, &captured, &in_flight);
        for (const DropCountRecord& d : one.drops) drops[d.tid] = std::max(drops[d.tid], d.dropped);
      },
      &warnings);
  if (!st.ok()) return st;
  for (const auto& [tid, n] : drops) s.totals.dropped += n;
  s.counted = true;
  return s;
}

StatusOr<std::vector<std::string>> ListTraceFiles(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> files;
  if (fs::is_regular_file(path, ec)) {
    files.push_back(path);
  } else if (fs::is_directory(path, ec)) {
    for (const auto& e : fs::directory_iterator(path, ec))
      if (e.is_regular_file() && e.path().extension() == format::kFileSuffix)
        files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    if (files.empty())
      return NotFound("no trace files (*.ncclrr) in '" + path +
                      "'; expected a directory written by `ncclrr record -o DIR`");
  } else if (fs::exists(path, ec)) {  // a device (/dev/null), a pipe, a socket
    return InvalidArgument("'" + path +
                           "' is not a trace: it is neither a directory nor a regular file; "
                           "expected a trace directory written by `ncclrr record -o DIR` or a "
                           ".ncclrr file");
  } else {
    return NotFound("'" + path +
                    "' does not exist; expected a trace directory written by "
                    "`ncclrr record -o DIR` or a .ncclrr file");
  }
  return files;
}

std::vector<StatusOr<TraceFile>> ReadTraceFiles(const std::vector<std::string>& files,
                                                const LoadDirOptions& options) {
  std::vector<std::optional<StatusOr<TraceFile>>> read(files.size());
  std::atomic<size_t> done{0};
  std::mutex progress_mu;
  // Files on as many threads as there are files; the threads left over decode frames within a
  // file (a trace of few large files).
  const int threads = std::clamp(options.threads, 1, 256);
  const int outer = static_cast<int>(std::max<size_t>(1, std::min<size_t>(files.size(), threads)));
  const int inner = std::max(1, threads / outer);
  std::atomic<size_t> next{0};
  ParallelFor(outer, outer, [&](size_t) {
    internal::FileReader reader(inner);  // one a thread: its buffers serve file after file
    for (size_t i; (i = next.fetch_add(1)) < files.size();) {
      read[i].emplace(reader.Read(files[i]));
      const size_t n = done.fetch_add(1) + 1;
      if (options.progress && (n % 16 == 0 || n == files.size())) {
        std::lock_guard<std::mutex> lock(progress_mu);
        options.progress("read " + std::to_string(n) + " of " + std::to_string(files.size()) +
                         " trace files");
      }
    }
  });
  std::vector<StatusOr<TraceFile>> out;
  for (auto& r : read) out.push_back(std::move(*r));
  return out;
}

StatusOr<TraceDir> LoadTraceDir(const std::string& path, const LoadDirOptions& options) {
  auto listed = ListTraceFiles(path);
  if (!listed.ok()) return listed.status();
  return AssembleTraceDir(path, ReadTraceFiles(listed.value(), options));
}

StatusOr<TraceDir> AssembleTraceDir(const std::string& path,
                                    std::vector<StatusOr<TraceFile>> read) {
  TraceDir d;
  d.dir = path;
  for (auto& t : read) {
    if (!t.ok()) {
      if (read.size() == 1) return t.status();
      d.warnings.push_back(t.status().message());
      continue;
    }
    d.files.push_back(std::move(t.value()));
  }
  if (d.files.empty())
    return Corrupt("none of the " + std::to_string(read.size()) + " trace files in '" + path +
                   "' could be read: " + d.warnings.front());
  return d;
}

const char* RouteName(Route r) {
  switch (r) {
    case Route::kPreload:
      return "preload";
    case Route::kSonameShim:
      return "soname-shim";
    case Route::kProfilerPlugin:
      return "profiler-plugin";
    case Route::kGenerator:
      return "generator";
    case Route::kNcclLog:
      return "nccl-log";
    case Route::kFlightRecorder:
      return "flight-recorder";
    case Route::kUnknown:
      break;
  }
  return "unknown";
}

const char* SketchWhichName(SketchWhich w) {
  static constexpr const char* kNames[] = {"send_before", "recv_after", "send_after_sample",
                                           "send_before_sample", "scalar"};
  const auto i = static_cast<size_t>(w);
  return i < std::size(kNames) ? kNames[i] : "unknown";
}

}  // namespace ncclrr
