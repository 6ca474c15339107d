#pragma once
// Elements of the sketch algorithm — hashing and signs, exact arithmetic, datatype decoding —
// shared word for word by the host implementation and the CUDA kernel (see sketch_core.h).
//
// Rules for this file: no allocation, no standard library beyond these headers, every
// function usable on host and device (NCCLRR_HD), every floating-point operation spelled out
// through Add/Mul (no contraction into FMA, no reassociation).
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__CUDACC__)
#define NCCLRR_HD __host__ __device__ __forceinline__
#define NCCLRR_UNROLL_V _Pragma("unroll")
#else
#define NCCLRR_HD inline
// Loops over a lane's positions and projections are short and of compile-time length: unrolled,
// the accumulators live in registers (and the host vectorizes the finite-row path).
#define NCCLRR_UNROLL_V _Pragma("GCC unroll 16")
#endif

namespace ncclrr::sketch::core {

inline constexpr int kDots = 16;              // signed projections per sketch
inline constexpr uint64_t kChunk = 4096;      // elements per fp32 partial
inline constexpr int kLanes = 32;             // lanes (GPU warp width) per chunk
inline constexpr uint32_t kClasses = 128;     // projection signs repeat with period 128
inline constexpr uint64_t kRaceStride = 8;    // the race sample re-reads chunks c % 8 == 0
inline constexpr uint32_t kMaxSamples = 256;  // raw values kept per sketch

// ---- Hashing and signs -------------------------------------------------------------------
// Element g (global index) gets 16 signs s_k(g) = eps(g) * eta_k(g mod 128):
//  * eps(g) is bit (g mod 64) of Mix64(g / 64): one 64-bit hash per 64 elements;
//  * eta_k(c) = (-1)^popcount(c & EtaMask(k)): 16 distinct rows of the 128x128 Hadamard matrix,
//    so the 16 projections of any class-balanced error are uncorrelated.
// Every element then costs one signed add into its position's accumulator; the 16 projections
// are formed once per lane and chunk (see LaneDots), which is what lets 1- and 2-byte types run
// at memory speed on the GPU.
NCCLRR_HD uint64_t Mix64(uint64_t z) {  // splitmix64 finalizer
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

NCCLRR_HD uint32_t EtaMask(int k) { return uint32_t((k + 1) * 79) & (kClasses - 1); }

NCCLRR_HD int Popcount32(uint32_t v) {
#if defined(__CUDA_ARCH__)
  return __popc(v);
#else
  return __builtin_popcount(v);
#endif
}

// Bit k set: projection k subtracts elements of class c (before eps is applied).
NCCLRR_HD uint32_t EtaWord(uint32_t c) {
  uint32_t w = 0;
  for (int k = 0; k < kDots; ++k) w |= uint32_t(Popcount32(c & EtaMask(k)) & 1) << k;
  return w;
}

// Bits v = 0..n-1 (n <= 32): eps(g + v).
NCCLRR_HD uint32_t EpsBits(uint64_t g, int n) {
  const uint32_t off = uint32_t(g & 63);
  uint64_t bits = Mix64(g >> 6) >> off;
  if (off + uint32_t(n) > 64) bits |= Mix64((g >> 6) + 1) << (64 - off);
  return uint32_t(bits) & (n >= 32 ? 0xffffffffu : ((1u << n) - 1));
}

// The same bits from the hash words of a chunk (a chunk of 4096 elements at global index g0
// touches at most 65 words): word i = Mix64(g0 / 64 + i). Computing them once per chunk instead
// of once per lane and row saves most of the hashing; the bits are identical.
inline constexpr int kChunkEpsWords = 65;
NCCLRR_HD uint64_t ChunkEpsWord(uint64_t g0, int i) { return Mix64((g0 >> 6) + uint64_t(i)); }
NCCLRR_HD uint32_t EpsBitsAt(const uint64_t* words, uint64_t g0, uint64_t pos, int n) {
  const uint64_t g = g0 + pos;
  const uint32_t off = uint32_t(g & 63);
  const uint64_t i = (g >> 6) - (g0 >> 6);
  uint64_t bits = words[i] >> off;
  if (off + uint32_t(n) > 64) bits |= words[i + 1] << (64 - off);
  return uint32_t(bits) & (n >= 32 ? 0xffffffffu : ((1u << n) - 1));
}

// ---- Exact arithmetic helpers --------------------------------------------------------------
NCCLRR_HD float AddF(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
NCCLRR_HD float MulF(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
NCCLRR_HD double AddD(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
NCCLRR_HD double MulD(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
#if defined(__CUDA_ARCH__)
NCCLRR_HD float BitsToF(uint32_t u) { return __uint_as_float(u); }
NCCLRR_HD uint32_t FToBits(float f) { return __float_as_uint(f); }
NCCLRR_HD double BitsToD(uint64_t u) { return __longlong_as_double((long long)u); }
NCCLRR_HD uint64_t DToBits(double d) { return (uint64_t)__double_as_longlong(d); }
#else
NCCLRR_HD float BitsToF(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
NCCLRR_HD uint32_t FToBits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
NCCLRR_HD double BitsToD(uint64_t u) {
  double d;
  memcpy(&d, &u, 8);
  return d;
}
NCCLRR_HD uint64_t DToBits(double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  return u;
}
#endif
NCCLRR_HD double I64ToD(int64_t v) {
#if defined(__CUDA_ARCH__)
  return __ll2double_rn(v);
#else
  return double(v);
#endif
}
NCCLRR_HD double U64ToD(uint64_t v) {
#if defined(__CUDA_ARCH__)
  return __ull2double_rn(v);
#else
  return double(v);
#endif
}
// x with its sign flipped when bit is 1 (exactly -x): a bitwise XOR, branch-free on both sides.
NCCLRR_HD float FlipF(float x, uint32_t bit) { return BitsToF(FToBits(x) ^ (bit << 31)); }
NCCLRR_HD double FlipD(double x, uint32_t bit) {
  return BitsToD(DToBits(x) ^ (uint64_t(bit) << 63));
}
inline constexpr uint64_t kCanonicalNaN = 0x7ff8000000000000ull;

// ---- Datatypes ---------------------------------------------------------------------------
// What an element is worth: finite (value in x), NaN, +Inf or -Inf.
enum ElemClass : uint32_t { kFinite = 0, kNaN = 1, kPosInf = 2, kNegInf = 3 };

enum class AccKind : uint8_t { kFloat32, kFloat64, kInt };

// Per-dtype traits. Raw: storage type. V: positions per lane (16 bytes of data per lane and row,
// at least 4 so that a row spans 128 classes). Acc: lane accumulator type.
// Decode(raw, &cls) returns the exact value of a finite element (exact for every format here,
// so any correct converter agrees with it bit for bit).
struct TraitsF32 {
  using Raw = uint32_t;
  using Acc = float;
  static constexpr AccKind kKind = AccKind::kFloat32;
  static constexpr int V = 4;
  static constexpr Raw kSpecialBits = 0x7f800000u;  // all set: NaN or Inf
  NCCLRR_HD static float Decode(Raw r, uint32_t* cls) {
    const uint32_t inf = (r >> 31) ? kNegInf : kPosInf;
    *cls = (r & kSpecialBits) != kSpecialBits ? kFinite : ((r & 0x007fffffu) ? kNaN : inf);
    return BitsToF(r);
  }
};
struct TraitsF64 {
  using Raw = uint64_t;
  using Acc = double;
  static constexpr AccKind kKind = AccKind::kFloat64;
  static constexpr int V = 4;
  static constexpr Raw kSpecialBits = 0x7ff0000000000000ull;
  NCCLRR_HD static double Decode(Raw r, uint32_t* cls) {
    const uint32_t inf = (r >> 63) ? kNegInf : kPosInf;
    const bool special = (r & kSpecialBits) == kSpecialBits;
    *cls = !special ? kFinite : ((r & 0x000fffffffffffffull) ? kNaN : inf);
    return BitsToD(r);
  }
};
// Narrow floats: the magnitude bits are placed into a float's exponent/mantissa (<< kShift) and
// scaled by a power of two (kScale, bits of a float; 0: none) — exact for normals and subnormals
// alike (it needs no flush-to-zero: the host guards MXCSR, the device compiles with -ftz=false).
// Non-finite: all of kSpecial set; NaN when any of kNanBits is set too, else +-Inf. e4m3 ("FN")
// has no infinities: kSpecial = kNanBits = 0x7f, so only S.1111.111 is special, and it is NaN.
template <typename R, int kV, uint32_t kSpecial, uint32_t kNanBits, int kShift, uint32_t kScale>
struct TraitsMinifloat {
  using Raw = R;
  using Acc = float;
  static constexpr AccKind kKind = AccKind::kFloat32;
  static constexpr int V = kV;
  static constexpr uint32_t kSign = 1u << (8 * sizeof(R) - 1);
  static constexpr R kSpecialBits = R(kSpecial);
  // Branch-free (the value of a special pattern is computed but never used).
  NCCLRR_HD static float Decode(Raw r, uint32_t* cls) {
    const uint32_t inf = (r & kSign) ? kNegInf : kPosInf;
    *cls = (r & kSpecial) != kSpecial ? kFinite : ((r & kNanBits) ? kNaN : inf);
    const float mag = BitsToF(uint32_t(r & (kSign - 1)) << kShift);
    const float scaled = kScale ? MulF(mag, BitsToF(kScale)) : mag;
    return BitsToF(FToBits(scaled) | (uint32_t(r & kSign) << (32 - 8 * sizeof(R))));
  }
};
using TraitsF16 = TraitsMinifloat<uint16_t, 8, 0x7c00u, 0x03ffu, 13, 0x77800000u /* 2^112 */>;
using TraitsBf16 = TraitsMinifloat<uint16_t, 8, 0x7f80u, 0x007fu, 16, 0u>;
using TraitsE4M3 = TraitsMinifloat<uint8_t, 16, 0x7fu, 0x7fu, 20, 0x7b800000u /* 2^120 */>;
using TraitsE5M2 = TraitsMinifloat<uint8_t, 16, 0x7cu, 0x03u, 21, 0x77800000u /* 2^112 */>;

// Integers: dots are exact in the type's wrapping width (accumulated in 32 or 64 bits, which
// wrap consistently); Σx² is a double. Decode returns the value as the accumulator type.
template <typename T, typename A, int kV>
struct TraitsInt {
  using Raw = T;
  using Acc = A;
  static constexpr AccKind kKind = AccKind::kInt;
  static constexpr int V = kV;
  NCCLRR_HD static A Decode(Raw r, uint32_t* cls) {
    *cls = kFinite;
    return A(r);  // sign extension is irrelevant modulo the type's width
  }
  NCCLRR_HD static double ToDouble(Raw r) {
    if constexpr (sizeof(T) == 8 && T(-1) < T(0)) return I64ToD(int64_t(r));
    if constexpr (sizeof(T) == 8) return U64ToD(uint64_t(r));
    return double(r);  // 8- and 32-bit values are exact in a double
  }
};
using TraitsI8 = TraitsInt<int8_t, uint32_t, 16>;
using TraitsU8 = TraitsInt<uint8_t, uint32_t, 16>;
using TraitsI32 = TraitsInt<int32_t, uint32_t, 4>;
using TraitsU32 = TraitsInt<uint32_t, uint32_t, 4>;
using TraitsI64 = TraitsInt<int64_t, uint64_t, 4>;
using TraitsU64 = TraitsInt<uint64_t, uint64_t, 4>;

// Row length (elements) and rows per chunk for a traits type.
template <class D>
inline constexpr uint32_t kRowElems = uint32_t(D::V) * kLanes;
template <class D>
inline constexpr uint32_t kRows = uint32_t(kChunk / kRowElems<D>);

// Modulus of an integer dtype's exact sketch, as stored in a double: 2^width, capped at 2^53
// (a homomorphic image of the 64-bit wrap that a double holds exactly).
NCCLRR_HD uint64_t IntResidueMask(int bytes) {
  return bytes == 1 ? 0xffull : bytes == 4 ? 0xffffffffull : ((1ull << 53) - 1);
}

// A sampled element widened to double: exact for floats, NaN canonical, infinities kept.
template <class D>
NCCLRR_HD double SampleValue(typename D::Raw r) {
  if constexpr (D::kKind == AccKind::kInt) {
    return D::ToDouble(r);
  } else {
    uint32_t cls;
    const auto x = D::Decode(r, &cls);
    if (cls == kNaN) return BitsToD(kCanonicalNaN);
    if (cls == kPosInf) return BitsToD(0x7ff0000000000000ull);
    if (cls == kNegInf) return BitsToD(0xfff0000000000000ull);
    return double(x);
  }
}

// Calls f(Traits{}) for an NCCL datatype code; false for an unknown code.
template <class F>
NCCLRR_HD bool DispatchDtype(uint32_t dtype, F&& f) {
  switch (dtype) {
    case 0:
      f(TraitsI8{});
      return true;
    case 1:
      f(TraitsU8{});
      return true;
    case 2:
      f(TraitsI32{});
      return true;
    case 3:
      f(TraitsU32{});
      return true;
    case 4:
      f(TraitsI64{});
      return true;
    case 5:
      f(TraitsU64{});
      return true;
    case 6:
      f(TraitsF16{});
      return true;
    case 7:
      f(TraitsF32{});
      return true;
    case 8:
      f(TraitsF64{});
      return true;
    case 9:
      f(TraitsBf16{});
      return true;
    case 10:
      f(TraitsE4M3{});
      return true;
    case 11:
      f(TraitsE5M2{});
      return true;
    default:
      return false;
  }
}

}  // namespace ncclrr::sketch::core
