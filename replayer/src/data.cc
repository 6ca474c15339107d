#include "data.h"

#include <cmath>
#include <cstring>
#include <unordered_map>

#include "ncclrr/base/parallel_for.h"
#include "ncclrr/hostnccl/reduce.h"
#include "ncclrr/trace/capture_side_file.h"

namespace ncclrr::replay {
namespace {

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 29);
}

// Half-width of the value range: sums of a few dozen ranks stay exact in the type.
int64_t Range(uint8_t dtype) {
  switch (static_cast<Dtype>(dtype)) {
    case Dtype::kInt8:
      return 50;
    case Dtype::kUint8:
      return 50;
    case Dtype::kFloat16:
      return 32;
    case Dtype::kBfloat16:
      return 8;
    case Dtype::kFloat8e4m3:
      return 4;
    case Dtype::kFloat8e5m2:
      return 2;
    default:
      return 1000;
  }
}

bool Unsigned(uint8_t dtype) {
  const Dtype d = static_cast<Dtype>(dtype);
  return d == Dtype::kUint8 || d == Dtype::kUint32 || d == Dtype::kUint64;
}

}  // namespace

double SyntheticValue(uint64_t seed, uint64_t key, int rank, uint64_t index, uint8_t dtype,
                      bool product) {
  const uint64_t h = Mix(Mix(Mix(seed, key), static_cast<uint64_t>(rank)), index);
  if (product) {
    static constexpr double kFactors[4] = {-2, -1, 1, 2};
    const double f = kFactors[h & 3];
    return Unsigned(dtype) ? std::abs(f) : f;
  }
  const int64_t r = Range(dtype);
  // h scaled onto [0, 2r] by a multiply-high: a 64-bit division here was half a verified
  // replay's time.
  const auto span = static_cast<unsigned __int128>(2 * r + 1);
  const int64_t v = static_cast<int64_t>((static_cast<unsigned __int128>(h) * span) >> 64) - r;
  return static_cast<double>(Unsigned(dtype) ? v + r : v);
}

StatusOr<std::unique_ptr<DataSource>> DataSource::Create(const ReplayPlan& plan, DataMode mode,
                                                         uint64_t seed) {
  std::unique_ptr<DataSource> d(new DataSource(plan, mode, seed));
  if (mode == DataMode::kCaptured) NCCLRR_RETURN_IF_ERROR(d->LoadCaptures());
  return d;
}

Status DataSource::LoadCaptures() {
  const analysis::TraceModel& m = *plan_.model;
  // (file, call uid) -> plan call
  std::unordered_map<uint64_t, uint32_t> call_of;
  auto key = [](uint32_t file, uint64_t uid) { return Mix(file, uid); };
  for (uint32_t i = 0; i < plan_.calls.size(); ++i)
    call_of[key(plan_.calls[i].ref.file, m.call(plan_.calls[i].ref).uid)] = i;
  uint64_t refs = 0, unreadable = 0;
  std::string first_problem;
  for (uint32_t f = 0; f < m.dir().files.size(); ++f)
    for (const CaptureRefData& c : m.file(f).captures) {
      ++refs;
      auto it = call_of.find(key(f, c.call_uid));
      if (it == call_of.end()) continue;
      auto read = ReadCapturedBuffer(m.dir().dir, c);
      if (!read.ok()) {
        if (first_problem.empty()) first_problem = read.status().message();
        ++unreadable;
        continue;
      }
      std::vector<char> bytes(read->begin(), read->end());
      captures_[{it->second, static_cast<uint8_t>(c.which)}] = std::move(bytes);
    }
  if (refs == 0)
    return InvalidArgument(
        "--data captured: this trace holds no captured buffers (no CaptureRef records; record "
        "with `ncclrr record --capture BYTES`), or use --data synthetic");
  if (captures_.empty())
    return IoError("--data captured: none of the " + std::to_string(refs) +
                   " captured buffers could be read; first: " + first_problem);
  if (unreadable)
    notes_.push_back(std::to_string(unreadable) +
                     " captured buffer(s) could not be read (first: " + first_problem + ")");
  // A logical call uses captured inputs only when every rank that contributes one has it, so the
  // reference never mixes captured and synthetic values.
  const uint8_t send_before = static_cast<uint8_t>(SketchWhich::kSendBefore);
  auto has_input = [&](uint32_t idx) {
    const PlanCall& c = plan_.calls[idx];
    const std::vector<char>* b = Bytes(idx, send_before);
    return c.send_elems == 0 || (b && b->size() >= c.send_elems * DtypeSize(c.dtype));
  };
  uint64_t logical = 0, synthetic = 0;
  for (const PlanComm& pc : plan_.comms)
    for (const LogicalColl& l : pc.logical) {
      ++logical;
      bool all = true;
      for (uint32_t idx : l.call_of_rank) all &= idx == kNone || has_input(idx);
      synthetic += !all;
      for (uint32_t idx : l.call_of_rank)
        if (idx != kNone && all) captured_inputs_[idx] = true;
    }
  for (uint32_t i = 0; i < plan_.calls.size(); ++i)
    if (plan_.calls[i].api == Api::kSend && has_input(i)) captured_inputs_[i] = true;
  if (synthetic)
    notes_.push_back(std::to_string(synthetic) + " of " + std::to_string(logical) +
                     " logical collectives lack a captured input on some rank: they use synthetic "
                     "data on every rank");
  return Status::Ok();
}

