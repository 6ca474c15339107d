#include "models/timeline_layout.h"

#include <algorithm>
#include <cmath>

namespace ncclrr::viewer {

int RowLayout::RowAt(double y) const {
  auto it = std::upper_bound(rows.begin(), rows.end(), y,
                             [](double v, const DisplayRow& r) { return v < r.y; });
  if (it == rows.begin()) return -1;
  --it;
  return y < it->y + it->height ? static_cast<int>(it - rows.begin()) : -1;
}

int RowLayout::RowOfLane(uint32_t lane) const {
  for (size_t i = 0; i < rows.size(); ++i)
    if (std::find(rows[i].lanes.begin(), rows[i].lanes.end(), lane) != rows[i].lanes.end())
      return static_cast<int>(i);
  return -1;
}

RowLayout LayOutRows(const TimelineIndex& index, const CollapseState& collapsed,
                     const TimelineGeometry& g) {
  RowLayout out;
  double y = 0;
  auto add = [&](DisplayRow r) {
    r.y = y;
    y += r.height;
    out.rows.push_back(std::move(r));
  };
  for (uint32_t h = 0; h < index.hosts.size(); ++h) {
    const HostGroup& host = index.hosts[h];
    DisplayRow header;
    header.kind = DisplayRow::kHost;
    header.host = h;
    header.height = g.host_height;
    header.collapsed = collapsed.hosts.count(host.host) != 0;
    if (header.collapsed) {  // the whole host in one taller row
      header.height = g.lane_height;
      for (uint32_t d : host.devices)
        for (uint32_t l : index.devices[d].lanes)
          if (!index.lanes[l].gpu) header.lanes.push_back(l);
    }
    add(std::move(header));
    if (out.rows.back().collapsed) continue;
    for (uint32_t d : host.devices) {
      const DeviceRow& dev = index.devices[d];
      const bool dev_collapsed = collapsed.devices.count({dev.file, dev.device}) != 0;
      if (dev_collapsed || dev.lanes.size() == 1) {
        DisplayRow r;
        r.host = h;
        r.device = static_cast<int32_t>(d);
        r.first_of_device = true;
        r.collapsed = dev_collapsed;
        r.height = g.lane_height;
        for (uint32_t l : dev.lanes)
          if (!dev_collapsed || !index.lanes[l].gpu) r.lanes.push_back(l);
        add(std::move(r));
        continue;
      }
      bool first = true;
      for (uint32_t l : dev.lanes) {
        DisplayRow r;
        r.host = h;
        r.device = static_cast<int32_t>(d);
        r.first_of_device = first;
        r.height = index.lanes[l].gpu ? g.gpu_lane_height : g.lane_height;
        r.lanes = {l};
        add(std::move(r));
        first = false;
      }
    }
  }
  out.height = y;
  return out;
}

std::optional<BoxRef> HitTest(const TimelineIndex& index, const DisplayRow& row,
                              const TimeAxis& axis, double x, double tolerance_px) {
  const int64_t lo = axis.ToTime(x - tolerance_px);
  const int64_t hi = axis.ToTime(x + tolerance_px);
  std::optional<BoxRef> best;
  double best_score = INFINITY;
  for (uint32_t l : row.lanes) {
    const Lane& lane = index.lanes[l];
    size_t looked = 0;
    for (size_t p = lane.boxes.FirstReaching(lo);
         p < lane.boxes.size() && lane.boxes.begin[p] <= hi && looked < 256; ++p, ++looked) {
      if (lane.boxes.end[p] < lo) continue;
      const double x0 = axis.ToPixel(lane.boxes.begin[p]);
      const double x1 = axis.ToPixel(lane.boxes.end[p]);
      double score = x >= x0 && x <= x1 ? 0 : std::min(std::fabs(x - x0), std::fabs(x - x1));
      if (std::binary_search(lane.marked.begin(), lane.marked.end(), static_cast<uint32_t>(p)))
        score -= 1000;
      if (score < best_score) {
        best_score = score;
        best = BoxRef{l, static_cast<uint32_t>(p)};
      }
    }
  }
  return best;
}

}  // namespace ncclrr::viewer
