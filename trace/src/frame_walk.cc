#include "frame_walk.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "ncclrr/schema/trace_generated.h"
#include "ncclrr/trace/format.h"

namespace ncclrr::internal {

Status MappedFile::Open(const std::string& path, std::vector<uint8_t>* buffer, size_t read_limit) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError("cannot open '" + path + "': " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return InvalidArgument("'" + path + "' is not a regular file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (buffer && size_ <= std::min(read_limit, kReadBytes)) {
    if (buffer->size() < size_) buffer->resize(size_);
    size_t got = 0;
    while (got < size_) {
      const ssize_t n = pread(fd, buffer->data() + got, size_ - got, static_cast<off_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int e = errno;
        close(fd);
        return IoError("cannot read '" + path + "': " + std::strerror(e));
      }
      if (n == 0) break;  // cut short while being read: what is there
      got += static_cast<size_t>(n);
    }
    close(fd);
    size_ = got;
    data_ = buffer->data();
    return Status::Ok();
  }
  if (size_ > 0) data_ = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  mapped_ = size_ > 0;
  close(fd);
  if (data_ == MAP_FAILED) return IoError("cannot map '" + path + "': " + std::strerror(errno));
  return Status::Ok();
}

bool FrameWalk::SkipBadFrame(FrameCheck c) {
  const size_t next = Resync(f, off + 1, scratch);
  if (c == FrameCheck::kTorn && next == f.size()) {
    torn = true;
    warnings->push_back(path + ": torn tail at byte offset " + std::to_string(off) + " of " +
                        std::to_string(f.size()) +
                        " (the recording process stopped mid-write); "
                        "kept the " +
                        std::to_string(frames) + " complete frames before it");
    return false;
  }
  ++bad;
  warnings->push_back(
      path + ": corrupt frame at byte offset " + std::to_string(off) + "; " +
      (next < f.size()
           ? "skipped " + std::to_string(next - off) + " bytes to the next valid frame"
           : "nothing readable after it (" + std::to_string(f.size() - off) + " bytes lost)"));
  off = next;
  return true;
}

void FrameWalk::Report(TraceFile* stats) const {
  stats->frames = frames;
  stats->bad_frames = bad;
  stats->torn = torn;
  stats->file_bytes = f.size();
}

// A frame that ends where the file does, found by looking back at most 1 MiB for a frame header.
std::optional<FooterData> LastFooter(const ByteView& f, size_t start) {
  constexpr size_t kLookBack = 1u << 20;
  std::vector<uint8_t> scratch[2];
  if (f.size() < start + format::kFrameHeaderSize) return std::nullopt;
  const size_t lowest = f.size() - start > kLookBack ? f.size() - kLookBack : start;
  for (size_t off = f.size() - format::kFrameHeaderSize + 1; off-- > lowest;) {
    uint32_t magic;
    std::memcpy(&magic, f.data() + off, sizeof magic);
    if (magic != format::kFrameMagic) continue;
    FrameHeader h;
    std::memcpy(&h, f.data() + off, sizeof h);  // a frame that would not end at the file's end
    const size_t ext = (h.flags & format::kFlagTransposed) ? format::kFrameExtensionSize : 0;
    if (off + sizeof h + ext + h.stored_size != f.size()) continue;  // is not checked in full
    const uint8_t* payload = nullptr;
    size_t psize = 0, frame_bytes = 0;
    if (CheckFrame(f, off, &h, scratch, &payload, &psize, &frame_bytes) != FrameCheck::kOk ||
        off + frame_bytes != f.size())
      continue;
    const fb::Batch* b = flatbuffers::GetRoot<fb::Batch>(payload);
    if (b->footer() == nullptr) return std::nullopt;
    return ReadFooter(*b->footer());
  }
  return std::nullopt;
}

Status ForEachFrame(const std::string& path, HeaderData* header,
                    const std::function<void(const fb::Batch&, size_t offset)>& on_batch,
                    std::vector<std::string>* warnings, TraceFile* stats) {
  MappedFile file;
  NCCLRR_RETURN_IF_ERROR(file.Open(path));
  FrameWalk w(path, file.view(), warnings);
  NCCLRR_RETURN_IF_ERROR(ParseHeader(path, w.f, header, &w.off));
  while (w.off < w.f.size()) {
    FrameHeader h;
    const uint8_t* payload = nullptr;
    size_t psize = 0, frame_bytes = 0;
    const FrameCheck c = CheckFrame(w.f, w.off, &h, w.scratch, &payload, &psize, &frame_bytes);
    if (c == FrameCheck::kOk) {
      on_batch(*flatbuffers::GetRoot<fb::Batch>(payload), w.off);
      ++w.frames;
      w.off += frame_bytes;
      continue;
    }
    if (!w.SkipBadFrame(c)) break;
  }
  if (stats) w.Report(stats);
  return Status::Ok();
}

void FinishReading(const std::string& path, TraceFile* t) {
  if (t->nccl_version == 0) t->nccl_version = t->header.nccl_version;
  for (int64_t* v : {&t->header.start_mono_ns, &t->header.start_real_ns})
    if (!TimeSane(*v)) {
      *v = 0;
      ++t->clamped_times;
    }
  if (t->clamped_times > 0)
    t->warnings.push_back(path + ": " + std::to_string(t->clamped_times) +
                          " timestamp(s) outside any clock's range were clamped: the file is "
                          "damaged, and times in it are not to be trusted");
  if (!t->footer && !t->torn)
    t->warnings.push_back(path +
                          ": no closing footer: the recording process did not finish "
                          "writing (killed, or still running); calls after the last flush are "
                          "missing");
}

}  // namespace ncclrr::internal
