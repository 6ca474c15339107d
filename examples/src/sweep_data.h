// The sweep scenario's data, nccl-tests style: every rank's input element is a pure function of
// (seed, rank, element), so each rank computes what every collective must leave in its own
// receive buffer without talking to the others. Values are built from raw bits (random sign and
// mantissa, exponent of 2^-1 or 2^0), so they are exact in their datatype whatever it is.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nccl.h>

namespace ncclrr::example {

struct DType {
  ncclDataType_t nccl;
  const char* name;
  int bytes;
  enum Class { kSigned, kUnsigned, kFloat } cls;
  int ebits = 0, mbits = 0;  // floats: exponent and mantissa bits
  bool finite_only = false;  // e4m3 ("FN"): no infinity, one NaN pattern per sign
};

// Every NCCL datatype (fp8 included).
const std::vector<DType>& AllDTypes();
const DType& DTypeOf(ncclDataType_t t);

// What one input element looks like.
enum class Fill {
  kPlain,    // random sign and mantissa; integers: the full width
  kSameInt,  // integer avg: the same small value on every rank, so sum / N is exact
  kAmp,      // floats with fp16-style overflow: +Inf, NaN, -Inf against +Inf, and values whose
             // sum overflows the type, at fixed element positions
};

struct Seed {
  uint64_t call;  // distinguishes the calls of a run
  Fill fill;
};

// The raw bits (low `bytes` bytes) of rank `rank`'s input element i.
uint64_t InputBits(const DType& t, Seed s, int rank, uint64_t i);

// One expected output element and whether `got` (raw bits) is an acceptable result. Reductions
// of floats allow for NCCL's summation order and rounding (a bound on the error, not a
// statistical tolerance); copies and integer reductions must match bit for bit.
struct Expected {
  bool exact = true;
  uint64_t bits = 0;  // exact
  double value = 0;   // floats: NaN, +-Inf (the type overflowed) or finite within `tol`
  double tol = 0;
  bool Accepts(const DType& t, uint64_t got) const;
};

// Copy of one element (broadcast, gathers, all-to-all, send/recv).
Expected CopyOf(uint64_t bits);
// Reduction with `op` over the ranks' elements `bits[0..n)` (rank order).
Expected Reduced(const DType& t, ncclRedOp_t op, const uint64_t* bits, int n);

double DecodeFloat(const DType& t, uint64_t bits);
std::string Describe(const DType& t, uint64_t bits);  // the value, for wrong-result messages

}  // namespace ncclrr::example
