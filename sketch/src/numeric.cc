#include "ncclrr/sketch/numeric.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "float_env.h"
#include "ncclrr/base/float_formats.h"
#include "ncclrr/trace/records.h"
#include "sketch_core.h"

namespace ncclrr::sketch {
namespace {

template <typename T>
void StoreInt(double v, void* p) {
  // Truncate, then wrap into the type's width as the GPU's integer arithmetic would.
  const double t = std::trunc(v);
  const double m = std::fmod(t, 18446744073709551616.0);  // 2^64
  const uint64_t u = m >= 0 ? uint64_t(m) : uint64_t(0) - uint64_t(-m);
  const T out = static_cast<T>(u);
  std::memcpy(p, &out, sizeof(T));
}

}  // namespace

bool IsFloatDtype(uint8_t dtype) {
  return dtype >= uint8_t(Dtype::kFloat16) && dtype <= uint8_t(Dtype::kFloat8e5m2);
}

double DecodeElement(uint8_t dtype, const void* p) {
  double out = std::numeric_limits<double>::quiet_NaN();
  core::DispatchDtype(dtype, [&](auto traits) {
    using D = decltype(traits);
    typename D::Raw raw;
    std::memcpy(&raw, p, sizeof(raw));
    IeeeFloatScope ieee;
    out = core::SampleValue<D>(raw);
  });
  return out;
}

void EncodeElement(uint8_t dtype, double v, void* p) {
  IeeeFloatScope ieee;
  switch (Dtype(dtype)) {
    case Dtype::kInt8:
      return StoreInt<int8_t>(v, p);
    case Dtype::kUint8:
      return StoreInt<uint8_t>(v, p);
    case Dtype::kInt32:
      return StoreInt<int32_t>(v, p);
    case Dtype::kUint32:
      return StoreInt<uint32_t>(v, p);
    case Dtype::kInt64:
      return StoreInt<int64_t>(v, p);
    case Dtype::kUint64:
      return StoreInt<uint64_t>(v, p);
    case Dtype::kFloat64:
      std::memcpy(p, &v, 8);
      return;
    case Dtype::kFloat32: {
      const float f = float(v);
      std::memcpy(p, &f, 4);
      return;
    }
    case Dtype::kFloat16: {
      const uint16_t h = FloatToHalf(float(v));
      std::memcpy(p, &h, 2);
      return;
    }
    case Dtype::kBfloat16: {
      const uint16_t h = FloatToBf16(float(v));
      std::memcpy(p, &h, 2);
      return;
    }
    case Dtype::kFloat8e4m3:
      *static_cast<uint8_t*>(p) = FloatToE4m3(float(v));
      return;
    case Dtype::kFloat8e5m2:
      *static_cast<uint8_t*>(p) = FloatToE5m2(float(v));
      return;
  }
}

void DecodeBuffer(uint8_t dtype, const void* p, uint64_t n, double* out) {
  const size_t size = DtypeSize(dtype);
  core::DispatchDtype(dtype, [&](auto traits) {
    using D = decltype(traits);
    IeeeFloatScope ieee;
    for (uint64_t i = 0; i < n; ++i) {
      typename D::Raw raw;
      std::memcpy(&raw, static_cast<const uint8_t*>(p) + i * size, sizeof(raw));
      out[i] = core::SampleValue<D>(raw);
    }
  });
}

void EncodeBuffer(uint8_t dtype, const double* v, uint64_t n, void* p) {
  const size_t size = DtypeSize(dtype);
  for (uint64_t i = 0; i < n; ++i) EncodeElement(dtype, v[i], static_cast<uint8_t*>(p) + i * size);
}

namespace {
struct FloatFacts {
  int u_exp;         // unit roundoff 2^u_exp
  int half_sub_exp;  // half the smallest subnormal 2^half_sub_exp
  double max;
};
// Indexed by ncclDataType_t - kFloat16: fp16, fp32, fp64, bf16, e4m3, e5m2.
const FloatFacts kFacts[] = {{-11, -25, 65504.0},
                             {-24, -150, double(std::numeric_limits<float>::max())},
                             {-53, -1075, std::numeric_limits<double>::max()},
                             {-8, -134, 3.3895313892515355e38},
                             {-4, -10, 448.0},
                             {-3, -17, 57344.0}};
const FloatFacts* FactsOf(uint8_t dtype) {
  return IsFloatDtype(dtype) ? &kFacts[dtype - uint8_t(Dtype::kFloat16)] : nullptr;
}
}  // namespace

double UnitRoundoff(uint8_t dtype) {
  const FloatFacts* f = FactsOf(dtype);
  return f ? std::ldexp(1.0, f->u_exp) : 0;
}
double HalfMinSubnormal(uint8_t dtype) {
  const FloatFacts* f = FactsOf(dtype);
  return f ? std::ldexp(1.0, f->half_sub_exp) : 0;
}
double MaxFinite(uint8_t dtype) {
  const FloatFacts* f = FactsOf(dtype);
  return f ? f->max : 0;
}

double AvgScalar(uint8_t dtype, int nranks) {
  if (nranks <= 0) return 0;
  if (dtype == uint8_t(Dtype::kFloat64)) return 1.0 / nranks;
  const float f = float(1.0 / nranks);
  uint8_t buf[8];
  EncodeElement(dtype, double(f), buf);
  return DecodeElement(dtype, buf);
}

}  // namespace ncclrr::sketch
