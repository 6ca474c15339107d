#include "verify.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ncclrr/base/parallel_for.h"
#include "ncclrr/hostnccl/reduce.h"

namespace ncclrr::replay {
namespace {

bool IsFloat(uint8_t dtype) {
  const Dtype d = static_cast<Dtype>(dtype);
  return d == Dtype::kFloat16 || d == Dtype::kFloat32 || d == Dtype::kFloat64 ||
         d == Dtype::kBfloat16 || d == Dtype::kFloat8e4m3 || d == Dtype::kFloat8e5m2;
}

double UnitRoundoff(uint8_t dtype) {
  switch (static_cast<Dtype>(dtype)) {
    case Dtype::kFloat16:
      return std::ldexp(1.0, -11);
    case Dtype::kFloat32:
      return std::ldexp(1.0, -24);
    case Dtype::kFloat64:
      return std::ldexp(1.0, -53);
    case Dtype::kBfloat16:
      return std::ldexp(1.0, -8);
    case Dtype::kFloat8e4m3:
      return std::ldexp(1.0, -4);
    case Dtype::kFloat8e5m2:
      return std::ldexp(1.0, -3);
    default:
      return 0;
  }
}

// An integer wrapped to the type's width, as the type holds it.
double WrapInt(uint8_t dtype, uint64_t v) {
  switch (static_cast<Dtype>(dtype)) {
    case Dtype::kInt8:
      return static_cast<int8_t>(v);
    case Dtype::kUint8:
      return static_cast<uint8_t>(v);
    case Dtype::kInt32:
      return static_cast<int32_t>(v);
    case Dtype::kUint32:
      return static_cast<uint32_t>(v);
    case Dtype::kInt64:
      return static_cast<double>(static_cast<int64_t>(v));
    default:
      return static_cast<double>(v);
  }
}

enum class Combine { kCopy, kSum, kProd, kMax, kMin, kAvg, kPreMulSum };

Combine CombineOf(const PlanCall& a) {
  if (a.api != Api::kAllReduce && a.api != Api::kReduce && a.api != Api::kReduceScatter)
    return Combine::kCopy;
  if (a.flags & call_flags::kPreMulSum) return Combine::kPreMulSum;
  switch (static_cast<RedOp>(a.op)) {
    case RedOp::kSum:
      return Combine::kSum;
    case RedOp::kProd:
      return Combine::kProd;
    case RedOp::kMax:
      return Combine::kMax;
    case RedOp::kMin:
      return Combine::kMin;
    case RedOp::kAvg:
      return Combine::kAvg;
  }
  return Combine::kSum;
}

// Output elements rank `rank` receives from a logical call with arguments `a`.
uint64_t RefRecvElems(const PlanCall& a, int rank, int nranks) {
  const uint64_t n = static_cast<uint64_t>(nranks);
  const bool root = rank == a.root_peer;
  switch (a.api) {
    case Api::kAllReduce:
    case Api::kBroadcast:
    case Api::kReduceScatter:
    case Api::kScatter:
      return a.count;
    case Api::kReduce:
      return root ? a.count : 0;
    case Api::kAllGather:
    case Api::kAlltoAll:
      return a.count * n;
    case Api::kGather:
      return root ? a.count * n : 0;
    default:
      return 0;
  }
}

class Reference {
 public:
  Reference(const ReplayPlan& plan, const DataSource& data, const PlanCall& c)
      : plan_(plan), data_(data), c_(c), n_(plan.comms[c.comm].nranks) {
    if (c.collective()) {
      const LogicalColl& l = plan.comms[c.comm].logical[c.logical];
      a_ = &plan.calls[l.args];
      key_ = l.data_key;
      for (uint32_t idx : l.call_of_rank)
        callers_.push_back(idx == kNone ? nullptr : &plan.calls[idx]);
    } else {
      // A receive: its message is the matching send (or, without one, the receive itself).
      a_ = c.partner == kNone ? &c : &plan.calls[c.partner];
      key_ = data.InputKey(c);
    }
    combine_ = CombineOf(*a_);
    dtype_ = a_->dtype;
    float_ = IsFloat(dtype_);
    u_ = UnitRoundoff(dtype_);
    elems_ = c.api == Api::kRecv ? a_->count : RefRecvElems(*a_, c.rank, n_);
  }

