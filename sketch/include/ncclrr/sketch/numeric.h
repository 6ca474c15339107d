#pragma once
// Element conversions for every NCCL datatype (written here: no CUDA headers), and the numeric
// facts the tolerance model needs. Rounding is IEEE round-to-nearest-even throughout.
#include <cstdint>

namespace ncclrr::sketch {

// The value of one element as a double: exact for every datatype except 64-bit integers beyond
// 2^53 (rounded to nearest); NaN and infinities are kept.
double DecodeElement(uint8_t dtype, const void* p);

// Stores `v` into one element. Formats narrower than fp32 (fp16, bf16, fp8) are rounded from
// float, as CUDA's conversions and NCCL's scalars are: v is first rounded to float. fp8 formats
// saturate to their largest finite value (CUDA's __NV_SATFINITE default); fp16 overflows to
// infinity. Integers take the wrapped value of the truncated double.
void EncodeElement(uint8_t dtype, double v, void* p);

// Bulk forms of the two above for n consecutive elements.
void DecodeBuffer(uint8_t dtype, const void* p, uint64_t n, double* out);
void EncodeBuffer(uint8_t dtype, const double* v, uint64_t n, void* p);

// Unit roundoff u (half an ulp at 1) of a floating datatype: 2^-24 fp32, 2^-53 fp64, 2^-11 fp16,
// 2^-8 bf16, 2^-4 e4m3, 2^-3 e5m2; 0 for integers.
double UnitRoundoff(uint8_t dtype);
// Half the smallest subnormal: the absolute rounding error bound near zero; 0 for integers.
double HalfMinSubnormal(uint8_t dtype);
// Largest finite value of a floating datatype (0 for integers).
double MaxFinite(uint8_t dtype);
bool IsFloatDtype(uint8_t dtype);

// NCCL's ncclAvg pre-multiplier for floating types: 1/nranks rounded to float, then to the
// datatype (hostToDevRedOp in NCCL's enqueue.cc); fp64 uses the double 1/nranks.
double AvgScalar(uint8_t dtype, int nranks);

}  // namespace ncclrr::sketch
