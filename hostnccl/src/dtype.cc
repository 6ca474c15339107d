#include "ncclrr/hostnccl/reduce.h"

#include <cmath>
#include <cstring>
#include <type_traits>

#include "api_visibility.h"
#include "ncclrr/base/float_formats.h"

namespace ncclrr::host {
namespace {

// Traits: the stored type and how a value is loaded into / rounded back from the compute type.
template <int kDtype>
struct Traits;
#define NCCLRR_INT_TRAITS(D, T)           \
  template <>                             \
  struct Traits<D> {                      \
    using S = T;                          \
    using C = T;                          \
    static C Load(S s) { return s; }      \
    static S Store(C c) { return c; }     \
    static constexpr bool kFloat = false; \
  };
NCCLRR_INT_TRAITS(ncclInt8, int8_t)
NCCLRR_INT_TRAITS(ncclUint8, uint8_t)
NCCLRR_INT_TRAITS(ncclInt32, int32_t)
NCCLRR_INT_TRAITS(ncclUint32, uint32_t)
NCCLRR_INT_TRAITS(ncclInt64, int64_t)
NCCLRR_INT_TRAITS(ncclUint64, uint64_t)
#undef NCCLRR_INT_TRAITS
#define NCCLRR_FLOAT_TRAITS(D, T, CT, LOAD, STORE) \
  template <>                                      \
  struct Traits<D> {                               \
    using S = T;                                   \
    using C = CT;                                  \
    static C Load(S s) { return LOAD; }            \
    static S Store(C c) { return STORE; }          \
    static constexpr bool kFloat = true;           \
  };
NCCLRR_FLOAT_TRAITS(ncclFloat32, float, float, s, c)
NCCLRR_FLOAT_TRAITS(ncclFloat64, double, double, s, c)
NCCLRR_FLOAT_TRAITS(ncclFloat16, uint16_t, float, HalfToFloat(s), FloatToHalf(c))
NCCLRR_FLOAT_TRAITS(ncclBfloat16, uint16_t, float, Bf16ToFloat(s), FloatToBf16(c))
NCCLRR_FLOAT_TRAITS(ncclFloat8e4m3, uint8_t, float, E4m3ToFloat(s), FloatToE4m3(c))
NCCLRR_FLOAT_TRAITS(ncclFloat8e5m2, uint8_t, float, E5m2ToFloat(s), FloatToE5m2(c))
#undef NCCLRR_FLOAT_TRAITS

// Integer arithmetic wraps (as on the GPU) instead of overflowing into undefined behaviour.
template <typename C>
C Add(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    return C(U(a) + U(b));
  } else {
    return a + b;
  }
}
template <typename C>
C Mul(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    return C(U(a) * U(b));
  } else {
    return a * b;
  }
}

template <int kDtype>
void ReduceT(RedKind op, void* out_v, const void* const* ins_v, int n, size_t elems,
             const double* scalars) {
  using Tr = Traits<kDtype>;
  using S = typename Tr::S;
  using C = typename Tr::C;
  S* out = static_cast<S*>(out_v);
  const bool premul = op == RedKind::kPreMulSum || (op == RedKind::kAvg && Tr::kFloat);
  // Input q's pre-multiplier, rounded to the datatype as NCCL does before it multiplies.
  auto scalar_of = [&](int q) -> C {
    double s = op == RedKind::kAvg ? 1.0 / n : scalars[q];
    if constexpr (Tr::kFloat)
      return Tr::Load(Tr::Store(C(s)));
    else
      return C(static_cast<int64_t>(s));
  };
  for (int q = 0; q < n; ++q) {
    const S* in = static_cast<const S*>(ins_v[q]);
    const C s = premul ? scalar_of(q) : C(1);
    if (q == 0) {
      if (premul) {
        for (size_t i = 0; i < elems; ++i) out[i] = Tr::Store(Mul(Tr::Load(in[i]), s));
      } else {
        std::memcpy(out, in, elems * sizeof(S));
      }
      continue;
    }
    switch (op) {
      case RedKind::kSum:
      case RedKind::kAvg:
      case RedKind::kPreMulSum:
        if (premul) {
          for (size_t i = 0; i < elems; ++i) {
            const C x = Tr::Load(Tr::Store(Mul(Tr::Load(in[i]), s)));
            out[i] = Tr::Store(Add(Tr::Load(out[i]), x));
          }
        } else {
          for (size_t i = 0; i < elems; ++i)
            out[i] = Tr::Store(Add(Tr::Load(out[i]), Tr::Load(in[i])));
        }
        break;
      case RedKind::kProd:
        for (size_t i = 0; i < elems; ++i)
          out[i] = Tr::Store(Mul(Tr::Load(out[i]), Tr::Load(in[i])));
        break;
      case RedKind::kMax:
        for (size_t i = 0; i < elems; ++i) {
          const C a = Tr::Load(out[i]), b = Tr::Load(in[i]);
          out[i] = Tr::Store(b > a ? b : a);
        }
        break;
      case RedKind::kMin:
        for (size_t i = 0; i < elems; ++i) {
          const C a = Tr::Load(out[i]), b = Tr::Load(in[i]);
          out[i] = Tr::Store(b < a ? b : a);
        }
        break;
    }
  }
  if constexpr (!Tr::kFloat) {
    if (op == RedKind::kAvg) {
      for (size_t i = 0; i < elems; ++i) out[i] = S(out[i] / S(n));
    }
  }
}

}  // namespace

