#pragma once
// TraceReader: verifies the file header and every frame (CRC-32C, then the FlatBuffers
// Verifier), stops at a torn tail with a precise warning, skips corrupt frames (resynchronising
// on the next valid frame) and rejects foreign files and newer major versions with messages that
// say what was expected and what to do.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ncclrr/base/status.h"
#include "ncclrr/trace/record_set.h"
#include "ncclrr/trace/records.h"
#include "ncclrr/trace/trace_data.h"

namespace ncclrr {
namespace fb {
struct Batch;
}

// A file read back: its records (gpu_times only the complete ones, start_ns <= end_ns) and what
// reading it found.
struct TraceFile : BasicRecordSet<CallTable> {
  std::string path;
  HeaderData header;
  int32_t nccl_version = 0;  // from the header, or the first batch that knew it
  std::unordered_map<uint32_t, std::string> strings;
  std::vector<GpuTimeRecord> gpu_started;  // start marks (IsStartMark): seen running
  std::optional<FooterData> footer;

  // Reading problems that did not stop the read (torn tail, corrupt frames, missing footer).
  std::vector<std::string> warnings;
  bool torn = false;        // the file ends inside a frame
  uint64_t frames = 0;      // frames read
  uint64_t bad_frames = 0;  // frames skipped as corrupt
  uint64_t file_bytes = 0;
  uint64_t clamped_times = 0;  // timestamps outside [0, 2^62] ns, clamped (a damaged file)

  uint64_t DroppedRecords() const;        // sum over threads of the last DropCount, or the footer's
  std::string String(uint32_t id) const;  // "" when unknown
};

// Streams a file: `on_batch` sees every verified batch in file order. `header` is filled in
// before the first batch. Warnings are appended to `warnings`.
Status ForEachBatch(const std::string& path, HeaderData* header,
                    const std::function<void(const fb::Batch&)>& on_batch,
                    std::vector<std::string>* warnings, TraceFile* stats = nullptr);

// Reads a whole file, decoding its frames on up to `threads` threads.
StatusOr<TraceFile> ReadTraceFile(const std::string& path, int threads = 1);

// What `ncclrr record`'s closing summary needs of one file, read without loading it: the
// header, and the footer from the file's last frame. A file without a footer (its process was
// killed, or is still running) of at most `scan_bytes` is read through once, keeping nothing but
// counts; a larger one is not counted.
struct FileSummary {
  static constexpr uint64_t kScanBytes = 64ull << 20;
  std::string path;
  HeaderData header;
  bool has_footer = false;
  bool counted = false;  // `totals` hold the file's counts (from its footer or a scan)
  FooterData totals;     // the footer; after a scan: calls, dropped and summary counted
  uint64_t file_bytes = 0;
};
StatusOr<FileSummary> ReadFileSummary(const std::string& path,
                                      uint64_t scan_bytes = FileSummary::kScanBytes);

struct TraceDir {
  std::string dir;
  std::vector<TraceFile> files;
  std::vector<std::string> warnings;  // files that could not be read, with why
};

// The trace files `path` names: a directory's *.ncclrr files in name order, or the path itself
// when it is a regular file. NotFound/InvalidArgument say what was expected instead.
StatusOr<std::vector<std::string>> ListTraceFiles(const std::string& path);

struct LoadDirOptions {
  // Threads: across files, and within a file when there are fewer files than threads.
  int threads = 1;
  std::function<void(const std::string&)> progress;  // "read 16 of 512 trace files"
};

// Reads `paths` (files across threads, and frames within a file with the threads left over):
// one result per path.
std::vector<StatusOr<TraceFile>> ReadTraceFiles(const std::vector<std::string>& paths,
                                                const LoadDirOptions& options = {});
// The directory `path` of the files read (in ListTraceFiles' order): as LoadTraceDir makes it.
StatusOr<TraceDir> AssembleTraceDir(const std::string& path, std::vector<StatusOr<TraceFile>> read);

// Loads every file ListTraceFiles names. Unreadable files become warnings while one is read;
// a single file that cannot be read returns its own error.
StatusOr<TraceDir> LoadTraceDir(const std::string& path, const LoadDirOptions& options = {});

}  // namespace ncclrr
