#pragma once
// The floating-point formats narrower than fp32 that NCCL reduces (fp16, bf16, fp8 e4m3 and
// e5m2), converted to and from float on the CPU exactly as CUDA converts them: round to nearest
// even; fp16 overflows to infinity, the fp8 formats saturate to their largest finite value
// (CUDA's __NV_SATFINITE default); NaN becomes the format's canonical NaN (sign dropped). The one
// codec of the host NCCL's arithmetic and of the sketch's reference values. Decoding is exact.
#include <cstdint>

namespace ncclrr {

uint16_t FloatToHalf(float f);
float HalfToFloat(uint16_t h);
uint16_t FloatToBf16(float f);
float Bf16ToFloat(uint16_t b);
uint8_t FloatToE4m3(float f);  // the "FN" layout: only S.1111.111 is NaN, no infinities
float E4m3ToFloat(uint8_t b);
uint8_t FloatToE5m2(float f);
float E5m2ToFloat(uint8_t b);

// Largest finite values: 65504 (fp16), 448 (e4m3), 57344 (e5m2).
double MaxFiniteHalf();
double MaxFiniteE4m3();
double MaxFiniteE5m2();

}  // namespace ncclrr
