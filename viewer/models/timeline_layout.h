#pragma once
// Vertical layout of the timeline (which rows, at what y) and hit testing: plain C++ shared by
// the painter, the widget and the tests. Hosts and devices can be collapsed; a collapsed device
// paints all its lanes in one row, a collapsed host paints all its devices in its header row.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "models/intervals.h"
#include "models/time_axis.h"
#include "models/timeline_index.h"

namespace ncclrr::viewer {

struct TimelineGeometry {
  double label_width = 230;  // the row-label column left of the plot
  double ruler_height = 30;
  double host_height = 20;
  double lane_height = 28;
  double gpu_lane_height = 14;
};

struct DisplayRow {
  enum Kind : uint8_t { kHost, kLane } kind = kLane;
  double y = 0, height = 0;  // content coordinates (0 = top of the first row, below the ruler)
  uint32_t host = 0;
  int32_t device = -1;           // index into TimelineIndex::devices (lane rows)
  bool first_of_device = false;  // draws the device label
  bool collapsed = false;        // a collapsed host or device: paints several lanes
  std::vector<uint32_t> lanes;   // lanes painted in this row
};

struct CollapseState {
  std::set<std::string> hosts;
  std::set<std::pair<uint32_t, int32_t>> devices;  // (file, device)
};

struct RowLayout {
  std::vector<DisplayRow> rows;
  double height = 0;
  // Index of the row at content y, or -1.
  int RowAt(double y) const;
  // The row that paints `lane` (its own row, or the collapsed row holding it), or -1.
  int RowOfLane(uint32_t lane) const;
};

RowLayout LayOutRows(const TimelineIndex& index, const CollapseState& collapsed,
                     const TimelineGeometry& g = {});

// The call under a point of a row (x in plot pixels), within `tolerance_px`; prefers marked
// calls, then the one nearest to x. Looks at a bounded number of candidates so that a click on
// a dense zoomed-out row stays instant.
std::optional<BoxRef> HitTest(const TimelineIndex& index, const DisplayRow& row,
                              const TimeAxis& axis, double x, double tolerance_px = 3);

}  // namespace ncclrr::viewer
