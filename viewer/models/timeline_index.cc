#include "models/timeline_index.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "ncclrr/base/parallel_for.h"

namespace ncclrr::viewer {

using analysis::CommModel;
using analysis::TraceModel;

BoxStyle StyleOf(Api api) {
  switch (api) {
    case Api::kAllReduce:
      return BoxStyle::kAllReduce;
    case Api::kBroadcast:
    case Api::kBcast:
      return BoxStyle::kBroadcast;
    case Api::kReduce:
      return BoxStyle::kReduce;
    case Api::kAllGather:
      return BoxStyle::kAllGather;
    case Api::kReduceScatter:
      return BoxStyle::kReduceScatter;
    case Api::kAlltoAll:
      return BoxStyle::kAlltoAll;
    case Api::kGather:
    case Api::kScatter:
      return BoxStyle::kGatherScatter;
    case Api::kSend:
      return BoxStyle::kSend;
    case Api::kRecv:
      return BoxStyle::kRecv;
    default:
      if (api >= Api::kGetUniqueId && api <= Api::kCommRevoke) return BoxStyle::kLifecycle;
      return BoxStyle::kOther;
  }
}

std::string_view StyleName(BoxStyle s) {
  static constexpr std::string_view kNames[kNumBoxStyles] = {
      "AllReduce",      "Broadcast", "Reduce", "AllGather", "ReduceScatter", "AlltoAll",
      "Gather/Scatter", "Send",      "Recv",   "lifecycle", "other"};
  return kNames[static_cast<int>(s)];
}

int64_t Lane::Find(uint32_t call_index, int64_t begin_ns) const {
  for (size_t p = boxes.FirstBeginningAt(begin_ns); p < boxes.size() && boxes.begin[p] == begin_ns;
       ++p)
    if (call[p] == call_index) return static_cast<int64_t>(p);
  return -1;
}

std::string DeviceRow::Label() const {
  std::string s;
  if (world_rank >= 0)
    s = "rank " + std::to_string(world_rank);
  else
    s = "process-level calls";
  if (device >= 0) s += " \u00b7 GPU " + std::to_string(device);
  return s;
}

std::string DeviceRow::Sublabel() const { return host + " \u00b7 pid " + std::to_string(pid); }

namespace {

bool IsGroupScopeCall(Api a) {
  return a == Api::kGroupStart || a == Api::kGroupEnd || a == Api::kGroupSimulateEnd;
}

using LaneKey = std::tuple<uint32_t, int32_t, uint64_t, bool>;  // file, device, stream, gpu

// One file's lanes, built on their own (a file's calls never share a lane with another file's),
// so that files are indexed in parallel and then put together in file order.
struct FileLanes {
  std::vector<Lane> lanes;
  std::map<LaneKey, uint32_t> lane_of;  // into `lanes`
  LaneKey last_key{};
  uint32_t last_lane = UINT32_MAX;
  std::vector<CallRef> in_flight;
  std::unordered_map<uint64_t, std::pair<int64_t, int64_t>> group_spans;  // group id -> extent
  std::map<uint32_t, std::set<uint64_t>> lane_groups;  // lane -> its calls' group ids
};

class IndexBuilder {
 public:
  IndexBuilder(const TraceModel& m, const CallMarks& marks, const TimelineFilter& f,
               TimelineIndex* out,
               std::map<std::tuple<uint32_t, int32_t, uint64_t, bool>, uint32_t>* lane_of)
      : m_(m), marks_(marks), filter_(f), x_(*out), lane_of_(*lane_of) {}

  void Build() {
    origin_ = x_.origin_ns();
    ChooseDevices();
    std::vector<FileLanes> files(m_.dir().files.size());
    ParallelFor(files.size(), CoreCount(), [&](size_t f) {
      AddHostCalls(static_cast<uint32_t>(f), files[f]);
      AddGpuTimes(static_cast<uint32_t>(f), files[f]);
      for (Lane& lane : files[f].lanes) FinishLane(lane);
    });
    for (uint32_t f = 0; f < files.size(); ++f) Gather(f, files[f]);
    x_.AddMarks(m_, marks_, in_flight_);
    AddGroupScopes();
    LayOutDevices();
  }

