#include "ncclrr/trace_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <unordered_set>

#include "frame_io.h"
#include "ncclrr/crc32c.h"
#include "ncclrr/format.h"
#include "ncclrr/schema/trace_generated.h"

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

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

std::string Str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

Status ParseHeader(const std::string& path, const MappedFile& f, HeaderData* out, size_t* end) {
  const uint8_t* p = f.data();
  const std::string expect =
      "; expected an ncclrr trace (a file written by `ncclrr record`, starting with the bytes "
      "\\x89NCCLRR)";
  if (f.size() == 0) return Corrupt("'" + path + "' is empty" + expect);
  if (std::memcmp(p, format::kFileMagic, std::min<size_t>(8, f.size())) != 0)
    return Corrupt("'" + path + "' is not an ncclrr trace: wrong magic bytes" + expect);
  if (f.size() < format::kFilePreambleSize)
    return Corrupt("'" + path + "' ends inside its file header (" + std::to_string(f.size()) +
                   " of at least 20 bytes); the recording process died before writing anything");
  out->format_major = Load<uint16_t>(p + 8);
  out->format_minor = Load<uint16_t>(p + 10);
  if (out->format_major > format::kMajor)
    return Unsupported("'" + path + "' uses trace format " + std::to_string(out->format_major) +
                       "." + std::to_string(out->format_minor) + ", newer than this ncclrr (" +
                       std::to_string(format::kMajor) + "." + std::to_string(format::kMinor) +
                       "); read it with a newer ncclrr");
  if (out->format_major == 0)
    return Corrupt("'" + path +
                   "' has trace format major version 0, which no ncclrr wrote; the "
                   "file is damaged");
  const uint32_t hsize = Load<uint32_t>(p + 12);
  const uint32_t hcrc = Load<uint32_t>(p + 16);
  if (f.size() < format::kFilePreambleSize + hsize)
    return Corrupt("'" + path + "' ends inside its file header (" + std::to_string(f.size()) +
                   " of " + std::to_string(format::kFilePreambleSize + hsize) + " bytes)");
  const uint8_t* hp = p + format::kFilePreambleSize;
  if (Crc32c(hp, hsize, Crc32c(p + 8, 8)) != hcrc)
    return Corrupt("'" + path + "': the file header fails its checksum; the file is damaged");
  flatbuffers::Verifier v(hp, hsize);
  if (!v.VerifyBuffer<fb::Header>(nullptr))
    return Corrupt("'" + path + "': the file header is malformed");
  const fb::Header* h = flatbuffers::GetRoot<fb::Header>(hp);
  out->schema_hash = Str(h->schema_hash());
  out->host = Str(h->host());
  out->pid = h->pid();
  out->ppid = h->ppid();
  out->start_mono_ns = h->start_mono_ns();
  out->start_real_ns = h->start_real_ns();
  out->nccl_version = h->nccl_version();
  out->cuda_version = h->cuda_version();
  out->route = static_cast<Route>(h->route());
  out->ring_mode = h->ring_mode();
  out->ring_capacity = h->ring_capacity();
  if (h->argv())
    for (const auto* a : *h->argv()) out->argv.push_back(Str(a));
  if (h->env())
    for (const auto* kv : *h->env()) out->env[Str(kv->key())] = Str(kv->value());
  *end = format::kFilePreambleSize + hsize;
  return Status::Ok();
}

