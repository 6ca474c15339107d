#include "sweep_data.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

namespace ncclrr::example {
namespace {

uint64_t Mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t Mask(const DType& t) { return t.bytes == 8 ? ~0ull : (1ull << (8 * t.bytes)) - 1; }
int Bias(const DType& t) { return (1 << (t.ebits - 1)) - 1; }
uint64_t ExpMax(const DType& t) { return (1ull << t.ebits) - 1; }

int64_t Signed(const DType& t, uint64_t bits) {
  const int shift = 64 - 8 * t.bytes;
  return static_cast<int64_t>(bits << shift) >> shift;
}

uint64_t FloatBits(const DType& t, uint64_t sign, uint64_t exp, uint64_t mant) {
  return (sign << (t.ebits + t.mbits)) | (exp << t.mbits) | (mant & ((1ull << t.mbits) - 1));
}

// The largest finite value (IEEE-like types: the exponent field below all-ones).
double MaxFinite(const DType& t) {
  if (t.finite_only)
    return std::ldexp(2.0 - std::ldexp(1.0, 1 - t.mbits), int(ExpMax(t)) - Bias(t));
  return std::ldexp(2.0 - std::ldexp(1.0, -t.mbits), int(ExpMax(t)) - 1 - Bias(t));
}

// A float result as the type holds it: beyond the largest finite value plus half an ulp it
// became infinity (fp16 overflow in AMP).
double Saturated(const DType& t, double v) {
  if (!std::isfinite(v) || t.finite_only) return v;
  const double edge = MaxFinite(t) + std::ldexp(1.0, int(ExpMax(t)) - 2 - Bias(t) - t.mbits);
  if (std::fabs(v) >= edge) return v > 0 ? INFINITY : -INFINITY;
  return v;
}

}  // namespace

const std::vector<DType>& AllDTypes() {
  static const std::vector<DType> all = {
      {ncclInt8, "int8", 1, DType::kSigned},
      {ncclUint8, "uint8", 1, DType::kUnsigned},
      {ncclInt32, "int32", 4, DType::kSigned},
      {ncclUint32, "uint32", 4, DType::kUnsigned},
      {ncclInt64, "int64", 8, DType::kSigned},
      {ncclUint64, "uint64", 8, DType::kUnsigned},
      {ncclFloat16, "half", 2, DType::kFloat, 5, 10},
      {ncclFloat32, "float", 4, DType::kFloat, 8, 23},
      {ncclFloat64, "double", 8, DType::kFloat, 11, 52},
      {ncclBfloat16, "bfloat16", 2, DType::kFloat, 8, 7},
      {ncclFloat8e4m3, "fp8e4m3", 1, DType::kFloat, 4, 3, true},
      {ncclFloat8e5m2, "fp8e5m2", 1, DType::kFloat, 5, 2},
  };
  return all;
}

const DType& DTypeOf(ncclDataType_t t) {
  for (const DType& d : AllDTypes())
    if (d.nccl == t) return d;
  return AllDTypes().front();
}

double DecodeFloat(const DType& t, uint64_t bits) {
  if (t.nccl == ncclFloat32) {
    const uint32_t b = static_cast<uint32_t>(bits);
    float f;
    std::memcpy(&f, &b, sizeof f);
    return f;
  }
  if (t.nccl == ncclFloat64) {
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return d;
  }
  const uint64_t mmask = (1ull << t.mbits) - 1;
  const bool neg = (bits >> (t.ebits + t.mbits)) & 1;
  const uint64_t exp = (bits >> t.mbits) & ExpMax(t), mant = bits & mmask;
  double v;
  if (exp == ExpMax(t) && !t.finite_only) {
    v = mant != 0 ? NAN : INFINITY;
  } else if (exp == ExpMax(t) && mant == mmask) {
    v = NAN;
  } else if (exp == 0) {
    v = std::ldexp(double(mant), 1 - Bias(t) - t.mbits);
  } else {
    v = std::ldexp(double(mant | (1ull << t.mbits)), int(exp) - Bias(t) - t.mbits);
  }
  return neg ? -v : v;
}

uint64_t InputBits(const DType& t, Seed s, int rank, uint64_t i) {
  if (t.cls != DType::kFloat) {
    if (s.fill != Fill::kSameInt) return Mix(Mix(s.call * 1000003 + uint64_t(rank)) ^ i) & Mask(t);
    // 4 bits of headroom: a sum over up to 16 ranks neither wraps nor leaves the type.
    const int w = 8 * t.bytes;
    const uint64_t h = Mix(Mix(s.call) ^ i) >> (64 - (w - 4));
    return (t.cls == DType::kSigned ? h - (1ull << (w - 5)) : h) & Mask(t);
  }
  const uint64_t h = Mix(Mix(s.call * 1000003 + uint64_t(rank)) ^ i);
  if (s.fill == Fill::kAmp) {
    const bool last = rank > 0;  // rank 0 against every other rank
    if (i % 61 == 3 && rank == 0) return FloatBits(t, 0, ExpMax(t), 0);                 // +Inf
    if (i % 67 == 5 && last) return FloatBits(t, 0, ExpMax(t), 1ull << (t.mbits - 1));  // NaN
    if (i % 73 == 9) return FloatBits(t, rank == 0 ? 0 : 1, ExpMax(t), 0);              // Inf-Inf
    if (i % 71 == 7) return FloatBits(t, 0, ExpMax(t) - 1, h >> 8);  // >= max/2: the sum overflows
  }
  return FloatBits(t, h & 1, uint64_t(Bias(t) - 1) + ((h >> 1) & 1), h >> 8);
}

bool Expected::Accepts(const DType& t, uint64_t got) const {
  if (exact) return (got & Mask(t)) == (bits & Mask(t));
  const double g = DecodeFloat(t, got);
  if (std::isnan(value)) return std::isnan(g);
  if (std::isinf(value)) return g == value;
  return std::isfinite(g) && std::fabs(g - value) <= tol;
}

Expected CopyOf(uint64_t bits) {
  Expected e;
  e.bits = bits;
  return e;
}

Expected Reduced(const DType& t, ncclRedOp_t op, const uint64_t* bits, int n) {
  Expected e;
  if (t.cls != DType::kFloat) {
    uint64_t acc = bits[0];
    for (int r = 1; r < n; ++r) {
      const uint64_t b = bits[r];
      const bool less =
          t.cls == DType::kSigned ? Signed(t, b) < Signed(t, acc) : (b & Mask(t)) < (acc & Mask(t));
      switch (op) {
        case ncclSum:
        case ncclAvg:
          acc += b;
          break;
        case ncclProd:
          acc *= b;
          break;
        case ncclMax:
          if (!less && b != acc) acc = b;
          break;
        case ncclMin:
          if (less) acc = b;
          break;
        default:
          break;
      }
    }
    if (op == ncclAvg) {  // the inputs are the same on every rank (Fill::kSameInt)
      acc = t.cls == DType::kSigned ? uint64_t(Signed(t, acc) / n) : (acc & Mask(t)) / n;
    }
    e.bits = acc & Mask(t);
    return e;
  }
  e.exact = op == ncclMax || op == ncclMin;
  const double u = std::ldexp(1.0, -t.mbits);  // twice the unit roundoff: generous
  const double tiny = std::ldexp(1.0, 2 - Bias(t) - t.mbits);
  double v = DecodeFloat(t, bits[0]), mag = std::fabs(v);
  uint64_t pick = bits[0];
  for (int r = 1; r < n; ++r) {
    const double x = DecodeFloat(t, bits[r]);
    mag += std::fabs(x);
    if (op == ncclProd) {
      v *= x;
    } else if (op == ncclMax || op == ncclMin) {
      if (op == ncclMax ? x > v : x < v) v = x, pick = bits[r];
    } else {
      v += x;
    }
  }
  if (e.exact) {
    e.bits = pick;
    return e;
  }
  if (op == ncclProd) {
    e.value = Saturated(t, v);
    e.tol = (n + 1) * u * std::fabs(v) + tiny;
  } else if (op == ncclAvg) {  // NCCL: each input times the type's rounding of 1/N, then a sum
    e.value = Saturated(t, v / n);
    e.tol = (n + 2) * u * mag / n + tiny;
  } else {
    e.value = Saturated(t, v);
    e.tol = (n + 1) * u * mag + tiny;
  }
  return e;
}

std::string Describe(const DType& t, uint64_t bits) {
  char buf[64];
  if (t.cls == DType::kFloat)
    std::snprintf(buf, sizeof buf, "%.9g (0x%llx)", DecodeFloat(t, bits),
                  static_cast<unsigned long long>(bits & Mask(t)));
  else if (t.cls == DType::kSigned)
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(Signed(t, bits)));
  else
    std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(bits & Mask(t)));
  return buf;
}

}  // namespace ncclrr::example
