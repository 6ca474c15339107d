#include "checks/capture_verify.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

#include "ncclrr/sketch/numeric.h"
#include "ncclrr/sketch/plan.h"

namespace ncclrr::analysis {
namespace {

bool IsSigned(uint8_t dtype) {
  const Dtype d = static_cast<Dtype>(dtype);
  return d == Dtype::kInt8 || d == Dtype::kInt32 || d == Dtype::kInt64;
}

// An integer element's bits, sign-extended for signed types (so 64-bit arithmetic wraps alike).
uint64_t LoadInt(uint8_t dtype, const char* p) {
  switch (DtypeSize(dtype)) {
    case 1: {
      uint8_t v;
      std::memcpy(&v, p, 1);
      return IsSigned(dtype) ? uint64_t(int64_t(int8_t(v))) : v;
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return IsSigned(dtype) ? uint64_t(int64_t(int32_t(v))) : v;
    }
    default: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
}

// Truncated to the type's width and sign-extended again: the value the type holds.
uint64_t Wrap(uint8_t dtype, uint64_t v) {
  char b[8];
  std::memcpy(b, &v, 8);  // little endian: the low bytes first
  return LoadInt(dtype, b);
}

bool IntLess(uint8_t dtype, uint64_t a, uint64_t b) {
  return IsSigned(dtype) ? int64_t(a) < int64_t(b) : a < b;
}

std::string IntText(uint8_t dtype, uint64_t v) {
  char buf[32];
  if (IsSigned(dtype))
    std::snprintf(buf, sizeof buf, "%" PRId64, int64_t(v));
  else
    std::snprintf(buf, sizeof buf, "%" PRIu64, v);
  return buf;
}

std::string FloatText(uint8_t dtype, double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", static_cast<Dtype>(dtype) == Dtype::kFloat64 ? 17 : 9, v);
  return buf;
}

// One output element's expected value.
struct Expect {
  uint64_t bits = 0;      // integers
  double value = 0;       // floats
  double tol = 0;         // floats: allowed |observed - value|
  bool nan_ok = false;    // max/min with a NaN input: NaN is accepted too
  bool want_nan = false;  // sum/prod of a NaN (or inf - inf): only NaN is right
};

class Reducer {
 public:
  explicit Reducer(const CapturedCall& c)
      : c_(c), size_(DtypeSize(c.dtype)), float_(sketch::IsFloatDtype(c.dtype)) {
    const RedOp op = static_cast<RedOp>(c.op);
    premul_ = (c.flags & call_flags::kPreMulSum) != 0;
    for (int r = 0; r < c.nranks; ++r) {
      double s = 1;
      if (premul_) s = r < int(c.scalars.size()) ? c.scalars[r] : 1;
      if (!premul_ && op == RedOp::kAvg && float_) s = sketch::AvgScalar(c.dtype, c.nranks);
      if (float_) {  // NCCL rounds the multiplier to the datatype
        char b[8];
        sketch::EncodeElement(c.dtype, s, b);
        s = sketch::DecodeElement(c.dtype, b);
      }
      scalars_.push_back(s);
    }
    multiply_ = premul_ || (op == RedOp::kAvg && float_);
    const double u = std::max(sketch::UnitRoundoff(c.dtype), std::ldexp(1.0, -53));
    const int m = c.nranks - 1 + (multiply_ ? 1 : 0);
    rel_ = (m + 1) * u * 1.0001;
    abs_ = m * sketch::HalfMinSubnormal(c.dtype);
  }

  // What element `i` of every rank's send buffer combines to.
  Expect At(uint64_t i) const { return float_ ? Float(i) : Int(i); }

 private:
  const char* In(int r, uint64_t i) const { return c_.send[r].data() + i * size_; }

  Expect Int(uint64_t i) const {
    const RedOp op = static_cast<RedOp>(c_.op);
    const uint8_t d = c_.dtype;
    Expect e;
    uint64_t acc = 0;
    for (int r = 0; r < c_.nranks; ++r) {
      uint64_t x = LoadInt(d, In(r, i));
      if (premul_) x = Wrap(d, x * uint64_t(int64_t(scalars_[r])));
      if (r == 0) {
        acc = x;
        continue;
      }
      if (premul_ || op == RedOp::kSum || op == RedOp::kAvg)
        acc = Wrap(d, acc + x);
      else if (op == RedOp::kProd)
        acc = Wrap(d, acc * x);
      else if (op == RedOp::kMax)
        acc = IntLess(d, acc, x) ? x : acc;
      else if (op == RedOp::kMin)
        acc = IntLess(d, x, acc) ? x : acc;
    }
    if (!premul_ && op == RedOp::kAvg) {
      const auto n = static_cast<uint64_t>(c_.nranks);
      acc = IsSigned(d) ? uint64_t(int64_t(acc) / int64_t(n)) : acc / n;
      acc = Wrap(d, acc);
    }
    e.bits = acc;
    return e;
  }

  Expect Float(uint64_t i) const {
    const RedOp op = static_cast<RedOp>(c_.op);
    Expect e;
    if (!premul_ && (op == RedOp::kMax || op == RedOp::kMin)) {
      bool any = false;
      for (int r = 0; r < c_.nranks; ++r) {
        const double x = sketch::DecodeElement(c_.dtype, In(r, i));
        if (std::isnan(x)) {
          e.nan_ok = true;
          continue;
        }
        if (!any || (op == RedOp::kMax ? x > e.value : x < e.value)) e.value = x;
        any = true;
      }
      if (!any) e.want_nan = true;
      return e;
    }
    if (!premul_ && op == RedOp::kProd) {
      double p = 1;
      for (int r = 0; r < c_.nranks; ++r) p *= sketch::DecodeElement(c_.dtype, In(r, i));
      e.value = p;
      e.tol = rel_ * std::fabs(p) + abs_;
      e.want_nan = std::isnan(p);
      return e;
    }
    double sum = 0, mag = 0;
    for (int r = 0; r < c_.nranks; ++r) {
      double x = sketch::DecodeElement(c_.dtype, In(r, i));
      if (multiply_) x *= scalars_[r];
      sum += x;
      mag += std::fabs(x);
    }
    e.value = sum;
    e.tol = rel_ * mag + abs_;
    e.want_nan = std::isnan(sum);
    return e;
  }

  const CapturedCall& c_;
  size_t size_;
  bool float_, premul_ = false, multiply_ = false;
  std::vector<double> scalars_;
  double rel_ = 0, abs_ = 0;
};

bool FloatMatches(uint8_t dtype, const Expect& e, double got) {
  if (std::isnan(got)) return e.want_nan || e.nan_ok;
  if (e.want_nan) return false;
  if (got == e.value) return true;
  if (std::isinf(got)) {  // the exact result overflowed the datatype
    const double max = sketch::MaxFinite(dtype);
    return std::signbit(got) == std::signbit(e.value) && std::fabs(e.value) + e.tol > max;
  }
  return std::fabs(got - e.value) <= e.tol;
}

void Mismatch(OutputCheck* out, uint64_t k, std::string expected, std::string observed,
              double tol) {
  if (out->wrong++ > 0) return;
  out->first = k;
  out->expected = std::move(expected);
  out->observed = std::move(observed);
  out->tolerance = tol;
}

// Output ranks `outs` of a reduction (alike: one `base`): recv_j[k] = op_r send_r[base + k].
void CheckReduction(const CapturedCall& c, const Reducer& red, const std::vector<int>& outs,
                    uint64_t base, std::vector<OutputCheck>* results) {
  const size_t first = results->size();
  for (int j : outs) {
    results->emplace_back();
    results->back().rank = j;
  }
  const size_t size = DtypeSize(c.dtype);
  const bool is_float = sketch::IsFloatDtype(c.dtype);
  for (uint64_t k = 0; k < c.count; ++k) {
    const Expect e = red.At(base + k);
    for (size_t o = 0; o < outs.size(); ++o) {
      OutputCheck& out = (*results)[first + o];
      const char* got = c.recv[outs[o]].data() + k * size;
      ++out.checked;
      if (is_float) {
        const double g = sketch::DecodeElement(c.dtype, got);
        if (!FloatMatches(c.dtype, e, g))
          Mismatch(&out, k, e.want_nan ? "NaN" : FloatText(c.dtype, e.value), FloatText(c.dtype, g),
                   e.tol);
      } else {
        const uint64_t g = LoadInt(c.dtype, got);
        if (g != e.bits) Mismatch(&out, k, IntText(c.dtype, e.bits), IntText(c.dtype, g), 0);
      }
    }
  }
}

// Output rank j of data movement: recv_j[k] = send_src[idx], chunk by chunk of `count`.
OutputCheck CheckCopy(const CapturedCall& c, int j) {
  OutputCheck out;
  out.rank = j;
  out.copy = true;
  const size_t size = DtypeSize(c.dtype);
  const uint64_t chunks = c.recv[j].size() / size / std::max<uint64_t>(c.count, 1);
  for (uint64_t q = 0; q < chunks; ++q) {
    int src = 0;
    uint64_t from = 0;  // element index in src's send buffer
    switch (c.api) {
      case Api::kBroadcast:
      case Api::kBcast:
        src = c.root;
        break;
      case Api::kAllGather:
      case Api::kGather:
        src = int(q);
        break;
      case Api::kAlltoAll:
        src = int(q);
        from = uint64_t(j) * c.count;
        break;
      case Api::kScatter:
        src = c.root;
        from = uint64_t(j) * c.count;
        break;
      default:  // Send/Recv: rank 0 sent what rank 1 received
        src = 0;
        break;
    }
    const char* want = c.send[src].data() + from * size;
    const char* got = c.recv[j].data() + q * c.count * size;
    for (uint64_t k = 0; k < c.count; ++k) {
      ++out.checked;
      if (std::memcmp(want + k * size, got + k * size, size) != 0)
        Mismatch(&out, q * c.count + k, FormatElement(c.dtype, want + k * size),
                 FormatElement(c.dtype, got + k * size), 0);
    }
  }
  return out;
}

}  // namespace

std::string FormatElement(uint8_t dtype, const void* p) {
  if (sketch::IsFloatDtype(dtype)) return FloatText(dtype, sketch::DecodeElement(dtype, p));
  return IntText(dtype, LoadInt(dtype, static_cast<const char*>(p)));
}

NeededBytes CapturedBytesNeeded(Api api, uint8_t dtype, uint64_t count, int nranks, int rank,
                                int root) {
  NeededBytes n;
  const auto plan = sketch::PlanCall(api, dtype, count, nranks, rank, root, false);
  if (!plan.ok()) return n;
  if (plan->send) n.send = plan->send->total() * DtypeSize(dtype);
  if (plan->recv) n.recv = plan->recv->total() * DtypeSize(dtype);
  return n;
}

std::vector<OutputCheck> VerifyCaptured(const CapturedCall& c) {
  std::vector<OutputCheck> out;
  const Api api = c.api;
  const bool reduces = api == Api::kAllReduce || api == Api::kReduce || api == Api::kReduceScatter;
  if (!reduces) {
    for (int j = 0; j < int(c.recv.size()); ++j)
      if (!c.recv[j].empty()) out.push_back(CheckCopy(c, j));
    return out;
  }
  const Reducer red(c);
  if (api == Api::kReduceScatter) {
    for (int j = 0; j < c.nranks; ++j) CheckReduction(c, red, {j}, j * c.count, &out);
  } else if (api == Api::kReduce) {
    CheckReduction(c, red, {c.root}, 0, &out);
  } else {
    std::vector<int> all(c.nranks);
    for (int j = 0; j < c.nranks; ++j) all[j] = j;
    CheckReduction(c, red, all, 0, &out);
  }
  return out;
}

}  // namespace ncclrr::analysis
