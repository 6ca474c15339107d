#include "models/intervals.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace ncclrr::viewer {

void Intervals::Finish(std::vector<uint32_t>* perm) {
  const size_t n = begin.size();
  if (perm) {
    perm->resize(n);
    std::iota(perm->begin(), perm->end(), 0u);
  }
  if (!std::is_sorted(begin.begin(), begin.end())) {
    std::vector<uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return begin[a] < begin[b]; });
    std::vector<int64_t> b(n), e(n);
    for (size_t i = 0; i < n; ++i) {
      b[i] = begin[order[i]];
      e[i] = end[order[i]];
    }
    begin.swap(b);
    end.swap(e);
    if (perm) perm->swap(order);
  }
  max_end.resize(n);
  int64_t m = INT64_MIN;
  for (size_t i = 0; i < n; ++i) max_end[i] = m = std::max(m, end[i]);
}

size_t Intervals::FirstReaching(int64_t t) const {
  return static_cast<size_t>(std::lower_bound(max_end.begin(), max_end.end(), t) - max_end.begin());
}

size_t Intervals::FirstBeginningAt(int64_t t, size_t from) const {
  // Galloping search: during a frame the answer is usually a few hundred positions ahead, and
  // probing near `from` first stays in cache where a plain binary search over millions of
  // calls would miss on every probe.
  const size_t n = begin.size();
  if (from >= n || begin[from] >= t) return from;
  size_t lo = from, step = 1;  // begin[lo] < t
  while (lo + step < n && begin[lo + step] < t) {
    lo += step;
    step *= 2;
  }
  const size_t hi = std::min(lo + step, n);
  return static_cast<size_t>(std::lower_bound(begin.begin() + static_cast<ptrdiff_t>(lo + 1),
                                              begin.begin() + static_cast<ptrdiff_t>(hi), t) -
                             begin.begin());
}

uint8_t FlagsIn(const RunLook& look, size_t from, size_t to) {
  if (!look.flagged || look.flagged->empty() || from >= to) return 0;
  const auto& f = *look.flagged;
  uint8_t bits = 0;
  for (auto it = std::lower_bound(f.begin(), f.end(), static_cast<uint32_t>(from));
       it != f.end() && *it < to; ++it)
    bits |= (*look.flag_bits)[static_cast<size_t>(it - f.begin())];
  return bits;
}

void ComputeRuns(const Intervals& iv, const RunLook& look, const TimeAxis& axis,
                 std::vector<PixelRun>* out) {
  const size_t n = iv.size();
  if (n == 0) return;
  const int64_t t_end = axis.end_ns();
  const double right = axis.width_px + 1;
  auto style_at = [&](size_t i) -> uint8_t { return look.style ? (*look.style)[i] : 0; };
  const size_t first_out = out->size();
  for (size_t i = iv.FirstReaching(axis.origin_ns); i < n && iv.begin[i] <= t_end;) {
    const double x0 = axis.ToPixel(iv.begin[i]);
    const double x1 = axis.ToPixel(iv.end[i]);
    if (x1 - x0 >= 1.0) {  // wide enough to be drawn on its own
      PixelRun r;
      r.x0 = std::max(x0, -1.0);
      r.x1 = std::min(x1, right);
      r.first = static_cast<uint32_t>(i);
      r.count = 1;
      r.style = style_at(i);
      r.flags = FlagsIn(look, i, i + 1);
      out->push_back(r);
      ++i;
      continue;
    }
    // Everything that starts in this pixel column becomes one run.
    const double column = std::floor(std::max(x0, -1.0));
    int64_t next_t = axis.ToTime(column + 1);
    if (next_t <= iv.begin[i]) next_t = iv.begin[i] + 1;
    size_t j = iv.FirstBeginningAt(next_t, i + 1);
    // In a lane calls follow each other, so only the last one of the column can be wide: give it
    // its own run instead of stretching the merged look over it.
    if (j - 1 > i && axis.ToPixel(iv.end[j - 1]) - axis.ToPixel(iv.begin[j - 1]) >= 1.0) --j;
    const double reach = axis.ToPixel(std::max(iv.end[i], iv.end[j - 1]));
    PixelRun r;
    r.x0 = column;
    r.x1 = std::min(std::max(column + 1, reach), right);
    r.first = static_cast<uint32_t>(i);
    r.count = static_cast<uint32_t>(j - i);
    r.style = style_at(i);
    r.flags = FlagsIn(look, i, j);
    r.merged = j - i > 1;
    // Coalesce with the previous merged run when they touch and look the same.
    if (out->size() > first_out) {
      PixelRun& p = out->back();
      if (p.merged == r.merged && r.merged && p.style == r.style && p.flags == r.flags &&
          p.x1 >= r.x0 && p.first + p.count == r.first) {
        p.x1 = std::max(p.x1, r.x1);
        p.count += r.count;
        i = j;
        continue;
      }
    }
    out->push_back(r);
    i = j;
  }
}

}  // namespace ncclrr::viewer
