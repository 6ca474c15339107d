#pragma once
// WindowedTrace: a trace too large to hold (10^8-10^9 calls), shown at levels of detail. One
// pass over the files (trace_outline.h) keeps every record but the calls, where each frame of
// calls lies, and per lane (a process's device and stream) a few thousand buckets of calls
// close in time. A session shows a composite model: a representative call per bucket (drawn as
// one box spanning its calls) and, inside a window the user zoomed into, the real calls read
// back from just the frames that hold them. The findings come from the whole trace, checked in
// passes of communicators that fit in memory (check_in_passes.h), and are put on whichever
// calls or buckets hold the calls they name.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ncclrr/analysis/finding.h"
#include "ncclrr/analysis/model.h"
#include "ncclrr/base/status.h"
#include "ncclrr/trace/trace_outline.h"

namespace ncclrr::viewer {

// Calls of one lane close in time, drawn as one box.
struct CallBucket {
  int64_t begin = 0, end = 0;  // the file's monotonic ns: earliest enter, latest end
  uint64_t calls = 0;
};

// What a call of a composite model stands for.
struct CompositeCall {
  static constexpr int64_t kBucket = INT64_MIN;
  int64_t index = kBucket;  // the call's ReadTraceFile index, or kBucket
  uint32_t bucket = 0;      // for a bucket: index into WindowedTrace::Buckets(file)
  bool is_bucket() const { return index == kBucket; }
};

class WindowedTrace {
 public:
  // Buckets per lane: enough for a screen's width many times over, few enough that a job of
  // thousands of processes keeps them in ~200 MB.
  static constexpr uint32_t kMaxBucketsPerLane = 16384;
  static constexpr uint64_t kBucketBudget = 2'000'000;

  // One pass over the files of `path` (across `threads`); `progress` says how far. The
  // buckets of all lanes together are about `bucket_budget` at most.
  static StatusOr<std::shared_ptr<WindowedTrace>> Outline(
      const std::string& path, int threads, const std::function<void(std::string_view)>& progress,
      uint64_t bucket_budget = kBucketBudget);

  // A view holding at most this many calls has them read (and as many again around it).
  static constexpr uint64_t kWindowCalls = 1'000'000;
  uint64_t window_calls() const { return window_calls_; }
  void set_window_calls(uint64_t n) { window_calls_ = n; }

  const std::string& path() const { return path_; }
  uint64_t calls() const { return calls_; }
  size_t files() const { return outlines_.size(); }
  const std::vector<CallBucket>& Buckets(uint32_t file) const { return buckets_[file]; }
  const std::map<uint64_t, uint64_t>& calls_per_comm() const { return calls_per_comm_; }
  // Common-timeline ns of the trace's first call (the sessions' time 0).
  int64_t origin_ns() const { return origin_ns_; }

  // Calls of every lane between [begin, end] (session ns), counting every bucket that overlaps.
  uint64_t CallsIn(int64_t begin, int64_t end) const;

  // The model of the buckets, with the real calls of every frame that overlaps `window`
  // (session ns) in place of the buckets inside it; `what[f][i]` says what call i of file f is.
  StatusOr<analysis::TraceModel> Composite(std::optional<std::pair<int64_t, int64_t>> window,
                                           std::vector<std::vector<CompositeCall>>* what) const;

  // Checks the whole trace in passes of communicators that fit in `memory_bytes`; one of whose
  // communicators alone does not fit is checked with its calls in a file on disk in `spill_dir`
  // ("": the trace's directory; ncclrr/base/spill.h), and where that cannot be, not checked:
  // the report's one note says why and what to run instead.
  StatusOr<analysis::Report> Check(uint64_t memory_bytes,
                                   const std::function<void(std::string_view)>& progress,
                                   const std::string& spill_dir = "") const;

  // The records of the calls `refs` names (file, ReadTraceFile index), read from their frames,
  // for placing findings on buckets; at most `limit` of them.
  std::map<uint64_t, CallRecord> ReadCalls(const std::vector<analysis::CallRef>& refs,
                                           size_t limit) const;
  // The bucket of file `file` whose lane is the call's and whose span holds (or, failing that,
  // comes last before) its enter time; nullopt when the lane has none.
  std::optional<uint32_t> BucketOf(uint32_t file, const CallRecord& c) const;
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  std::string path_;
  std::vector<std::string> paths_;
  std::vector<TraceOutline> outlines_;
  std::vector<std::vector<CallBucket>> buckets_;  // per file, lane after lane
  std::vector<CallTable> representatives_;        // per file: a call per bucket, its first
  struct LaneRange {
    int32_t device = -1;
    uint64_t stream = 0;
    uint32_t first = 0, count = 0;  // its buckets, in time order
  };
  std::vector<std::vector<LaneRange>> lanes_;  // per file
  std::vector<analysis::FileTotals> totals_;
  std::vector<int64_t> clock_offset_ns_;  // per file: common = monotonic + offset
  std::map<uint64_t, uint64_t> calls_per_comm_;
  uint64_t calls_ = 0;
  uint64_t window_calls_ = kWindowCalls;
  int64_t origin_ns_ = 0;
  std::vector<std::string> warnings_;
};

}  // namespace ncclrr::viewer
