#pragma once
// TimelineIndex: the calls of a TraceModel laid out for painting. Rows are devices (one rank of
// one process each, grouped by host); each device has lanes, one per CUDA stream (its host call
// times) plus one per stream with GPU execution intervals where those were recorded. A lane is
// an Intervals list (sorted, prefix-max ends) with a style per call and the few marked calls,
// so a frame is O(pixels) (intervals.h). Group scopes are a second, merged interval list.
//
// Times are nanoseconds since the model's first call (TraceModel::start_ns()); in-flight calls
// (never returned) end at their process's last sign of life.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "models/call_marks.h"
#include "models/intervals.h"
#include "ncclrr/analysis/model.h"

namespace ncclrr::viewer {

// What colour a call gets: its collective (or family).
enum class BoxStyle : uint8_t {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAlltoAll,
  kGatherScatter,
  kSend,
  kRecv,
  kLifecycle,
  kOther,
};
inline constexpr int kNumBoxStyles = 11;
BoxStyle StyleOf(Api api);
std::string_view StyleName(BoxStyle s);

// What the user chose to see. Empty optionals show everything.
struct TimelineFilter {
  std::optional<size_t> comm;  // index into TraceModel::comms(): its calls and its ranks only
  std::optional<Api> api;      // this API only (Broadcast also matches Bcast)
  std::optional<int> rank;     // devices holding this rank (of `comm` when set, else any comm)
  std::optional<std::pair<int64_t, int64_t>> window;  // [begin, end] ns since start

  bool empty() const { return !comm && !api && !rank && !window; }
};

struct Lane {
  uint32_t file = 0;
  int32_t device = -1;
  uint64_t stream = 0;
  bool gpu = false;  // GPU execution intervals rather than host calls
  Intervals boxes;
  std::vector<uint32_t> call;      // TraceFile::calls index per position
  std::vector<uint8_t> style;      // BoxStyle per position
  std::vector<uint32_t> marked;    // ascending positions of marked calls
  std::vector<uint8_t> mark_bits;  // parallel to `marked`
  Intervals groups;                // group scopes holding calls of this lane, merged

  RunLook look() const { return {&style, &marked, &mark_bits}; }
  // Position of the call, or -1 when this lane does not hold it.
  int64_t Find(uint32_t call_index, int64_t begin_ns) const;
};

// One rank of one process (a device): a row of the timeline.
struct DeviceRow {
  uint32_t file = 0;
  int32_t device = -1;
  std::string host;
  int pid = 0;
  int world_rank = -1;  // rank in the largest communicator that holds this device, -1 if none
  int world_size = 0;
  std::vector<std::pair<size_t, int>> comm_ranks;  // (comm index, rank) held by this device
  std::vector<uint32_t> lanes;                     // indices into TimelineIndex::lanes
  int64_t last_alive_ns = 0;                       // since start
  bool ended_cleanly = true;                       // the file has a clean footer

  std::string Label() const;     // "rank 0 · GPU 0"
  std::string Sublabel() const;  // "host · pid 1234"
};

struct HostGroup {
  std::string host;
  std::vector<uint32_t> devices;  // indices into TimelineIndex::devices, display order
};

struct BoxRef {
  uint32_t lane = 0;
  uint32_t pos = 0;
};

class TimelineIndex {
 public:
  // Times are ns since `origin_ns` on the common timeline (INT64_MIN: the model's first call;
  // a trace shown at levels of detail keeps the whole trace's first call as its origin).
  static TimelineIndex Build(const analysis::TraceModel& model, const CallMarks& marks,
                             const TimelineFilter& filter = {}, int64_t origin_ns = INT64_MIN);

  std::vector<Lane> lanes;
  std::vector<DeviceRow> devices;
  std::vector<HostGroup> hosts;
  int64_t begin_ns = 0, end_ns = 0;  // extent of every box (since start)
  uint64_t boxes = 0;

  // Adds `marks` (and the in-flight mark to `in_flight`) to the calls this index shows, beside
  // the marks it has: the viewer shows the timeline before the findings are known.
  void AddMarks(const analysis::TraceModel& model, const CallMarks& marks,
                const std::vector<CallRef>& in_flight = {});
  // The host-time box of a call, when this index shows it.
  std::optional<BoxRef> Locate(const analysis::TraceModel& model, CallRef r) const;
  CallRef CallAt(BoxRef b) const { return {lanes[b.lane].file, lanes[b.lane].call[b.pos]}; }
  // Common-timeline ns of time 0 (the model's first call).
  int64_t origin_ns() const { return origin_ns_; }

 private:
  int64_t origin_ns_ = 0;
  std::map<std::tuple<uint32_t, int32_t, uint64_t, bool>, uint32_t> lane_of_;
};

}  // namespace ncclrr::viewer