  uint64_t elems() const { return elems_; }

  // Reference value of output element i, and the tolerance for it.
  void At(uint64_t i, double* value, double* tol) const {
    const uint64_t cnt = a_->count;
    const int r = c_.rank;
    switch (a_->api) {
      case Api::kRecv:
      case Api::kSend:
        return Exact(Sender(), i, value, tol);
      case Api::kBroadcast:
        return Exact(a_->root_peer, i, value, tol);
      case Api::kScatter:
        return Exact(a_->root_peer, static_cast<uint64_t>(r) * cnt + i, value, tol);
      case Api::kAllGather:
      case Api::kGather:
        return Exact(static_cast<int>(i / cnt), i % cnt, value, tol);
      case Api::kAlltoAll:
        return Exact(static_cast<int>(i / cnt), static_cast<uint64_t>(r) * cnt + i % cnt, value,
                     tol);
      case Api::kReduceScatter:
        return Reduce(static_cast<uint64_t>(r) * cnt + i, value, tol);
      default:
        return Reduce(i, value, tol);
    }
  }

 private:
  int Sender() const { return a_->api == Api::kSend ? a_->rank : a_->root_peer; }

  double In(int q, uint64_t j) const {
    const PlanCall* own = c_.collective() ? callers_[q] : (a_->api == Api::kSend ? a_ : nullptr);
    return data_.Input(key_, q, j, dtype_, combine_ == Combine::kProd, own);
  }

  void Exact(int q, uint64_t j, double* value, double* tol) const {
    *value = In(q, j);
    *tol = 0;
  }

  // Rank q's contribution, with its own PreMulSum scalar applied.
  double Term(int q, uint64_t j) const {
    const double x = In(q, j);
    if (combine_ != Combine::kPreMulSum) return x;
    return x * (callers_[q] ? callers_[q]->scalar : a_->scalar);
  }

  template <typename T>
  T Fold(T acc, T x, bool first) const {
    if (first) return x;
    switch (combine_) {
      case Combine::kProd:
        return acc * x;
      case Combine::kMax:
        return std::max(acc, x);
      case Combine::kMin:
        return std::min(acc, x);
      default:
        return acc + x;
    }
  }

  void Reduce(uint64_t j, double* value, double* tol) const {
    if (!float_) return ReduceInt(j, value, tol);
    double acc = 0, abs_sum = 0;
    for (int q = 0; q < n_; ++q) {
      const double x = Term(q, j);
      abs_sum += std::fabs(x);
      acc = Fold(acc, x, q == 0);
    }
    if (combine_ == Combine::kAvg) acc /= n_;
    *value = acc;
    *tol = (n_ + 2) * u_ * abs_sum + 2 * u_ * std::fabs(acc);
  }

  // Integers wrap in the type's width: sums and products run in uint64 (wrapping), max and min
  // compare the values themselves.
  void ReduceInt(uint64_t j, double* value, double* tol) const {
    uint64_t acc = 0;
    double best = 0;
    for (int q = 0; q < n_; ++q) {
      const double x = Term(q, j);
      best = Fold(best, x, q == 0);
      acc = Fold(acc, static_cast<uint64_t>(static_cast<int64_t>(x)), q == 0);
    }
    *tol = 0;
    if (combine_ == Combine::kMax || combine_ == Combine::kMin) {
      *value = best;
    } else if (combine_ == Combine::kAvg) {
      *value = std::trunc(WrapInt(dtype_, acc) / n_);
      *tol = 1;  // NCCL and the host NCCL may round the division differently
    } else {
      *value = WrapInt(dtype_, acc);
    }
  }

