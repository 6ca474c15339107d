#include "ncclrr/trace/trace_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "batch_encoder.h"
#include "frame_reader.h"
#include "ncclrr/base/parallel_for.h"
#include "ncclrr/schema/trace_generated.h"
#include "ncclrr/trace/format.h"

namespace ncclrr {
namespace {

// Read-only view of a whole file.
class MappedFile {
 public:
  ~MappedFile() {
    if (data_ && data_ != MAP_FAILED) munmap(data_, size_);
  }
  Status Open(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return IoError("cannot open '" + path + "': " + std::strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      close(fd);
      return InvalidArgument("'" + path + "' is not a regular file");
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) data_ = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (data_ == MAP_FAILED) return IoError("cannot map '" + path + "': " + std::strerror(errno));
    return Status::Ok();
  }
  const uint8_t* data() const { return static_cast<const uint8_t*>(data_); }
  size_t size() const { return size_; }
  internal::ByteView view() const { return {data(), size_}; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

Status ForEachBatch(const std::string& path, HeaderData* header,
                    const std::function<void(const fb::Batch&)>& on_batch,
                    std::vector<std::string>* warnings, TraceFile* stats) {
  using internal::FrameCheck;
  MappedFile file;
  NCCLRR_RETURN_IF_ERROR(file.Open(path));
  const internal::ByteView f = file.view();
  size_t off = 0;
  NCCLRR_RETURN_IF_ERROR(internal::ParseHeader(path, f, header, &off));
  std::vector<uint8_t> scratch[2];  // decompressed payload, un-transposed payload
  uint64_t frames = 0, bad = 0;
  bool torn = false;
  while (off < f.size()) {
    internal::FrameHeader h;
    const uint8_t* payload = nullptr;
    size_t psize = 0, frame_bytes = 0;
    const FrameCheck c = internal::CheckFrame(f, off, &h, scratch, &payload, &psize, &frame_bytes);
    if (c == FrameCheck::kOk) {
      on_batch(*flatbuffers::GetRoot<fb::Batch>(payload));
      ++frames;
      off += frame_bytes;
      continue;
    }
    const size_t next = internal::Resync(f, off + 1, scratch);
    if (c == FrameCheck::kTorn && next == f.size()) {
      torn = true;
      warnings->push_back(path + ": torn tail at byte offset " + std::to_string(off) + " of " +
                          std::to_string(f.size()) +
                          " (the recording process stopped mid-write); "
                          "kept the " +
                          std::to_string(frames) + " complete frames before it");
      break;
    }
    ++bad;
    warnings->push_back(
        path + ": corrupt frame at byte offset " + std::to_string(off) + "; " +
        (next < f.size()
             ? "skipped " + std::to_string(next - off) + " bytes to the next valid frame"
             : "nothing readable after it (" + std::to_string(f.size() - off) + " bytes lost)"));
    off = next;
  }
  if (stats) {
    stats->frames = frames;
    stats->bad_frames = bad;
    stats->torn = torn;
    stats->file_bytes = f.size();
  }
  return Status::Ok();
}

namespace {

// The footer in the last frame of `f` (frames start at `start`), when there is one: a frame that
// ends where the file does, found by looking back at most 1 MiB for a frame header.
std::optional<FooterData> LastFooter(const internal::ByteView& f, size_t start) {
  constexpr size_t kLookBack = 1u << 20;
  std::vector<uint8_t> scratch[2];
  if (f.size() < start + format::kFrameHeaderSize) return std::nullopt;
  const size_t lowest = f.size() - start > kLookBack ? f.size() - kLookBack : start;
  for (size_t off = f.size() - format::kFrameHeaderSize + 1; off-- > lowest;) {
    uint32_t magic;
    std::memcpy(&magic, f.data() + off, sizeof magic);
    if (magic != format::kFrameMagic) continue;
    internal::FrameHeader h;
    std::memcpy(&h, f.data() + off, sizeof h);  // a frame that would not end at the file's end
    const size_t ext = (h.flags & format::kFlagTransposed) ? format::kFrameExtensionSize : 0;
    if (off + sizeof h + ext + h.stored_size != f.size()) continue;  // is not checked in full
    const uint8_t* payload = nullptr;
    size_t psize = 0, frame_bytes = 0;
    if (internal::CheckFrame(f, off, &h, scratch, &payload, &psize, &frame_bytes) !=
            internal::FrameCheck::kOk ||
        off + frame_bytes != f.size())
      continue;
    const fb::Batch* b = flatbuffers::GetRoot<fb::Batch>(payload);
    if (b->footer() == nullptr) return std::nullopt;
    return internal::ReadFooter(*b->footer());
  }
  return std::nullopt;
}

// A call written while in flight and written again when it returned is kept once, as returned.
void DropSupersededInFlight(TraceFile* t) {
  auto in_flight = [](const CallRecord& c) { return (c.flags & call_flags::kInFlight) != 0; };
  if (std::none_of(t->calls.begin(), t->calls.end(), in_flight)) return;
  std::unordered_set<uint64_t> seen;
  for (const CallRecord& c : t->calls)
    if (!in_flight(c)) seen.insert(c.uid);
  std::erase_if(t->calls,
                [&](const CallRecord& c) { return in_flight(c) && !seen.insert(c.uid).second; });
}

}  // namespace

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

namespace {
// Room for the calls the footer counts, so the call vector is allocated once: growing it by
// doubling re-faults and copies every record, most of what loading a large file cost
// (bench-analysis). A footer whose count the file could not hold is ignored.
void ReserveCalls(const std::string& path, TraceFile* t) {
  MappedFile file;
  HeaderData header;
  size_t start = 0;
  if (!file.Open(path).ok() || !internal::ParseHeader(path, file.view(), &header, &start).ok())
    return;
  const std::optional<FooterData> footer = LastFooter(file.view(), start);
  if (!footer || footer->calls > file.size() * 2) return;
  try {
    t->calls.reserve(footer->calls);
  } catch (const std::exception&) {  // no room: grow as the records come
  }
}
}  // namespace

StatusOr<TraceFile> ReadTraceFile(const std::string& path) {
  TraceFile t;
  t.path = path;
  ReserveCalls(path, &t);
  NCCLRR_RETURN_IF_ERROR(ForEachBatch(
      path, &t.header, [&](const fb::Batch& b) { internal::CollectBatch(b, &t); }, &t.warnings,
      &t));
  if (t.nccl_version == 0) t.nccl_version = t.header.nccl_version;
  for (int64_t* v : {&t.header.start_mono_ns, &t.header.start_real_ns})
    if (*v < 0 || *v > (int64_t{1} << 62)) {
      *v = 0;
      ++t.clamped_times;
    }
  if (t.clamped_times > 0)
    t.warnings.push_back(path + ": " + std::to_string(t.clamped_times) +
                         " timestamp(s) outside any clock's range were clamped: the file is "
                         "damaged, and times in it are not to be trusted");
  DropSupersededInFlight(&t);
  if (!t.footer && !t.torn)
    t.warnings.push_back(path +
                         ": no closing footer: the recording process did not finish "
                         "writing (killed, or still running); calls after the last flush are "
                         "missing");
  return t;
}

StatusOr<FileSummary> ReadFileSummary(const std::string& path) {
  FileSummary s;
  s.path = path;
  {
    MappedFile file;
    NCCLRR_RETURN_IF_ERROR(file.Open(path));
    size_t start = 0;
    NCCLRR_RETURN_IF_ERROR(internal::ParseHeader(path, file.view(), &s.header, &start));
    s.file_bytes = file.size();
    if (auto footer = LastFooter(file.view(), start)) {
      s.has_footer = s.counted = true;
      s.totals = std::move(*footer);
      if (!s.totals.summary) s.totals.summary.emplace();  // a 1.1 file: no more than its counts
      return s;
    }
  }
  if (s.file_bytes > FileSummary::kScanBytes) return s;
  // No footer: count what the file holds, one batch at a time.
  FooterSummary& sum = s.totals.summary.emplace();
  std::unordered_set<uint64_t> captured, in_flight;
  std::unordered_map<uint32_t, uint64_t> drops;  // per thread: the last count (DroppedRecords)
  std::vector<std::string> warnings;
  const Status st = ForEachBatch(
      path, &s.header,
      [&](const fb::Batch& b) {
        TraceFile one;
        internal::CollectBatch(b, &one);
        s.totals.calls +=
            internal::AddToFooterSummary(one.comms, one.calls, one.gpu_times, one.captures,
                                         one.notes, &sum, &captured, &in_flight);
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

StatusOr<TraceDir> LoadTraceDir(const std::string& path, const LoadDirOptions& options) {
  auto listed = ListTraceFiles(path);
  if (!listed.ok()) return listed.status();
  const std::vector<std::string>& files = listed.value();
  std::vector<std::optional<StatusOr<TraceFile>>> read(files.size());
  std::atomic<size_t> done{0};
  std::mutex progress_mu;
  ParallelFor(files.size(), std::min(options.threads, 64), [&](size_t i) {
    read[i].emplace(ReadTraceFile(files[i]));
    const size_t n = done.fetch_add(1) + 1;
    if (options.progress && (n % 16 == 0 || n == files.size())) {
      std::lock_guard<std::mutex> lock(progress_mu);
      options.progress("read " + std::to_string(n) + " of " + std::to_string(files.size()) +
                       " trace files");
    }
  });
  TraceDir d;
  d.dir = path;
  for (auto& t : read) {
    if (!t->ok()) {
      if (files.size() == 1) return t->status();
      d.warnings.push_back(t->status().message());
      continue;
    }
    d.files.push_back(std::move(t->value()));
  }
  if (d.files.empty())
    return Corrupt("none of the " + std::to_string(files.size()) + " trace files in '" + path +
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
