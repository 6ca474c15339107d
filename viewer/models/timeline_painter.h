#pragma once
// Paints the timeline onto any QPaintDevice (a widget, or a QImage for screenshots, render tests
// and the benchmark): the ruler, the row labels, one row per rank with lanes per stream, boxes
// coloured by collective, group-scope brackets, marked calls in red with the finding's short
// text, in-flight calls hatched, and the calls NCCL pairs with the selected/hovered call
// outlined and joined. Every lane is painted from O(pixels) runs (intervals.h), and fills are
// batched by colour.
#include <QPainter>
#include <optional>
#include <vector>

#include "models/timeline_layout.h"
#include "models/trace_session.h"

namespace ncclrr::viewer {

struct TimelineScene {
  const TraceSession* session = nullptr;
  const TimelineIndex* index = nullptr;  // the filtered index being shown
  const RowLayout* layout = nullptr;
  TimelineGeometry geometry;
  TimeAxis axis;  // plot coordinates: pixel 0 is the left edge of the plot area
  double scroll_y = 0;
  double width = 0, height = 0;  // of the whole painted area
  std::optional<CallRef> selected;
  std::optional<CallRef> hovered;
  std::vector<CallRef> highlighted;  // the selected finding's calls
};

struct PaintStats {
  size_t rows = 0;
  size_t runs = 0;    // runs computed (merged or single calls)
  size_t rects = 0;   // rectangles filled after coalescing
  size_t labels = 0;  // finding labels drawn
};

PaintStats PaintTimeline(QPainter& p, const TimelineScene& scene);

// Where a call is drawn in widget coordinates (for tests and for scrolling it into view), or
// nullopt when it is filtered out or scrolled away vertically.
std::optional<QRectF> CallRect(const TimelineScene& scene, CallRef r);

}  // namespace ncclrr::viewer
