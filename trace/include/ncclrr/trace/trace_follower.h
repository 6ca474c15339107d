#pragma once
// TraceFollower: reads a trace file that a running process is still appending to. Each Poll
// reads only the bytes appended since the last one and hands over the records of the frames
// completed since; a frame still being written (a torn tail) is normal here and is read by a
// later poll, as is a file that does not hold its whole header yet.
//
// A follower holds no open descriptor and no decoding buffers between polls: `ncclrr status`
// follows every file of a job at once, and a job of thousands of ranks would otherwise run out
// of descriptors (ulimit -n is 1,024 by default) and hold a frame's buffers per file (~0.5 MB
// each, gigabytes for 16,384 files).
#include <cstdint>
#include <string>
#include <vector>

#include "ncclrr/base/status.h"
#include "ncclrr/trace/trace_reader.h"

namespace ncclrr {

class TraceFollower {
 public:
  explicit TraceFollower(std::string path);
  ~TraceFollower();
  TraceFollower(const TraceFollower&) = delete;
  TraceFollower& operator=(const TraceFollower&) = delete;
  TraceFollower(TraceFollower&& other) noexcept;

  // The records of the frames completed since the last poll, in `delta` (cleared first; its
  // header and path are the file's). An error when the file is not an ncclrr trace. A file that
  // shrank or was replaced (another file under its name) is read again from its start.
  Status Poll(TraceFile* delta);

  bool has_header() const { return have_header_; }
  const HeaderData& header() const { return header_; }
  const std::string& path() const { return path_; }
  uint64_t bytes_read() const { return offset_; }  // of complete frames and the header
  uint64_t bad_frames() const { return bad_frames_; }

 private:
  Status ReadHeader();
  void StartOver();
  std::string path_;
  uint64_t dev_ = 0, ino_ = 0;  // the file read so far (0: none yet)
  HeaderData header_;
  bool have_header_ = false;
  uint64_t offset_ = 0;           // file offset of pending_[0]
  std::vector<uint8_t> pending_;  // bytes read but not yet a whole header or frame
  uint64_t bad_frames_ = 0;
};

}  // namespace ncclrr
