#include "ncclrr/sketch/race.h"

#include <cmath>

#include "ncclrr/sketch/compare.h"

namespace ncclrr::sketch {

RaceEvidence CompareRaceSamples(const SketchData& before, const SketchData& after,
                                bool before_is_race_twin) {
  RaceEvidence ev;
  if (before.count != after.count || before.dtype != after.dtype) {
    ev.message = "before and after sketches describe different buffers (" +
                 std::to_string(before.count) + " vs " + std::to_string(after.count) +
                 " elements); no race check";
    return ev;
  }
  const SketchDifference d = CompareSketches(before, after);
  if (before_is_race_twin) {
    ev.dots_compared = true;
    ev.dots_differing = d.dots;
    if (d.sumsq || d.counts) ev.dots_differing += d.dots == 0;  // Σx² or counts moved: count once
  }
  if (d.samples_comparable) {
    ev.samples_compared = int(before.samples.size());
    ev.samples_differing = d.samples;
  }
  ev.changed = ev.dots_differing > 0 || ev.samples_differing > 0;
  if (ev.changed) {
    ev.message = "the send buffer changed while the collective could read it: " +
                 (ev.dots_compared ? std::to_string(ev.dots_differing) +
                                         " of 16 projections of the re-read eighth differ, "
                                   : std::string()) +
                 std::to_string(ev.samples_differing) + " of " +
                 std::to_string(ev.samples_compared) +
                 " sampled values differ. Another stream (or the host) wrote it without waiting "
                 "for the collective: make that writer wait on the collective's stream";
  } else if (!ev.dots_compared && ev.samples_compared == 0) {
    ev.message = "nothing comparable: no race twin and no common samples";
  }
  return ev;
}

Similarity SampleCosine(const SketchData& a, const SketchData& b) {
  Similarity s;
  if (a.count != b.count || a.sample_idx != b.sample_idx || a.samples.size() != b.samples.size())
    return s;
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.samples.size(); ++i) {
    const double x = a.samples[i], y = b.samples[i];
    if (!std::isfinite(x) || !std::isfinite(y)) continue;
    ab += x * y;
    aa += x * x;
    bb += y * y;
    ++s.n;
  }
  if (s.n < 8) return s;
  s.valid = true;
  s.cosine = (aa > 0 && bb > 0) ? ab / std::sqrt(aa * bb) : 0;
  s.std_error = (1 - s.cosine * s.cosine) / std::sqrt(double(s.n));
  return s;
}

SwapEvidence AssessSwap(const SketchData& mine, const SketchData& peer_same,
                        const SketchData& peer_other) {
  SwapEvidence ev;
  ev.same = SampleCosine(mine, peer_same);
  ev.other = SampleCosine(mine, peer_other);
  if (!ev.same.valid || !ev.other.valid) return ev;
  // Fisher's z of each correlation has standard error 1/√(n−3); the difference of two
  // (dependent, sharing `mine`) is treated as independent, which is conservative for
  // positively correlated samples.
  auto fisher = [](double c) { return std::atanh(std::fmax(-0.999999, std::fmin(0.999999, c))); };
  const double se = std::sqrt(1.0 / (ev.same.n - 3) + 1.0 / (ev.other.n - 3));
  ev.z = (fisher(ev.other.cosine) - fisher(ev.same.cosine)) / se;
  ev.confidence = 0.5 * std::erfc(-ev.z / std::sqrt(2.0));
  ev.suspected = ev.confidence >= 0.99 && ev.other.cosine - ev.same.cosine >= 0.3 &&
                 ev.other.cosine >= kSwapLikeCosine;
  return ev;
}

}  // namespace ncclrr::sketch
