#pragma once
// TimeAxis: the time <-> pixel mapping of the timeline, as a plain value with no Qt and no
// widgets, so zoom, pan, fit and ruler ticks are unit-tested directly (hotspot's TimeLineData).
//
// Times are int64 nanoseconds on the session's timeline (common-timeline ns minus the trace's
// first call): a double cannot hold absolute CLOCK_REALTIME nanoseconds (1.7e18) to better than
// 256 ns, so absolute times never enter floating point.
#include <cstdint>
#include <string>
#include <vector>

namespace ncclrr::viewer {

struct RulerTick {
  int64_t time_ns = 0;
  double x = 0;        // pixel
  bool major = false;  // labelled
  std::string label;
};

struct TimeAxis {
  int64_t origin_ns = 0;   // time at pixel 0
  double ns_per_px = 1.0;  // > 0
  double width_px = 1.0;   // visible width

  // Zoom limits: 1/64 ns per pixel (nothing recorded is finer) to ~3 years across the view.
  static constexpr double kMinNsPerPx = 1.0 / 64;
  static constexpr double kMaxSpanNs = 1e17;

  double ToPixel(int64_t t) const { return static_cast<double>(t - origin_ns) / ns_per_px; }
  int64_t ToTime(double px) const;
  int64_t end_ns() const { return ToTime(width_px); }
  int64_t span_ns() const { return end_ns() - origin_ns; }

  // Shows [begin, end] with `margin` of the width left free on each side.
  void Fit(int64_t begin, int64_t end, double margin = 0.02);
  // Scales by `factor` (> 1 zooms in) keeping the time under pixel `px` where it is.
  void ZoomAt(double px, double factor);
  // Moves the view by `dx` pixels (positive: later times come into view).
  void PanPixels(double dx);
  // Keeps the zoom and puts the middle of [begin, end] at the centre; zooms out when the range
  // does not fit in 80% of the width.
  void CenterOn(int64_t begin, int64_t end);
  // Changes the width in pixels keeping origin and zoom (widget resize).
  void Resize(double width) { width_px = width > 1 ? width : 1; }

  // 1-2-5 steps at least `min_spacing_px` apart; every 5th (or 2nd for 2-steps) is major.
  // Labels are offsets from `label_zero_ns` in the unit that suits the step ("+1.25 ms").
  std::vector<RulerTick> Ticks(double min_spacing_px, int64_t label_zero_ns = 0) const;
};

// "1.5 ms", "250 ns", "3.000 s": `ns` written with the unit (and decimals) that suit `step_ns`.
std::string FormatTime(int64_t ns, int64_t step_ns);
// "12.3 us" style duration with 3 significant digits.
std::string FormatDuration(int64_t ns);

}  // namespace ncclrr::viewer
