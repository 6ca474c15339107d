#pragma once
// Bit-for-bit comparison of two sketches of the same bytes. Sketches of equal data at equal
// global indices are equal bit for bit (the arithmetic is fixed, docs/sketches.md), so any
// difference in a projection, Σx², a NaN/Inf count or a sampled value means the data differ.
// Every check that needs no tolerance compares this way: copies (identity.h), the send buffer
// before and after a call (race.h) and the outputs that NCCL makes identical on every rank.
#include <cstddef>

#include "ncclrr/trace/trace_data.h"

namespace ncclrr::sketch {

// NaN equals NaN: the GPU and the host make different NaN bits from the same operation.
bool SameValue(double a, double b);

struct SketchDifference {
  int dots = 0;         // projections that differ
  int worst_dot = -1;   // the projection with the largest difference (NaN counts as largest)
  double largest = 0;   // |difference| of that projection
  bool sumsq = false;   // Σx² differs
  bool counts = false;  // NaN, +Inf or -Inf counts differ
  bool samples_comparable = false;  // same sample indices
  int samples = 0;                  // sampled values that differ
  int first_sample = -1;            // index (into samples) of the first that differs
  bool same() const { return dots == 0 && !sumsq && !counts && samples == 0; }
};

// Compares every field of `a` and `b`; the samples only when they sit at the same indices.
SketchDifference CompareSketches(const SketchData& a, const SketchData& b);

}  // namespace ncclrr::sketch
