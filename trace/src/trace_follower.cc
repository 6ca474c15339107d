#include "ncclrr/trace/trace_follower.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "frame_reader.h"
#include "ncclrr/schema/trace_generated.h"
#include "ncclrr/trace/format.h"

namespace ncclrr {

namespace {

// Closes the descriptor when a poll ends, however it ends.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

// A partial frame kept between polls larger than this gives its memory back once it is read.
constexpr size_t kKeptPendingBytes = 1u << 20;

}  // namespace

TraceFollower::TraceFollower(std::string path) : path_(std::move(path)) {}

TraceFollower::~TraceFollower() = default;

TraceFollower::TraceFollower(TraceFollower&& o) noexcept
    : path_(std::move(o.path_)),
      dev_(o.dev_),
      ino_(o.ino_),
      header_(std::move(o.header_)),
      have_header_(o.have_header_),
      offset_(o.offset_),
      pending_(std::move(o.pending_)),
      bad_frames_(o.bad_frames_) {}

Status TraceFollower::ReadHeader() {
  if (pending_.empty()) return Status::Ok();  // nothing written yet
  const internal::ByteView v{pending_.data(), pending_.size()};
  const size_t magic = std::min<size_t>(pending_.size(), 8);
  if (std::memcmp(pending_.data(), format::kFileMagic, magic) != 0)
    return Corrupt("'" + path_ + "' is not an ncclrr trace: wrong magic bytes");
  if (pending_.size() < format::kFilePreambleSize) return Status::Ok();  // not written yet
  uint32_t hsize = 0;
  std::memcpy(&hsize, pending_.data() + 12, sizeof hsize);
  if (hsize > format::kMaxFrameBytes)
    return Corrupt("'" + path_ + "': its file header claims " + std::to_string(hsize) + " bytes");
  if (pending_.size() < format::kFilePreambleSize + hsize) return Status::Ok();
  size_t end = 0;
  NCCLRR_RETURN_IF_ERROR(internal::ParseHeader(path_, v, &header_, &end));
  for (int64_t* t : {&header_.start_mono_ns, &header_.start_real_ns})
    if (*t < 0 || *t > (int64_t{1} << 62)) *t = 0;  // damage (as ReadTraceFile clamps it)
  have_header_ = true;
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<ptrdiff_t>(end));
  offset_ += end;
  return Status::Ok();
}

void TraceFollower::StartOver() {
  have_header_ = false;
  offset_ = 0;
  std::vector<uint8_t>().swap(pending_);
}

Status TraceFollower::Poll(TraceFile* delta) {
  *delta = TraceFile{};
  delta->path = path_;
  const Fd file{open(path_.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) return IoError("cannot open '" + path_ + "': " + std::strerror(errno));
  struct stat st {};
  if (fstat(file.fd, &st) != 0)
    return IoError("cannot stat '" + path_ + "': " + std::strerror(errno));
  if (ino_ != 0 && (st.st_dev != dev_ || st.st_ino != ino_)) StartOver();  // another file now
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  uint64_t have = offset_ + pending_.size();
  if (size < have) {  // truncated: start over
    StartOver();
    have = 0;
  }
  // Only what was appended since the last poll.
  const size_t old = pending_.size();
  pending_.resize(old + (size - have));
  size_t got = 0;
  while (got < size - have) {
    const ssize_t n = pread(file.fd, pending_.data() + old + got, size - have - got,
                            static_cast<off_t>(have + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  pending_.resize(old + got);
  if (!have_header_) {
    NCCLRR_RETURN_IF_ERROR(ReadHeader());
    if (!have_header_) return Status::Ok();
  }
  delta->header = header_;
  // The decoding buffers are the thread's, kept from file to file and poll to poll.
  thread_local std::vector<uint8_t> scratch[2];
  const internal::ByteView v{pending_.data(), pending_.size()};
  size_t pos = 0;
  while (pos < v.size()) {
    internal::FrameHeader h;
    const uint8_t* payload = nullptr;
    size_t psize = 0, frame_bytes = 0;
    const auto c = internal::CheckFrame(v, pos, &h, scratch, &payload, &psize, &frame_bytes);
    if (c == internal::FrameCheck::kOk) {
      internal::CollectBatch(*flatbuffers::GetRoot<fb::Batch>(payload), delta);
      ++delta->frames;
      pos += frame_bytes;
      continue;
    }
    if (c == internal::FrameCheck::kTorn) break;  // still being written
    const size_t next = internal::Resync(v, pos + 1, scratch);
    ++bad_frames_;
    ++delta->bad_frames;
    // Nothing valid after it yet: keep the bytes from just past the bad start for a later poll.
    pos = next < v.size() ? next : pos + 1;
    if (next >= v.size()) break;
  }
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<ptrdiff_t>(pos));
  if (pending_.capacity() > kKeptPendingBytes && pending_.size() < pending_.capacity() / 4)
    pending_.shrink_to_fit();  // a whole file was read at once: keep only its unfinished tail
  offset_ += pos;
  delta->file_bytes = size;
  return Status::Ok();
}

}  // namespace ncclrr
