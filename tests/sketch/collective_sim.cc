#include "collective_sim.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "ncclrr/sketch/numeric.h"
#include "ncclrr/sketch/plan.h"
#include "ncclrr/sketch/sketch.h"

namespace ncclrr::sketch::test {
namespace {

bool IsIntType(uint8_t dtype) { return dtype <= uint8_t(Dtype::kUint64); }

double RoundTo(uint8_t dtype, double v) {
  uint8_t buf[8];
  EncodeElement(dtype, v, buf);
  return DecodeElement(dtype, buf);
}

uint64_t LoadU64(uint8_t dtype, const uint8_t* p) {  // sign-extended raw integer
  switch (Dtype(dtype)) {
    case Dtype::kInt8:
      return uint64_t(int64_t(*reinterpret_cast<const int8_t*>(p)));
    case Dtype::kUint8:
      return *p;
    case Dtype::kInt32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return uint64_t(int64_t(v));
    }
    case Dtype::kUint32: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    default: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
}
void StoreU64(uint8_t dtype, uint64_t v, uint8_t* p) { std::memcpy(p, &v, DtypeSize(dtype)); }

struct Views {
  std::vector<uint8_t> send_storage, recv_storage;
  uint8_t* send = nullptr;
  uint8_t* recv = nullptr;
};

Views MakeViews(const SimOptions& o, int rank) {
  const size_t size = DtypeSize(o.dtype);
  const uint64_t se = SendElems(o, rank), re = RecvElems(o, rank);
  Views v;
  const bool shared = o.in_place && se > 0 && re > 0 && o.api != Api::kAlltoAll;
  if (!shared) {
    v.send_storage.resize(se * size + 1);
    v.recv_storage.resize(re * size + 1);
    v.send = v.send_storage.data();
    v.recv = v.recv_storage.data();
    return v;
  }
  const uint64_t n = uint64_t(o.nranks);
  v.recv_storage.resize(std::max(se, re) * size + 1);
  uint8_t* base = v.recv_storage.data();
  v.send = v.recv = base;
  switch (o.api) {
    case Api::kReduceScatter:
      v.recv = base + uint64_t(rank) * o.count * size;
      break;
    case Api::kAllGather:
      v.send = base + uint64_t(rank) * o.count * size;
      break;
    case Api::kGather:
      v.send = base + uint64_t(o.root) * o.count * size;
      break;
    case Api::kScatter:
      v.recv = base + uint64_t(o.root) * o.count * size;
      break;
    default:
      break;
  }
  (void)n;
  return v;
}

// Combines the inputs' element i (raw bytes) as NCCL would.
void ReduceElement(const SimOptions& o, const std::vector<const uint8_t*>& in, uint8_t* out,
                   uint64_t i) {
  const size_t size = DtypeSize(o.dtype);
  const int n = o.nranks;
  const bool avg = o.op == int32_t(RedOp::kAvg);
  const bool premul = o.op >= kNumBuiltinOps || (avg && !IsIntType(o.dtype));
  const int start = o.rotate_order ? int(i % uint64_t(n)) : 0;
  if (IsIntType(o.dtype)) {
    uint64_t acc = 0;
    for (int q = 0; q < n; ++q) {
      const int r = (start + q) % n;
      uint64_t x = LoadU64(o.dtype, in[r] + i * size);
      if (premul) x *= uint64_t(int64_t(std::llround(o.scalars[r])));
      if (q == 0)
        acc = x;
      else if (o.op == int32_t(RedOp::kProd))
        acc *= x;
      else if (o.op == int32_t(RedOp::kMax))
        acc = int64_t(x) > int64_t(acc) ? x : acc;
      else if (o.op == int32_t(RedOp::kMin))
        acc = int64_t(x) < int64_t(acc) ? x : acc;
      else
        acc += x;
    }
    if (avg) acc = uint64_t(int64_t(acc) / n);
    StoreU64(o.dtype, acc, out + i * size);
    return;
  }
  const bool narrow = DtypeSize(o.dtype) < 4;
  const bool fp32_acc = o.fp32_accumulate && narrow;
  auto round_step = [&](double v) { return fp32_acc ? double(float(v)) : RoundTo(o.dtype, v); };
  double acc = 0;
  for (int q = 0; q < n; ++q) {
    const int r = (start + q) % n;
    double x = DecodeElement(o.dtype, in[r] + i * size);
    if (premul) x = RoundTo(o.dtype, x * (avg ? AvgScalar(o.dtype, n) : o.scalars[r]));
    if (q == 0)
      acc = x;
    else if (o.op == int32_t(RedOp::kProd))
      acc = round_step(acc * x);
    else if (o.op == int32_t(RedOp::kMax))
      acc = std::fmax(acc, x);
    else if (o.op == int32_t(RedOp::kMin))
      acc = std::fmin(acc, x);
    else
      acc = round_step(acc + x);
  }
  EncodeElement(o.dtype, acc, out + i * size);
}

void RunCollective(const SimOptions& o, const std::vector<std::vector<uint8_t>>& in,
                   std::vector<Views>& views) {
  const size_t size = DtypeSize(o.dtype);
  const uint64_t c = o.count;
  const int n = o.nranks;
  std::vector<const uint8_t*> ptrs(n);
  auto copy = [&](uint8_t* dst, const uint8_t* src) { std::memcpy(dst, src, c * size); };
  for (int j = 0; j < n; ++j) {
    uint8_t* out = views[j].recv;
    switch (o.api) {
      case Api::kAllReduce:
      case Api::kReduce:
        if (o.api == Api::kReduce && j != o.root) break;
        for (int r = 0; r < n; ++r) ptrs[r] = in[r].data();
        for (uint64_t i = 0; i < c; ++i) ReduceElement(o, ptrs, out, i);
        break;
      case Api::kReduceScatter:
        for (int r = 0; r < n; ++r) ptrs[r] = in[r].data() + uint64_t(j) * c * size;
        for (uint64_t i = 0; i < c; ++i) ReduceElement(o, ptrs, out, i);
        break;
      case Api::kBroadcast:
        copy(out, in[o.root].data());
        break;
      case Api::kAllGather:
        for (int r = 0; r < n; ++r) copy(out + uint64_t(r) * c * size, in[r].data());
        break;
      case Api::kAlltoAll:
        for (int i = 0; i < n; ++i)
          copy(out + uint64_t(i) * c * size, in[i].data() + uint64_t(j) * c * size);
        break;
      case Api::kGather:
        if (j == o.root)
          for (int r = 0; r < n; ++r) copy(out + uint64_t(r) * c * size, in[r].data());
        break;
      case Api::kScatter:
        copy(out, in[o.root].data() + uint64_t(j) * c * size);
        break;
      default:
        break;
    }
  }
}

std::vector<SketchData> SketchSide(const void* p, const BlockLayout& layout, SketchWhich which) {
  SketchRequest req;
  req.layout = layout;
  auto result = SketchHost(p, req);
  std::vector<SketchData> out = std::move(result->blocks);
  for (auto& s : out) s.which = which;
  return out;
}

}  // namespace

bool IsRootedOutputOnly(Api api) { return api == Api::kReduce || api == Api::kGather; }

uint64_t SendElems(const SimOptions& o, int rank) {
  const uint64_t n = uint64_t(o.nranks), c = o.count;
  switch (o.api) {
    case Api::kBroadcast:
      return rank == o.root ? c : 0;
    case Api::kReduceScatter:
    case Api::kAlltoAll:
      return n * c;
    case Api::kScatter:
      return rank == o.root ? n * c : 0;
    default:
      return c;
  }
}

uint64_t RecvElems(const SimOptions& o, int rank) {
  const uint64_t n = uint64_t(o.nranks), c = o.count;
  switch (o.api) {
    case Api::kReduce:
      return rank == o.root ? c : 0;
    case Api::kAllGather:
    case Api::kAlltoAll:
      return n * c;
    case Api::kGather:
      return rank == o.root ? n * c : 0;
    default:
      return c;
  }
}

SimResult Simulate(const SimOptions& o, const InputFn& inputs, const CorruptFn& corrupt) {
  const size_t size = DtypeSize(o.dtype);
  SimResult res;
  CollectiveSketches& cs = res.sketches;
  cs.api = o.api;
  cs.nranks = o.nranks;
  cs.root = o.root;
  cs.op = o.op;
  cs.dtype = o.dtype;
  cs.count = o.count;
  cs.ranks.resize(o.nranks);
  std::vector<Views> views;
  std::vector<std::vector<uint8_t>> in(o.nranks);
  for (int r = 0; r < o.nranks; ++r) {
    views.push_back(MakeViews(o, r));
    std::vector<double> values(SendElems(o, r));
    inputs(r, values);
    EncodeBuffer(o.dtype, values.data(), values.size(), views[r].send);
    if (o.op >= kNumBuiltinOps) cs.ranks[r].scalar = o.scalars[r];
  }
  std::vector<CallSketchPlan> plans;
  for (int r = 0; r < o.nranks; ++r) {
    plans.push_back(*PlanCall(o.api, o.dtype, o.count, o.nranks, r, o.root, o.in_place));
    if (plans[r].send)
      cs.ranks[r].send = SketchSide(views[r].send, *plans[r].send, SketchWhich::kSendBefore);
    in[r].assign(views[r].send, views[r].send + SendElems(o, r) * size);
  }
  RunCollective(o, in, views);
  for (int r = 0; r < o.nranks; ++r) {
    if (corrupt && RecvElems(o, r) > 0) corrupt(r, views[r].recv, RecvElems(o, r));
    if (plans[r].recv)
      cs.ranks[r].recv = SketchSide(views[r].recv, *plans[r].recv, SketchWhich::kRecvAfter);
    res.send_after.emplace_back(views[r].send, views[r].send + SendElems(o, r) * size);
  }
  return res;
}

InputFn RandomInputs(uint8_t dtype, uint64_t seed, double scale) {
  return [dtype, seed, scale](int rank, std::vector<double>& values) {
    std::mt19937_64 rng(seed * 1000003 + uint64_t(rank));
    std::normal_distribution<double> normal(0.0, scale);
    for (double& v : values) {
      if (dtype <= uint8_t(Dtype::kUint64)) {
        const uint64_t bits = rng();
        const size_t size = DtypeSize(dtype);
        const int64_t sv = size == 8 ? int64_t(bits >> 12) : int64_t(bits >> (64 - 8 * size));
        v = double(sv);  // stored wrapped into the type's width
      } else {
        v = normal(rng);
      }
    }
  };
}

}  // namespace ncclrr::sketch::test