size_t DtypeSize(int dtype) {
  switch (dtype) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

bool DtypeIsFloat(int dtype) { return dtype >= ncclFloat16 && dtype < ncclNumTypes; }

#define NCCLRR_DTYPE_SWITCH(DT, EXPR_T) \
  switch (DT) {                         \
    case ncclInt8:                      \
      EXPR_T(ncclInt8);                 \
      break;                            \
    case ncclUint8:                     \
      EXPR_T(ncclUint8);                \
      break;                            \
    case ncclInt32:                     \
      EXPR_T(ncclInt32);                \
      break;                            \
    case ncclUint32:                    \
      EXPR_T(ncclUint32);               \
      break;                            \
    case ncclInt64:                     \
      EXPR_T(ncclInt64);                \
      break;                            \
    case ncclUint64:                    \
      EXPR_T(ncclUint64);               \
      break;                            \
    case ncclFloat16:                   \
      EXPR_T(ncclFloat16);              \
      break;                            \
    case ncclFloat32:                   \
      EXPR_T(ncclFloat32);              \
      break;                            \
    case ncclFloat64:                   \
      EXPR_T(ncclFloat64);              \
      break;                            \
    case ncclBfloat16:                  \
      EXPR_T(ncclBfloat16);             \
      break;                            \
    case ncclFloat8e4m3:                \
      EXPR_T(ncclFloat8e4m3);           \
      break;                            \
    case ncclFloat8e5m2:                \
      EXPR_T(ncclFloat8e5m2);           \
      break;                            \
    default:                            \
      break;                            \
  }

void Reduce(int dtype, RedKind op, void* out, const void* const* ins, int n, size_t elems,
            const double* scalars) {
#define NCCLRR_REDUCE(D) ReduceT<D>(op, out, ins, n, elems, scalars)
  NCCLRR_DTYPE_SWITCH(dtype, NCCLRR_REDUCE)
#undef NCCLRR_REDUCE
}

double LoadAsDouble(int dtype, const void* p) {
  double v = 0;
#define NCCLRR_LOAD(D)              \
  {                                 \
    typename Traits<D>::S s;        \
    std::memcpy(&s, p, sizeof(s));  \
    v = double(Traits<D>::Load(s)); \
  }
  NCCLRR_DTYPE_SWITCH(dtype, NCCLRR_LOAD)
#undef NCCLRR_LOAD
  return v;
}

void StoreFromDouble(int dtype, double v, void* p) {
#define NCCLRR_STORE(D)                                                   \
  {                                                                       \
    typename Traits<D>::S s = Traits<D>::Store(typename Traits<D>::C(v)); \
    std::memcpy(p, &s, sizeof(s));                                        \
  }
  NCCLRR_DTYPE_SWITCH(dtype, NCCLRR_STORE)
#undef NCCLRR_STORE
}

}  // namespace ncclrr::host
