#include "ncclrr/base/float_formats.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace ncclrr {
namespace {

// An IEEE-style minifloat: sign, exp_bits, man_bits.
struct MiniFormat {
  int exp_bits, man_bits;
  bool fn;        // e4m3 "FN": the top exponent holds finite values; only all-ones is NaN
  bool saturate;  // overflow (and infinite input) gives the largest finite value
  uint32_t nan;   // NaN encoding without sign
};
constexpr MiniFormat kHalf{5, 10, false, false, 0x7e00};
constexpr MiniFormat kE4M3{4, 3, true, true, 0x7f};
constexpr MiniFormat kE5M2{5, 2, false, true, 0x7f};

double MaxOf(const MiniFormat& f) {
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  const int emax = f.fn ? (1 << f.exp_bits) - 1 - bias : (1 << f.exp_bits) - 2 - bias;
  const int top_man = f.fn ? (1 << f.man_bits) - 2 : (1 << f.man_bits) - 1;
  return std::ldexp(1.0 + double(top_man) / double(1 << f.man_bits), emax);
}

// Round-to-nearest-even encoding of a float (sign in the top bit). The division by the quantum
// is exact, so nearbyint rounds the exact value.
uint32_t EncodeMini(float value, const MiniFormat& f) {
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  const int emin = 1 - bias;
  const uint32_t sign = std::signbit(value) ? 1u << (f.exp_bits + f.man_bits) : 0u;
  if (std::isnan(value)) return f.nan;
  const uint32_t inf_bits = uint32_t((1 << f.exp_bits) - 1) << f.man_bits;
  const double max = MaxOf(f);
  double a = std::fabs(double(value));
  if (std::isinf(a)) a = max * 4;  // handled as an overflow below
  if (a == 0) return sign;
  const int e = std::max(std::ilogb(a), emin);
  const double quantum = std::ldexp(1.0, e - f.man_bits);
  const double r = std::nearbyint(a / quantum) * quantum;
  if (r > max) return sign | (f.saturate ? EncodeMini(float(max), f) : inf_bits);
  if (r == 0) return sign;
  const int er = std::ilogb(r);
  if (er < emin) return sign | uint32_t(r / std::ldexp(1.0, emin - f.man_bits));
  const uint32_t man = uint32_t((r / std::ldexp(1.0, er) - 1.0) * double(1 << f.man_bits));
  return sign | (uint32_t(er + bias) << f.man_bits) | man;
}

float DecodeMini(uint32_t bits, const MiniFormat& f) {
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  const int top = (1 << f.exp_bits) - 1;
  const int ef = int(bits >> f.man_bits) & top;
  const uint32_t mf = bits & ((1u << f.man_bits) - 1);
  const float sign = (bits >> (f.exp_bits + f.man_bits)) & 1 ? -1.0f : 1.0f;
  if (f.fn && ef == top && mf == (1u << f.man_bits) - 1) return NAN;
  if (!f.fn && ef == top) return mf ? NAN : sign * INFINITY;
  if (ef == 0) return sign * std::ldexp(float(mf), 1 - bias - f.man_bits);
  return sign * std::ldexp(1.0f + float(mf) / float(1u << f.man_bits), ef - bias);
}

struct Fp8Tables {
  float e4m3[256], e5m2[256];
  Fp8Tables() {
    for (uint32_t i = 0; i < 256; ++i) {
      e4m3[i] = DecodeMini(i, kE4M3);
      e5m2[i] = DecodeMini(i, kE5M2);
    }
  }
};
const Fp8Tables& Tables() {
  static const Fp8Tables t;
  return t;
}

}  // namespace

uint16_t FloatToHalf(float f) { return uint16_t(EncodeMini(f, kHalf)); }
float HalfToFloat(uint16_t h) { return DecodeMini(h, kHalf); }

uint16_t FloatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (std::isnan(f)) return uint16_t((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest even
  return uint16_t(bits >> 16);
}

float Bf16ToFloat(uint16_t b) {
  const uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint8_t FloatToE4m3(float f) { return uint8_t(EncodeMini(f, kE4M3)); }
float E4m3ToFloat(uint8_t b) { return Tables().e4m3[b]; }
uint8_t FloatToE5m2(float f) { return uint8_t(EncodeMini(f, kE5M2)); }
float E5m2ToFloat(uint8_t b) { return Tables().e5m2[b]; }

double MaxFiniteHalf() { return MaxOf(kHalf); }
double MaxFiniteE4m3() { return MaxOf(kE4M3); }
double MaxFiniteE5m2() { return MaxOf(kE5M2); }

}  // namespace ncclrr