// Checks the frame at `off`; on success sets the decoded payload.
enum class FrameCheck { kOk, kTorn, kBad };
FrameCheck CheckFrame(const MappedFile& f, size_t off, internal::FrameHeader* h,
                      std::vector<uint8_t>* scratch, const uint8_t** payload, size_t* psize,
                      size_t* frame_bytes) {
  if (off + format::kFrameHeaderSize > f.size()) return FrameCheck::kTorn;
  std::memcpy(h, f.data() + off, sizeof *h);
  if (h->magic != format::kFrameMagic || h->stored_size > format::kMaxFrameBytes ||
      h->raw_size > format::kMaxFrameBytes || (h->flags & ~format::kFlagTransposed) != 0)
    return FrameCheck::kBad;
  const size_t ext = (h->flags & format::kFlagTransposed) ? format::kFrameExtensionSize : 0;
  *frame_bytes = format::kFrameHeaderSize + ext + h->stored_size;
  if (off + *frame_bytes > f.size()) return FrameCheck::kTorn;
  const uint8_t* extension = f.data() + off + format::kFrameHeaderSize;
  const uint8_t* stored = extension + ext;
  if (internal::FrameCrc(*h, extension, stored) != h->crc) return FrameCheck::kBad;
  if (h->codec == static_cast<uint16_t>(format::Codec::kNone)) {
    *payload = stored;
    *psize = h->stored_size;
  } else if (h->codec == static_cast<uint16_t>(format::Codec::kZstd)) {
    scratch[0].resize(h->raw_size);
    const size_t n = ZSTD_decompress(scratch[0].data(), scratch[0].size(), stored, h->stored_size);
    if (ZSTD_isError(n) || n != h->raw_size) return FrameCheck::kBad;
    *payload = scratch[0].data();
    *psize = n;
  } else {
    return FrameCheck::kBad;
  }
  if (ext) {
    uint32_t e[3];
    std::memcpy(e, extension, sizeof e);
    const internal::TransposedRegion r{e[0], e[1], e[2]};
    if (r.row_words == 0 || size_t{r.offset} + r.bytes() > *psize) return FrameCheck::kBad;
    scratch[1].resize(*psize);
    uint8_t* out = scratch[1].data();
    std::memcpy(out, *payload, r.offset);
    internal::UntransposeDelta(*payload + r.offset, out + r.offset, r.rows, r.row_words);
    const size_t tail = r.offset + r.bytes();
    std::memcpy(out + tail, *payload + tail, *psize - tail);
    *payload = out;
  }
  flatbuffers::Verifier v(*payload, *psize, 64, 100'000'000);
  if (!v.VerifyBuffer<fb::Batch>(fb::BatchIdentifier())) return FrameCheck::kBad;
  return FrameCheck::kOk;
}

// Finds the next offset after `from` where a valid frame starts, or f.size().
size_t Resync(const MappedFile& f, size_t from, std::vector<uint8_t>* scratch) {
  // `scratch` is the reader's pair of buffers (see ForEachBatch).
  internal::FrameHeader h;
  const uint8_t* payload;
  size_t psize, frame_bytes;
  for (size_t off = from; off + format::kFrameHeaderSize <= f.size(); ++off) {
    if (Load<uint32_t>(f.data() + off) != format::kFrameMagic) continue;
    if (CheckFrame(f, off, &h, scratch, &payload, &psize, &frame_bytes) == FrameCheck::kOk)
      return off;
  }
  return f.size();
}

}  // namespace

