#include "ncclrr/gputiming/clock_map.h"

#include <algorithm>

#include "ncclrr/trace/records.h"

namespace ncclrr::gputiming {

ClockMap::ClockMap(Clock foreign, Clock monotonic, size_t max_points, int64_t min_spacing_ns)
    : foreign_(std::move(foreign)),
      monotonic_(monotonic ? std::move(monotonic)
                           : Clock([] { return static_cast<uint64_t>(MonotonicNs()); })),
      max_points_(std::max<size_t>(max_points, 2)),
      min_spacing_ns_(min_spacing_ns) {}

int64_t ClockMap::Calibrate(int samples) {
  int64_t best_width = INT64_MAX;
  Point best{};
  for (int i = 0; i < std::max(samples, 1); ++i) {
    const uint64_t before = monotonic_();
    const uint64_t f = foreign_();
    const uint64_t after = monotonic_();
    const int64_t width = static_cast<int64_t>(after - before);
    if (width < best_width) {
      best_width = width;
      const int64_t mid = static_cast<int64_t>(before + (after - before) / 2);
      best = {f, mid - static_cast<int64_t>(f), width};
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!points_.empty() &&
      static_cast<int64_t>(best.foreign - points_.back().foreign) < min_spacing_ns_) {
    // Too close to the last point (or the foreign clock stepped back): keep the tighter one.
    if (best.width <= points_.back().width || best.foreign <= points_.back().foreign)
      points_.back() = best;
  } else {
    points_.push_back(best);
  }
  if (points_.size() > max_points_) points_.erase(points_.begin());
  return best_width / 2;
}

int64_t ClockMap::ToMonotonic(uint64_t foreign_ns) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto f = static_cast<int64_t>(foreign_ns);
  if (points_.empty()) return f;
  auto hi = std::lower_bound(points_.begin(), points_.end(), foreign_ns,
                             [](const Point& p, uint64_t v) { return p.foreign < v; });
  if (hi == points_.begin()) return f + hi->offset;
  if (hi == points_.end()) return f + points_.back().offset;
  const Point& lo = *(hi - 1);
  const double span = static_cast<double>(hi->foreign - lo.foreign);
  const double frac = static_cast<double>(foreign_ns - lo.foreign) / span;
  const double offset =
      static_cast<double>(lo.offset) + frac * static_cast<double>(hi->offset - lo.offset);
  return f + static_cast<int64_t>(offset);
}

size_t ClockMap::points() const {
  std::lock_guard<std::mutex> lock(mu_);
  return points_.size();
}

}  // namespace ncclrr::gputiming
