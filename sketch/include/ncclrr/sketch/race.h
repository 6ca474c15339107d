#pragma once
// buffer_race and suspected_swap evidence from sketches.
//
// Race: the send buffer of an out-of-place call is sketched before the call in kFullAndRace mode
// (full sketch + the race sample: chunks c % 8 == 0 and 256 samples over the buffer) and its
// race sample is re-read after the call (kRaceOnly). Both are computed by the same arithmetic
// from the same bytes, so any difference — one bit of the dots, Σx², counts or samples — means
// the buffer changed while the collective could still read it. No tolerance is involved.
//
// Similarity: the 256 samples of two same-sized sketches sit at the same indices, so their
// cosine estimates the correlation of the two buffers (standard error ≈ (1 − c²)/√256 ≈ 0.06
// near 0). Gradients of one tensor correlate across data-parallel ranks; different tensors do
// not. "Rank 1's seq 12 looks like rank 0's seq 13 (0.91) rather than its seq 12 (0.03)".
#include <cstdint>
#include <string>

#include "ncclrr/trace/trace_data.h"

namespace ncclrr::sketch {

struct RaceEvidence {
  bool changed = false;
  bool dots_compared = false;  // false when only the samples could be compared
  int dots_differing = 0;
  int samples_compared = 0;
  int samples_differing = 0;
  std::string message;
};

// `before` is the race twin computed with the call's before-sketch (preferred: dots are
// compared) or, when no twin was recorded, the full before-sketch of a single-block buffer
// (then only the samples, taken at the same indices, are compared). `after` is the after-call
// race sample. Mismatched shapes give changed = false and a message saying why.
RaceEvidence CompareRaceSamples(const SketchData& before, const SketchData& after,
                                bool before_is_race_twin);

struct Similarity {
  double cosine = 0;
  int n = 0;             // sample pairs used (both finite, at equal indices)
  double std_error = 1;  // ≈ (1 − c²)/√n
  bool valid = false;    // false: different shapes/indices, or fewer than 8 usable pairs
};
Similarity SampleCosine(const SketchData& a, const SketchData& b);

// Is `mine` (rank A at seq k) more like `peer_other` (rank B at seq m) than like `peer_same`
// (rank B at seq k)? z compares the two correlations after Fisher's transform; confidence is
// the one-sided normal probability of that z. suspected: confidence ≥ 0.99, the other
// position's cosine at least 0.3 above the same position's and itself at least kSwapLikeCosine:
// looking less unlike the other position than the same one is not looking like it.
inline constexpr double kSwapLikeCosine = 0.5;
struct SwapEvidence {
  Similarity same;   // mine vs peer_same
  Similarity other;  // mine vs peer_other
  double z = 0;
  double confidence = 0;
  bool suspected = false;
};
SwapEvidence AssessSwap(const SketchData& mine, const SketchData& peer_same,
                        const SketchData& peer_other);

}  // namespace ncclrr::sketch
