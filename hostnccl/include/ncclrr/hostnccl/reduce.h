// Datatypes and reductions. Results are computed in rank order (input 0, then 1, ...) and rounded
// to the datatype after every step, so every rank gets bitwise the same result and a reference
// that reduces in rank order reproduces it exactly.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ncclrr::host {

// 0 for an invalid datatype.
size_t DtypeSize(int dtype);
bool DtypeIsFloat(int dtype);

// Reduction kinds after resolving ncclAvg and PreMulSum handles.
enum class RedKind : uint8_t { kSum, kProd, kMax, kMin, kAvg, kPreMulSum };

// out[i] = ins[0][i] (op) ins[1][i] (op) ... for `elems` elements of `dtype`. For kPreMulSum each
// input is first multiplied (in the datatype) by scalars[q]; for kAvg floats use NCCL's
// dtype-rounded 1/n pre-multiplication and integers divide the sum by n. `out` may not alias the
// inputs.
void Reduce(int dtype, RedKind op, void* out, const void* const* ins, int n, size_t elems,
            const double* scalars);

// Conversions of one element, for tests and references.
double LoadAsDouble(int dtype, const void* p);
void StoreFromDouble(int dtype, double v, void* p);

}  // namespace ncclrr::host