 private:
  // Which (file, device) rows the rank and comm filters keep; devices holding no rank at all are
  // kept unless a filter names ranks or a comm.
  void ChooseDevices() {
    if (!filter_.rank && !filter_.comm) return;
    restrict_devices_ = true;
    for (size_t ci = 0; ci < m_.comms().size(); ++ci) {
      if (filter_.comm && *filter_.comm != ci) continue;
      const CommModel& c = m_.comms()[ci];
      for (const analysis::RankView& rv : c.ranks)
        if (rv.file >= 0 && (!filter_.rank || *filter_.rank == rv.rank))
          allowed_.insert({static_cast<uint32_t>(rv.file), rv.device});
    }
  }

  bool Accepts(uint32_t f, const CallRecord& c, int64_t begin, int64_t end) const {
    if (restrict_devices_ && !allowed_.count({f, c.device})) return false;
    if (filter_.comm && c.comm_id != m_.comms()[*filter_.comm].id) return false;
    if (filter_.api) {
      const Api a = static_cast<Api>(c.api);
      if (StyleOf(a) != StyleOf(*filter_.api) ||
          (StyleOf(a) == BoxStyle::kGatherScatter && a != *filter_.api))
        return false;
    }
    if (filter_.window && (end < filter_.window->first || begin > filter_.window->second))
      return false;
    return true;
  }

  static uint32_t LaneFor(FileLanes& out, uint32_t f, int32_t device, uint64_t stream, bool gpu) {
    auto key = std::make_tuple(f, device, stream, gpu);
    if (out.last_lane != UINT32_MAX && out.last_key == key) return out.last_lane;
    auto [it, added] = out.lane_of.try_emplace(key, static_cast<uint32_t>(out.lanes.size()));
    if (added) {
      Lane lane;
      lane.file = f;
      lane.device = device;
      lane.stream = stream;
      lane.gpu = gpu;
      out.lanes.push_back(std::move(lane));
    }
    out.last_key = key;
    return out.last_lane = it->second;
  }

  // Appends file f's lanes to the index, in the order one pass over the files would give.
  void Gather(uint32_t f, FileLanes& in) {
    const auto first = static_cast<uint32_t>(x_.lanes.size());
    for (Lane& lane : in.lanes) {
      x_.boxes += lane.boxes.size();
      x_.lanes.push_back(std::move(lane));
    }
    for (const auto& [key, l] : in.lane_of) lane_of_.emplace(key, first + l);
    for (auto& [l, ids] : in.lane_groups) lane_groups_[first + l] = std::move(ids);
    in_flight_.insert(in_flight_.end(), in.in_flight.begin(), in.in_flight.end());
    group_spans_[f] = std::move(in.group_spans);
  }

  void AddHostCalls(uint32_t f, FileLanes& out) {
    const TraceFile& t = m_.file(f);
    const int64_t alive = m_.files()[f].last_alive_ns - origin_;
    auto& spans = out.group_spans;
    t.calls.ForEachRow([&](size_t row, const CallRecord& c) {
      const auto i = static_cast<uint32_t>(row);
      const Api api = static_cast<Api>(c.api);
      const int64_t begin = m_.CommonTime(f, c.enter_ns) - origin_;
      const bool returned = c.exit_ns > 0 && c.exit_ns >= c.enter_ns;
      const int64_t end = returned ? m_.CommonTime(f, c.exit_ns) - origin_ : std::max(alive, begin);
      if (c.group_id != 0) {
        auto [it, added] = spans.try_emplace(c.group_id, begin, end);
        if (!added) {
          it->second.first = std::min(it->second.first, begin);
          it->second.second = std::max(it->second.second, end);
        }
      }
      if (IsGroupScopeCall(api) || !Accepts(f, c, begin, end)) return;
      const uint32_t l = LaneFor(out, f, c.device, c.stream, false);
      Lane& lane = out.lanes[l];
      lane.boxes.Add(begin, end);
      lane.call.push_back(i);
      lane.style.push_back(static_cast<uint8_t>(StyleOf(api)));
      if (!returned) out.in_flight.push_back({f, i});
      if (c.group_id != 0) out.lane_groups[l].insert(c.group_id);
    });
  }