  const ReplayPlan& plan_;
  const DataSource& data_;
  const PlanCall& c_;
  const int n_;
  const PlanCall* a_ = nullptr;
  std::vector<const PlanCall*> callers_;
  uint64_t key_ = 0;
  Combine combine_ = Combine::kCopy;
  uint8_t dtype_ = 0;
  bool float_ = false;
  double u_ = 0;
  uint64_t elems_ = 0;
};

bool Close(double got, double want, double tol) {
  if (std::isnan(got) || std::isnan(want)) return false;
  return std::fabs(got - want) <= tol;
}

}  // namespace

std::shared_ptr<SharedReferences::Entry> SharedReferences::Acquire(const ReplayPlan& plan,
                                                                   const PlanCall& c) {
  if (!enabled_ || !c.collective()) return nullptr;
  const LogicalColl& l = plan.comms[c.comm].logical[c.logical];
  const PlanCall& a = plan.calls[l.args];
  if (a.api != Api::kAllReduce || a.count * 2 * sizeof(double) > kMaxBytes) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, added] = entries_.try_emplace({c.comm, c.logical});
  if (added) {
    it->second = std::make_shared<Entry>();
    for (uint32_t idx : l.call_of_rank)
      it->second->left += idx != kNone && plan.calls[idx].recv_elems > 0;
  }
  return it->second;
}

void SharedReferences::Release(const PlanCall& c) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find({c.comm, c.logical});
  if (it != entries_.end() && --it->second->left <= 0) entries_.erase(it);
}

CallCheck CheckCall(const ReplayPlan& plan, const DataSource& data, const PlanCall& c,
                    const void* out, SharedReferences* shared) {
  CallCheck r;
  if (c.recv_elems == 0) return r;
  const Reference ref(plan, data, c);
  const auto entry = shared ? shared->Acquire(plan, c) : nullptr;
  if (entry)
    std::call_once(entry->once, [&] {
      entry->value.resize(ref.elems());
      entry->tol.resize(ref.elems());
      ParallelRanges(ref.elems(), [&](int, uint64_t begin, uint64_t end) {
        for (uint64_t i = begin; i < end; ++i) ref.At(i, &entry->value[i], &entry->tol[i]);
      });
    });
  const size_t size = DtypeSize(c.dtype);
  const char* bytes = static_cast<const char*>(out);
  const uint64_t common = std::min(c.recv_elems, ref.elems());
  // Each part checks a contiguous range; the first wrong element is the first part's that has one.
  std::vector<CallCheck> parts(static_cast<size_t>(ParallelParts(common)));
  ParallelRanges(common, [&](int p, uint64_t begin, uint64_t end) {
    CallCheck& part = parts[static_cast<size_t>(p)];
    for (uint64_t i = begin; i < end; ++i) {
      double want = 0, tol = 0;
      if (entry) {
        want = entry->value[i];
        tol = entry->tol[i];
      } else {
        ref.At(i, &want, &tol);
      }
      const double got = host::LoadAsDouble(c.dtype, bytes + i * size);
      if (!Close(got, want, tol) && part.wrong++ == 0) {
        part.first_wrong = i;
        part.got = got;
        part.expected = want;
      }
    }
  });
  for (const CallCheck& part : parts) {
    if (part.wrong > 0 && r.wrong == 0) {
      r.first_wrong = part.first_wrong;
      r.got = part.got;
      r.expected = part.expected;
    }
    r.wrong += part.wrong;
  }
  if (entry) shared->Release(c);
  // Elements past the logical call's output have no correct value: a correct program has none.
  if (c.recv_elems > common) {
    if (r.wrong == 0) {
      r.first_wrong = common;
      r.got = host::LoadAsDouble(c.dtype, bytes + common * size);
      r.expected = NAN;
    }
    r.wrong += c.recv_elems - common;
  }
  r.checked = c.recv_elems;
  if (const std::vector<char>* recorded = data.CapturedOutput(c)) {
    r.reproduced = recorded->size() >= c.recv_elems * size;
    const double u = UnitRoundoff(c.dtype);
    for (uint64_t i = 0; r.reproduced == 1 && i < c.recv_elems; ++i) {
      const double want = host::LoadAsDouble(c.dtype, recorded->data() + i * size);
      const double got = host::LoadAsDouble(c.dtype, bytes + i * size);
      r.reproduced = (got == want || Close(got, want, 4 * u * std::fabs(want))) ? 1 : 0;
    }
  }
  return r;
}

}  // namespace ncclrr::replay
