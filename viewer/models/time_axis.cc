#include "models/time_axis.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>

namespace ncclrr::viewer {
namespace {

double ClampNsPerPx(double v, double width_px) {
  const double hi = TimeAxis::kMaxSpanNs / std::max(width_px, 1.0);
  if (!(v > TimeAxis::kMinNsPerPx)) return TimeAxis::kMinNsPerPx;  // also catches NaN
  return std::min(v, hi);
}

// The smallest step of the 1-2-5 series that is >= `ns` (at least 1 ns).
int64_t NiceStep(double ns) {
  int64_t decade = 1;
  while (true) {
    for (int m : {1, 2, 5})
      if (static_cast<double>(decade * m) >= ns) return decade * m;
    if (decade > INT64_MAX / 100) return decade * 10;
    decade *= 10;
  }
}

int64_t MinorStep(int64_t major) {
  int64_t mantissa = major;
  while (mantissa >= 10 && mantissa % 10 == 0) mantissa /= 10;
  if (major < 5) return major;  // nothing finer than a nanosecond to mark
  return mantissa == 2 ? major / 4 : major / 5;
}

// floor(a / b) for b > 0.
int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && (a < 0) ? 1 : 0); }

}  // namespace

int64_t TimeAxis::ToTime(double px) const {
  return origin_ns + static_cast<int64_t>(std::llround(px * ns_per_px));
}

void TimeAxis::Fit(int64_t begin, int64_t end, double margin) {
  if (end <= begin) end = begin + 1;
  margin = std::clamp(margin, 0.0, 0.45);
  const double usable = std::max(width_px * (1 - 2 * margin), 1.0);
  ns_per_px = ClampNsPerPx(static_cast<double>(end - begin) / usable, width_px);
  const double span_px = static_cast<double>(end - begin) / ns_per_px;
  origin_ns = begin - static_cast<int64_t>(std::llround((width_px - span_px) / 2 * ns_per_px));
}

void TimeAxis::ZoomAt(double px, double factor) {
  if (!(factor > 0)) return;
  const double before = px * ns_per_px;
  ns_per_px = ClampNsPerPx(ns_per_px / factor, width_px);
  origin_ns += static_cast<int64_t>(std::llround(before - px * ns_per_px));
}

void TimeAxis::PanPixels(double dx) {
  origin_ns += static_cast<int64_t>(std::llround(dx * ns_per_px));
}

void TimeAxis::CenterOn(int64_t begin, int64_t end) {
  if (end < begin) std::swap(begin, end);
  const double span = static_cast<double>(end - begin);
  if (span > 0.8 * width_px * ns_per_px)
    ns_per_px = ClampNsPerPx(span / (0.8 * width_px), width_px);
  const int64_t mid = begin + (end - begin) / 2;
  origin_ns = mid - static_cast<int64_t>(std::llround(width_px / 2 * ns_per_px));
}

std::vector<RulerTick> TimeAxis::Ticks(double min_spacing_px, int64_t label_zero_ns) const {
  std::vector<RulerTick> ticks;
  const int64_t major = NiceStep(std::max(min_spacing_px, 1.0) * ns_per_px);
  const int64_t minor = MinorStep(major);
  const int64_t first = FloorDiv(origin_ns, minor) * minor;
  const int64_t last = end_ns();
  for (int64_t t = first; t <= last; t += minor) {
    const double x = ToPixel(t);
    if (x < 0) continue;
    RulerTick tick;
    tick.time_ns = t;
    tick.x = x;
    tick.major = (t - label_zero_ns) % major == 0;
    if (tick.major) tick.label = FormatTime(t - label_zero_ns, major);
    ticks.push_back(std::move(tick));
    if (ticks.size() > 10000) break;  // a guard against a degenerate axis, never reached
  }
  return ticks;
}

std::string FormatTime(int64_t ns, int64_t step_ns) {
  struct Unit {
    int64_t ns;
    const char* name;
  };
  static constexpr Unit kUnits[] = {{1, "ns"}, {1000, "us"}, {1000000, "ms"}, {1000000000, "s"}};
  step_ns = std::max<int64_t>(step_ns, 1);
  // The largest unit the step shows in with one decimal ("0.5 us", not "500 ns"), or a larger one
  // when the number would get more than 6 digits before the point and the step still shows with
  // at most 3 decimals ("1000.001 ms", not "1000001 us").
  Unit u = kUnits[0];
  for (const Unit& c : kUnits) {
    const bool step_fits = step_ns * 10 >= c.ns;
    const bool long_number = std::llabs(ns) >= c.ns * 1000 && step_ns * 1000 >= c.ns;
    if (step_fits || long_number) u = c;
  }
  int decimals = 0;
  for (int64_t s = step_ns; s < u.ns && decimals < 9; s *= 10) ++decimals;
  return fmt::format("{:.{}f} {}", static_cast<double>(ns) / u.ns, decimals, u.name);
}

std::string FormatDuration(int64_t ns) {
  const char* unit = "ns";
  double v = static_cast<double>(ns);
  if (std::llabs(ns) >= 1000000000) {
    v /= 1e9;
    unit = "s";
  } else if (std::llabs(ns) >= 1000000) {
    v /= 1e6;
    unit = "ms";
  } else if (std::llabs(ns) >= 1000) {
    v /= 1e3;
    unit = "us";
  } else {
    return fmt::format("{} ns", ns);
  }
  const double a = std::fabs(v);
  return fmt::format("{:.{}f} {}", v, a >= 100 ? 0 : a >= 10 ? 1 : 2, unit);
}

}  // namespace ncclrr::viewer