  void AddGpuTimes(uint32_t f, FileLanes& out) {
    const TraceFile& t = m_.file(f);
    if (t.gpu_times.empty()) return;
    std::unordered_map<uint64_t, uint32_t> by_uid;
    by_uid.reserve(t.calls.size());
    t.calls.ForEachRow(
        [&](size_t i, const CallRecord& c) { by_uid.emplace(c.uid, static_cast<uint32_t>(i)); });
    for (const GpuTimeRecord& g : t.gpu_times) {
      auto it = by_uid.find(g.call_uid);
      if (it == by_uid.end() || g.end_ns < g.start_ns) continue;
      const CallRecord& c = t.calls[it->second];
      const int64_t begin = m_.CommonTime(f, g.start_ns) - origin_;
      const int64_t end = m_.CommonTime(f, g.end_ns) - origin_;
      if (!Accepts(f, c, begin, end)) continue;
      Lane& lane = out.lanes[LaneFor(out, f, c.device, c.stream, true)];
      lane.boxes.Add(begin, end);
      lane.call.push_back(it->second);
      lane.style.push_back(static_cast<uint8_t>(StyleOf(static_cast<Api>(c.api))));
    }
  }

  static void FinishLane(Lane& lane) {
    std::vector<uint32_t> perm;
    lane.boxes.Finish(&perm);
    bool identity = true;
    for (uint32_t i = 0; i < perm.size() && identity; ++i) identity = perm[i] == i;
    if (!identity) {
      std::vector<uint32_t> call(perm.size());
      std::vector<uint8_t> style(perm.size());
      for (size_t i = 0; i < perm.size(); ++i) {
        call[i] = lane.call[perm[i]];
        style[i] = lane.style[perm[i]];
      }
      lane.call.swap(call);
      lane.style.swap(style);
    }
  }

  void AddGroupScopes() {
    for (auto& [l, ids] : lane_groups_) {
      Lane& lane = x_.lanes[l];
      const auto& spans = group_spans_[lane.file];
      Intervals raw;
      for (uint64_t id : ids) {
        auto it = spans.find(id);
        if (it != spans.end()) raw.Add(it->second.first, it->second.second);
      }
      raw.Finish();
      for (size_t i = 0; i < raw.size(); ++i) {  // merge overlaps: one bracket per scope run
        if (lane.groups.size() && raw.begin[i] <= lane.groups.end.back())
          lane.groups.end.back() = std::max(lane.groups.end.back(), raw.end[i]);
        else
          lane.groups.Add(raw.begin[i], raw.end[i]);
      }
      lane.groups.Finish();
    }
  }

  void LayOutDevices() {
    std::map<std::pair<uint32_t, int32_t>, uint32_t> device_of;
    std::vector<uint32_t> order(x_.lanes.size());
    for (uint32_t l = 0; l < order.size(); ++l) order[l] = l;
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      const Lane &x = x_.lanes[a], &y = x_.lanes[b];
      return std::tie(x.file, x.device, x.stream, x.gpu) <
             std::tie(y.file, y.device, y.stream, y.gpu);
    });
    x_.begin_ns = INT64_MAX;
    x_.end_ns = INT64_MIN;
    for (uint32_t l : order) {
      const Lane& lane = x_.lanes[l];
      if (lane.boxes.size()) {
        x_.begin_ns = std::min(x_.begin_ns, lane.boxes.begin.front());
        x_.end_ns = std::max(x_.end_ns, lane.boxes.max_end.back());
      }
      auto [it, added] =
          device_of.try_emplace({lane.file, lane.device}, static_cast<uint32_t>(x_.devices.size()));
      if (added) x_.devices.push_back(MakeDevice(lane.file, lane.device));
      x_.devices[it->second].lanes.push_back(l);
    }
    if (x_.begin_ns > x_.end_ns) x_.begin_ns = x_.end_ns = 0;
    std::vector<uint32_t> dev_order(x_.devices.size());
    for (uint32_t d = 0; d < dev_order.size(); ++d) dev_order[d] = d;
    auto rank_key = [&](uint32_t d) {
      const DeviceRow& r = x_.devices[d];
      return std::make_tuple(r.world_rank < 0 ? INT32_MAX : r.world_rank, r.file, r.device);
    };
    std::sort(dev_order.begin(), dev_order.end(),
              [&](uint32_t a, uint32_t b) { return rank_key(a) < rank_key(b); });
    std::map<std::string, uint32_t> host_of;
    for (uint32_t d : dev_order) {
      auto [it, added] =
          host_of.try_emplace(x_.devices[d].host, static_cast<uint32_t>(x_.hosts.size()));
      if (added) x_.hosts.push_back({x_.devices[d].host, {}});
      x_.hosts[it->second].devices.push_back(d);
    }
  }