const std::vector<char>* DataSource::Bytes(uint32_t call, uint8_t which) const {
  auto it = captures_.find({call, which});
  return it == captures_.end() ? nullptr : &it->second;
}

uint64_t DataSource::InputKey(const PlanCall& c) const {
  if (c.collective()) return plan_.comms[c.comm].logical[c.logical].data_key;
  const PlanCall& send = c.api == Api::kSend || c.partner == kNone ? c : plan_.calls[c.partner];
  const int from = send.api == Api::kSend ? send.rank : send.root_peer;
  const int to = send.api == Api::kSend ? send.root_peer : send.rank;
  return Mix(
      Mix(Mix(plan_.comms[c.comm].id, static_cast<uint64_t>(from)), static_cast<uint64_t>(to)),
      send.recorded_seq ^ 0x5e4d0000ull);
}

double DataSource::Input(uint64_t key, int rank, uint64_t index, uint8_t dtype, bool product,
                         const PlanCall* call) const {
  if (call != nullptr && mode_ == DataMode::kCaptured) {
    const uint32_t idx = static_cast<uint32_t>(call - plan_.calls.data());
    if (captured_inputs_.count(idx)) {
      const std::vector<char>* b = Bytes(idx, static_cast<uint8_t>(SketchWhich::kSendBefore));
      const size_t size = DtypeSize(call->dtype);
      if (b && (index + 1) * size <= b->size())
        return host::LoadAsDouble(call->dtype, b->data() + index * size);
    }
  }
  return SyntheticValue(seed_, key, rank, index, dtype, product);
}

void DataSource::FillSend(const PlanCall& c, void* host) const {
  const size_t size = DtypeSize(c.dtype);
  const uint32_t idx = static_cast<uint32_t>(&c - plan_.calls.data());
  if (mode_ == DataMode::kCaptured && captured_inputs_.count(idx)) {
    const std::vector<char>* b = Bytes(idx, static_cast<uint8_t>(SketchWhich::kSendBefore));
    std::memcpy(host, b->data(), c.send_elems * size);
    return;
  }
  const bool product = c.collective() && c.op == static_cast<int>(RedOp::kProd) &&
                       !(c.flags & call_flags::kPreMulSum);
  const uint64_t key = InputKey(c);
  char* out = static_cast<char*>(host);
  ParallelRanges(c.send_elems, [&](int, uint64_t begin, uint64_t end) {
    for (uint64_t i = begin; i < end; ++i)
      host::StoreFromDouble(c.dtype, SyntheticValue(seed_, key, c.rank, i, c.dtype, product),
                            out + i * size);
  });
}

const std::vector<char>* DataSource::CapturedOutput(const PlanCall& c) const {
  return Bytes(static_cast<uint32_t>(&c - plan_.calls.data()),
               static_cast<uint8_t>(SketchWhich::kRecvAfter));
}

}  // namespace ncclrr::replay
