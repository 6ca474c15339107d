#pragma once
// FileReader: reads whole trace files, decoding frames on several threads. Frames are
// independent, so a few per thread are decoded at once and then taken in file order, their calls
// packed straight from the decoded frame into the file's CallTable. Its buffers are kept from
// file to file: a loader reads many files with one FileReader per thread, and touches fresh
// memory only for what it keeps.
#include <string>
#include <vector>

#include "frame_walk.h"
#include "ncclrr/base/status.h"
#include "ncclrr/trace/trace_reader.h"

namespace ncclrr::internal {

class FileReader {
 public:
  explicit FileReader(int threads);
  StatusOr<TraceFile> Read(const std::string& path);

 private:
  // One frame decoded on a worker thread: its records but the calls, which stay in the decoded
  // payload (`calls`, `ncalls`) until packed; or why it failed.
  struct Slot {
    FrameCheck check = FrameCheck::kBad;
    size_t bytes = 0;
    TraceFile records;
    const CallRecord* calls = nullptr;
    const uint64_t* columns = nullptr;  // or the calls in columns (CallTable::AppendColumns)
    size_t ncalls = 0;
    bool in_flight = false;           // some call was written while in flight
    std::vector<CallRecord> clamped;  // the calls, when some times needed clamping
    std::vector<uint8_t> scratch[2];

    void Decode(const ByteView& f, size_t off);
    void MoveInto(TraceFile* t);  // what reading the frame in order would have added
  };
  int threads_;
  std::vector<Slot> slots_;
  std::vector<uint8_t> file_bytes_;  // a small file read whole (MappedFile::Open)
};

}  // namespace ncclrr::internal