Status ForEachBatch(const std::string& path, HeaderData* header,
                    const std::function<void(const fb::Batch&)>& on_batch,
                    std::vector<std::string>* warnings, TraceFile* stats) {
  MappedFile f;
  NCCLRR_RETURN_IF_ERROR(f.Open(path));
  size_t off = 0;
  NCCLRR_RETURN_IF_ERROR(ParseHeader(path, f, header, &off));
  std::vector<uint8_t> scratch[2];  // decompressed payload, un-transposed payload
  uint64_t frames = 0, bad = 0;
  bool torn = false;
  while (off < f.size()) {
    internal::FrameHeader h;
    const uint8_t* payload = nullptr;
    size_t psize = 0, frame_bytes = 0;
    const FrameCheck c = CheckFrame(f, off, &h, scratch, &payload, &psize, &frame_bytes);
    if (c == FrameCheck::kOk) {
      on_batch(*flatbuffers::GetRoot<fb::Batch>(payload));
      ++frames;
      off += frame_bytes;
      continue;
    }
    const size_t next = Resync(f, off + 1, scratch);
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

template <typename Pod, typename Fb>
void AppendStructs(const flatbuffers::Vector<const Fb*>* v, std::vector<Pod>* out) {
  static_assert(sizeof(Pod) == sizeof(Fb));
  if (!v || v->size() == 0) return;
  // One copy, no zero-fill: the layouts are identical (checked in tests/recorder).
  const Pod* first = reinterpret_cast<const Pod*>(v->Data());
  out->insert(out->end(), first, first + v->size());
}

void Collect(const fb::Batch& b, TraceFile* t) {
  if (b.strings())
    for (const auto* s : *b.strings()) t->strings[s->id()] = Str(s->text());
  AppendStructs(b.comms(), &t->comms);
  AppendStructs(b.calls(), &t->calls);
  AppendStructs(b.clocks(), &t->clocks);
  AppendStructs(b.drops(), &t->drops);
  AppendStructs(b.gpu_times(), &t->gpu_times);
  AppendStructs(b.graph_events(), &t->graph_events);
  AppendStructs(b.queries(), &t->queries);
  if (b.notes())
    for (const auto* n : *b.notes())
      t->notes.push_back({n->time_ns(), static_cast<NoteLevel>(n->level()), Str(n->text())});
  if (b.sketches()) {
    for (const auto* s : *b.sketches()) {
      SketchData d;
      d.call_uid = s->call_uid();
      d.which = static_cast<SketchWhich>(s->which());
      d.dtype = s->dtype();
      d.count = s->count();
      d.first = s->first();
      if (s->dots())
        for (size_t i = 0; i < std::min<size_t>(kSketchDots, s->dots()->size()); ++i)
          d.dots[i] = s->dots()->Get(i);
      d.sumsq = s->sumsq();
      d.nan = s->nan();
      d.posinf = s->posinf();
      d.neginf = s->neginf();
      if (s->sample_idx()) d.sample_idx.assign(s->sample_idx()->begin(), s->sample_idx()->end());
      if (s->samples()) d.samples.assign(s->samples()->begin(), s->samples()->end());
      d.launch = s->launch();
      t->sketches.push_back(std::move(d));
    }
  }
  if (b.captures())
    for (const auto* c : *b.captures())
      t->captures.push_back({c->call_uid(), static_cast<SketchWhich>(c->which()), Str(c->file()),
                             c->offset(), c->bytes()});
  if (b.footer())
    t->footer = FooterData{b.footer()->clean(), b.footer()->calls(), b.footer()->dropped(),
                           b.footer()->end_ns(), Str(b.footer()->reason())};
  if (b.nccl_version() != 0) t->nccl_version = b.nccl_version();
}

// A call written while in flight and written again when it returned is kept once, as returned.
void DropSupersededInFlight(TraceFile* t) {
  auto in_flight = [](const CallRecord& c) { return (c.flags & call_flags::kInFlight) != 0; };
  if (std::none_of(t->calls.begin(), t->calls.end(), in_flight)) return;
  std::unordered_set<uint64_t> seen;
  for (const CallRecord& c : t->calls)
    if (!in_flight(c)) seen.insert(c.uid);
  std::erase_if(t->calls, [&](const CallRecord& c) {
    return in_flight(c) && !seen.insert(c.uid).second;
  });
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

StatusOr<TraceFile> ReadTraceFile(const std::string& path) {
  TraceFile t;
  t.path = path;
  NCCLRR_RETURN_IF_ERROR(ForEachBatch(
      path, &t.header, [&](const fb::Batch& b) { Collect(b, &t); }, &t.warnings, &t));
  if (t.nccl_version == 0) t.nccl_version = t.header.nccl_version;
  DropSupersededInFlight(&t);
  if (!t.footer && !t.torn)
    t.warnings.push_back(path +
                         ": no closing footer: the recording process did not finish "
                         "writing (killed, or still running); calls after the last flush are "
                         "missing");
  return t;
}

StatusOr<TraceDir> LoadTraceDir(const std::string& path) {
  namespace fs = std::filesystem;
  TraceDir d;
  d.dir = path;
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
  } else {
    return NotFound("'" + path +
                    "' does not exist; expected a trace directory written by "
                    "`ncclrr record -o DIR` or a .ncclrr file");
  }
  for (const auto& file : files) {
    auto t = ReadTraceFile(file);
    if (!t.ok()) {
      if (files.size() == 1) return t.status();
      d.warnings.push_back(t.status().message());
      continue;
    }
    d.files.push_back(std::move(t.value()));
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