  DeviceRow MakeDevice(uint32_t f, int32_t device) {
    const analysis::FileView& fv = m_.files()[f];
    DeviceRow d;
    d.file = f;
    d.device = device;
    d.host = fv.host.empty() ? "unknown host" : fv.host;
    d.pid = fv.pid;
    d.last_alive_ns = fv.last_alive_ns - origin_;
    d.ended_cleanly = fv.clean;
    for (auto [ci, rank] : fv.ranks) {
      const CommModel& c = m_.comms()[ci];
      if (rank < 0 || rank >= static_cast<int>(c.ranks.size())) continue;
      if (c.ranks[rank].device != device) continue;
      d.comm_ranks.push_back({ci, rank});
      if (c.nranks > d.world_size) {
        d.world_size = c.nranks;
        d.world_rank = rank;
      }
    }
    return d;
  }

  const TraceModel& m_;
  const CallMarks& marks_;
  const TimelineFilter& filter_;
  TimelineIndex& x_;
  std::map<std::tuple<uint32_t, int32_t, uint64_t, bool>, uint32_t>& lane_of_;
  int64_t origin_ = 0;
  bool restrict_devices_ = false;
  std::set<std::pair<uint32_t, int32_t>> allowed_;
  std::vector<CallRef> in_flight_;
  std::map<uint32_t, std::unordered_map<uint64_t, std::pair<int64_t, int64_t>>> group_spans_;
  std::map<uint32_t, std::set<uint64_t>> lane_groups_;
};

}  // namespace

TimelineIndex TimelineIndex::Build(const TraceModel& model, const CallMarks& marks,
                                   const TimelineFilter& filter, int64_t origin_ns) {
  TimelineIndex x;
  x.origin_ns_ = origin_ns == INT64_MIN ? model.start_ns() : origin_ns;
  IndexBuilder(model, marks, filter, &x, &x.lane_of_).Build();
  return x;
}

void TimelineIndex::AddMarks(const TraceModel& model, const CallMarks& marks,
                             const std::vector<CallRef>& in_flight) {
  std::map<uint32_t, std::map<uint32_t, uint8_t>> pending;  // lane -> position -> bits
  auto mark_one = [&](CallRef r, uint8_t bits) {
    const CallRecord& c = model.call(r);
    const int64_t begin = model.CommonTime(r.file, c.enter_ns) - origin_ns_;
    for (bool gpu : {false, true}) {
      auto it = lane_of_.find({r.file, c.device, c.stream, gpu});
      if (it == lane_of_.end()) continue;
      const Lane& lane = lanes[it->second];
      int64_t pos = -1;
      if (!gpu) {
        pos = lane.Find(r.index, begin);
      } else {  // GPU intervals start at their own time: search by call
        auto p = std::find(lane.call.begin(), lane.call.end(), r.index);
        if (p != lane.call.end()) pos = p - lane.call.begin();
      }
      if (pos >= 0) pending[it->second][static_cast<uint32_t>(pos)] |= bits;
    }
  };
  for (const auto& [key, bits] : marks.all())
    if (CallFromKey(key).file < model.dir().files.size()) mark_one(CallFromKey(key), bits);
  for (CallRef r : in_flight) mark_one(r, mark::kInFlight);
  for (auto& [l, by_pos] : pending) {
    Lane& lane = lanes[l];
    for (size_t k = 0; k < lane.marked.size(); ++k)  // marks already there stay
      by_pos[lane.marked[k]] |= lane.mark_bits[k];
    lane.marked.clear();
    lane.mark_bits.clear();
    for (auto [pos, bits] : by_pos) {  // std::map: ascending positions
      lane.marked.push_back(pos);
      lane.mark_bits.push_back(bits);
    }
  }
}

std::optional<BoxRef> TimelineIndex::Locate(const TraceModel& model, CallRef r) const {
  if (r.file >= model.dir().files.size() || r.index >= model.file(r.file).calls.size())
    return std::nullopt;
  const CallRecord& c = model.call(r);
  auto it = lane_of_.find({r.file, c.device, c.stream, false});
  if (it == lane_of_.end()) return std::nullopt;
  const int64_t pos =
      lanes[it->second].Find(r.index, model.CommonTime(r.file, c.enter_ns) - origin_ns_);
  if (pos < 0) return std::nullopt;
  return BoxRef{it->second, static_cast<uint32_t>(pos)};
}

}  // namespace ncclrr::viewer
