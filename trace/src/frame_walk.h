#pragma once
// Walking a trace file's frames: the file mapped read-only, what a walk has found so far (frames
// read, corrupt frames skipped, a torn tail), and the footer found from the end. Shared by the
// one-batch-at-a-time reader (ForEachBatch), the whole-file reader (FileReader) and the summary.
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "frame_reader.h"
#include "ncclrr/base/status.h"
#include "ncclrr/trace/trace_data.h"
#include "ncclrr/trace/trace_reader.h"

namespace ncclrr::internal {

// Read-only view of a whole file.
class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile() {
    if (mapped_ && data_ != MAP_FAILED) munmap(data_, size_);
  }
  // With `buffer`, a file of up to kReadBytes is read into it instead of mapped: a loader of
  // thousands of small files (a large job's ring dumps) spent more on mapping and unmapping
  // them (a TLB shootdown across its threads at each munmap) than on decoding. The caller keeps
  // the buffer from file to file, and must not change it while this view is in use.
  // `read_limit` lowers that size for a caller that needs only a little of a larger file.
  static constexpr size_t kReadBytes = size_t{8} << 20;
  Status Open(const std::string& path, std::vector<uint8_t>* buffer = nullptr,
              size_t read_limit = kReadBytes);
  const uint8_t* data() const { return static_cast<const uint8_t*>(data_); }
  size_t size() const { return size_; }
  ByteView view() const { return {data(), size_}; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
};

struct FrameWalk {
  FrameWalk(const std::string& p, ByteView bytes, std::vector<std::string>* w)
      : path(p), f(bytes), warnings(w) {}
  const std::string& path;
  ByteView f;
  size_t off = 0;
  uint64_t frames = 0, bad = 0;
  bool torn = false;
  std::vector<std::string>* warnings;
  std::vector<uint8_t> scratch[2];  // decompressed payload, un-transposed payload

  // The frame at `off` failed its check `c`: skips to the next valid frame with a warning.
  // Returns false when nothing readable is left (a torn tail).
  bool SkipBadFrame(FrameCheck c);
  void Report(TraceFile* stats) const;
};

// ForEachBatch, with each batch's frame offset in the file.
Status ForEachFrame(const std::string& path, HeaderData* header,
                    const std::function<void(const fb::Batch&, size_t offset)>& on_batch,
                    std::vector<std::string>* warnings, TraceFile* stats);

// What a reader of a whole file does when the walk is over: the NCCL version from the header,
// header times clamped, and warnings for clamped times and a missing footer.
void FinishReading(const std::string& path, TraceFile* t);

// The footer in the last frame of `f` (frames start at `start`), when there is one.
std::optional<FooterData> LastFooter(const ByteView& f, size_t start);

}  // namespace ncclrr::internal
