#pragma once
// The tolerance of a floating-point reduction identity (docs/design.md "Data checks").
//
// For an output block, Δ_k = d_k(recv) − Σ_r s_r d_k(send_r). Three sources of rounding:
//  1. The reduction: recv = Σ_r s_r x_r + δ with ‖δ‖₂ ≤ σ_red = m·u·Σ_r |s_r|‖x_r‖₂
//     (+ m·h·√n for underflow), m = N−1 additions plus one multiplication per input for
//     avg/PreMulSum, u the datatype's unit roundoff, h half its smallest subnormal. The signs of
//     a projection are independent of δ, so Δ_k is sub-Gaussian with scale ‖δ‖₂ (Hoeffding):
//     P(|Δ_k| > z σ_red) ≤ 2 exp(−z²/2). The L1 bound caps it: |Δ_k| ≤ ‖δ‖₁ ≤ √n σ_red.
//  2. The sketches' own arithmetic: each sketch of a vector v carries an error of scale
//     σ_sk(v) = u_acc √D ‖v‖₂ (u_acc = 2^-24 for fp32 partials, 2^-53 for fp64 data; D the
//     depth of the summation tree: rows + positions per lane + 5 lane levels + chunk levels).
//  3. Forming Δ_k in fp64: bounded deterministically by 2^-52 (N+1) Σ|terms|.
// tolerance_k = min(z, √n)·σ_red + z·√(σ_sk(recv)² + Σ_r s_r² σ_sk(send_r)²) + (3).
// With K = 16 projections per block the stated false-positive bound per block check is
// 2K·exp(−z²/2): 2.2e-8 at the default z = 6.5. tests/sketch measures the real rate.
#include <cstdint>
#include <vector>

#include "ncclrr/trace/trace_data.h"

namespace ncclrr::sketch {

struct ToleranceModel {
  double z = 6.5;
  // The stated per-block false-positive bound, 2·16·exp(−z²/2).
  double FalsePositiveBound() const;
};

// σ_sk of a sketch: the scale of its own rounding error (sketch of `count` elements of dtype
// with Σx² = sumsq).
double SketchRoundingScale(uint8_t dtype, uint64_t count, double sumsq);

struct ReductionTolerance {
  double reduction = 0;  // min(z, √n)·σ_red
  double sketching = 0;  // z·√(Σ σ_sk²)
  // Tolerance of dot k given the terms it was formed from.
  double ForDot(double recv_dot, const std::vector<double>& scaled_send_dots) const;
};

// Tolerance for a block of `count` elements reduced over sends with Σx² `send_sumsq[r]` and
// scalars `scalars[r]`; `premul` adds the per-input multiplication rounding.
ReductionTolerance ToleranceForReduction(const ToleranceModel& model, uint8_t dtype, uint64_t count,
                                         const std::vector<double>& send_sumsq,
                                         const std::vector<double>& scalars, bool premul,
                                         double recv_sumsq);

}  // namespace ncclrr::sketch
