#include "identity_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "finish.h"
#include "ncclrr/sketch/compare.h"
#include "ncclrr/sketch/numeric.h"
#include "ncclrr/sketch/tolerance.h"
#include "sketch_core.h"

namespace ncclrr::sketch {
namespace {

uint64_t NonFinite(const SketchData& s) { return s.nan + s.posinf + s.neginf; }
bool Overflowed(const SketchData& s) {
  if (!std::isfinite(s.sumsq)) return true;
  for (double d : s.dots)
    if (!std::isfinite(d)) return true;
  return false;
}
std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

BlockVerdict MissingBlock(uint64_t first, uint64_t count, std::string detail) {
  BlockVerdict bv;
  bv.first = first;
  bv.count = count;
  bv.verdict = Verdict::kMissingSketch;
  bv.detail = std::move(detail);
  return bv;
}

BlockVerdict CheckCopyBlock(const SketchData& recv, const SketchData& send, int source_rank) {
  BlockVerdict bv;
  bv.first = recv.first;
  bv.count = recv.count;
  const SketchDifference d = CompareSketches(recv, send);
  bv.error = d.largest;
  bv.worst_dot = d.worst_dot;
  if (d.same()) return bv;
  bv.verdict = Verdict::kWrongCopy;
  const std::string from = source_rank >= 0 ? "rank " + std::to_string(source_rank) : "the sender";
  bv.detail = "the received data differs from what " + from + " sent: " + std::to_string(d.dots) +
              " of 16 projections and " + std::to_string(d.samples) + " of " +
              std::to_string(recv.samples.size()) +
              " sampled values differ (a copy must match bit for bit; largest projection "
              "difference " +
              Num(bv.error) + ")";
  return bv;
}

BlockVerdict CheckReductionBlock(const SketchData& recv,
                                 const std::vector<const SketchData*>& sends,
                                 const std::vector<double>& scalars, bool premul, uint8_t dtype,
                                 const ToleranceModel& model) {
  BlockVerdict bv;
  bv.first = recv.first;
  bv.count = recv.count;
  // Non-finite values: every non-finite input position stays non-finite under sum-like ops.
  uint64_t max_nan = 0, max_nonfinite = 0;
  for (const SketchData* s : sends) {
    max_nan = std::max(max_nan, s->nan);
    max_nonfinite = std::max(max_nonfinite, NonFinite(*s));
  }
  if (max_nonfinite > 0 || NonFinite(recv) > 0) {
    if (recv.nan < max_nan || NonFinite(recv) < max_nonfinite) {
      bv.verdict = Verdict::kNonFiniteLost;
      bv.detail = "the output holds " + std::to_string(NonFinite(recv)) + " NaN/Inf (" +
                  std::to_string(recv.nan) + " NaN) but an input holds " +
                  std::to_string(max_nonfinite) + " (" + std::to_string(max_nan) +
                  " NaN): a sum keeps every non-finite input";
    } else {
      bv.verdict = Verdict::kUncheckedNonFinite;
      bv.detail = "NaN/Inf present (consistent counts): projections not comparable";
    }
    return bv;
  }
  if (IsIntDtype(dtype)) {
    const uint64_t mask = core::IntResidueMask(int(DtypeSize(dtype)));
    for (int k = 0; k < kSketchDots; ++k) {
      uint64_t expect = 0;
      for (size_t r = 0; r < sends.size(); ++r) {
        const uint64_t s = uint64_t(int64_t(std::llround(scalars[r])));
        expect += s * uint64_t(sends[r]->dots[k]);
      }
      const uint64_t diff = (uint64_t(recv.dots[k]) - expect) & mask;
      const double e = double(std::min(diff, (mask - diff + 1) & mask));
      if (e > bv.error) {
        bv.error = e;
        bv.worst_dot = k;
      }
    }
    if (bv.error > 0) {
      bv.verdict = Verdict::kWrongSum;
      bv.detail = "integer sum differs by " + Num(bv.error) + " (modulo 2^width) in projection " +
                  std::to_string(bv.worst_dot) + "; integer sums are exact";
    }
    return bv;
  }
  bool overflow = Overflowed(recv);
  std::vector<double> send_sumsq;
  for (const SketchData* s : sends) {
    overflow = overflow || Overflowed(*s);
    send_sumsq.push_back(s->sumsq);
  }
  if (overflow) {
    bv.verdict = Verdict::kUncheckedOverflow;
    bv.detail = "a sketch overflowed (values beyond the fp32 range of its partial sums)";
    return bv;
  }
  const ReductionTolerance tol =
      ToleranceForReduction(model, dtype, recv.count, send_sumsq, scalars, premul, recv.sumsq);
  double worst_ratio = -1;
  std::vector<double> scaled(sends.size());
  for (int k = 0; k < kSketchDots; ++k) {
    double expect = 0;
    for (size_t r = 0; r < sends.size(); ++r) {
      scaled[r] = scalars[r] * sends[r]->dots[k];
      expect += scaled[r];
    }
    const double e = std::fabs(recv.dots[k] - expect);
    const double t = tol.ForDot(recv.dots[k], scaled);
    const double ratio = t > 0 ? e / t : (e > 0 ? INFINITY : 0);
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      bv.error = e;
      bv.tolerance = t;
      bv.worst_dot = k;
    }
  }
  if (worst_ratio > 1) {
    bv.verdict = Verdict::kWrongSum;
    bv.detail = "the output is off by " + Num(bv.error) + " in projection " +
                std::to_string(bv.worst_dot) + " where rounding explains at most " +
                Num(bv.tolerance) + " (" + Num(worst_ratio) +
                "x): it is not the combination of what the ranks sent";
  }
  return bv;
}

}  // namespace ncclrr::sketch
