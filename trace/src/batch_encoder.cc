#include "batch_encoder.h"

#include <algorithm>

#include "ncclrr/schema/schema_hash.h"
#include "ncclrr/schema/trace_generated.h"

namespace ncclrr::internal {
namespace {

// Our POD records and the generated FlatBuffers structs share one layout (tests check every
// field), so vectors are copied as bytes.
static_assert(sizeof(CallRecord) == sizeof(fb::CallRec));
static_assert(sizeof(CommRecord) == sizeof(fb::CommRec));
static_assert(sizeof(ClockPairRecord) == sizeof(fb::ClockPair));
static_assert(sizeof(DropCountRecord) == sizeof(fb::DropCount));
static_assert(sizeof(GpuTimeRecord) == sizeof(fb::GpuTime));
static_assert(sizeof(GraphEventRecord) == sizeof(fb::GraphEvent));
static_assert(sizeof(QueryCountRecord) == sizeof(fb::QueryCount));

template <typename Fb, typename Pod>
flatbuffers::Offset<flatbuffers::Vector<const Fb*>> StructVector(flatbuffers::FlatBufferBuilder& b,
                                                                 const std::vector<Pod>& v) {
  if (v.empty()) return 0;
  return b.CreateVectorOfStructs(reinterpret_cast<const Fb*>(v.data()), v.size());
}

static_assert(sizeof(FooterSummary::CommRank) == sizeof(fb::FooterComm));

flatbuffers::Offset<fb::Footer> EncodeFooter(flatbuffers::FlatBufferBuilder& b,
                                             const FooterData& f) {
  const auto reason = b.CreateString(f.reason);
  if (!f.summary) return fb::CreateFooter(b, f.clean, f.calls, f.dropped, f.end_ns, reason);
  const FooterSummary& s = *f.summary;
  const auto comms = StructVector<fb::FooterComm>(b, s.comms);
  const auto notes = s.notes.empty() ? 0 : b.CreateVectorOfStrings(s.notes);
  return fb::CreateFooter(b, f.clean, f.calls, f.dropped, f.end_ns, reason, true, comms,
                          s.gpu_times, s.gpu_times_cupti, s.gpu_times_events, s.captures,
                          s.capture_bytes, s.captured_calls, notes);
}

}  // namespace

uint64_t AddToFooterSummary(const std::vector<CommRecord>& comms,
                            const std::vector<CallRecord>& calls,
                            const std::vector<GpuTimeRecord>& gpu_times,
                            const std::vector<CaptureRefData>& captures,
                            const std::vector<NoteData>& notes, FooterSummary* s,
                            std::unordered_set<uint64_t>* captured_uids,
                            std::unordered_set<uint64_t>* in_flight) {
  for (const CommRecord& c : comms) {
    const bool known = std::any_of(s->comms.begin(), s->comms.end(), [&](const auto& k) {
      return k.comm_id == c.comm_id && k.rank == c.rank;
    });
    if (!known && s->comms.size() < FooterSummary::kMaxComms)
      s->comms.push_back({c.comm_id, c.nranks, c.rank});
  }
  uint64_t counted = 0;
  for (const CallRecord& c : calls) {
    if (c.flags & call_flags::kInFlight) {
      counted += in_flight->insert(c.uid).second;
    } else {
      counted += in_flight->empty() || in_flight->erase(c.uid) == 0;
    }
  }
  for (const GpuTimeRecord& g : gpu_times) {
    ++s->gpu_times;
    s->gpu_times_cupti += g.source == static_cast<uint8_t>(GpuTimeSource::kCupti);
    s->gpu_times_events += g.source == static_cast<uint8_t>(GpuTimeSource::kEventPair);
  }
  for (const CaptureRefData& c : captures) {
    ++s->captures;
    s->capture_bytes += c.bytes;
    s->captured_calls += captured_uids->insert(c.call_uid).second;
  }
  for (const NoteData& n : notes)
    if (s->notes.size() < FooterSummary::kMaxNotes) s->notes.push_back(n.text);
  return counted;
}

size_t PendingBatch::RecordCount() const { return strings.size() + RecordSet::RecordCount(); }

void PendingBatch::Clear() {
  strings.clear();
  ClearRecords();
  footer.reset();
  nccl_version = 0;
}

std::pair<const uint8_t*, size_t> BatchEncoder::Encode(const PendingBatch& p) {
  auto& b = builder_;
  b.Clear();
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::StringEntry>>> strings = 0;
  if (!p.strings.empty()) {
    std::vector<flatbuffers::Offset<fb::StringEntry>> v;
    for (const auto& [id, text] : p.strings)
      v.push_back(fb::CreateStringEntry(b, id, b.CreateString(text)));
    strings = b.CreateVector(v);
  }
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Note>>> notes = 0;
  if (!p.notes.empty()) {
    std::vector<flatbuffers::Offset<fb::Note>> v;
    for (const auto& n : p.notes)
      v.push_back(
          fb::CreateNote(b, n.time_ns, static_cast<uint8_t>(n.level), b.CreateString(n.text)));
    notes = b.CreateVector(v);
  }
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Sketch>>> sketches = 0;
  if (!p.sketches.empty()) {
    std::vector<flatbuffers::Offset<fb::Sketch>> v;
    for (const auto& s : p.sketches) {
      auto dots = b.CreateVector(s.dots.data(), s.dots.size());
      auto idx = b.CreateVector(s.sample_idx);
      auto vals = b.CreateVector(s.samples);
      v.push_back(fb::CreateSketch(b, s.call_uid, static_cast<fb::SketchWhich>(s.which), s.dtype,
                                   s.count, s.first, dots, s.sumsq, s.nan, s.posinf, s.neginf, idx,
                                   vals, s.launch));
    }
    sketches = b.CreateVector(v);
  }
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::CaptureRef>>> captures = 0;
  if (!p.captures.empty()) {
    std::vector<flatbuffers::Offset<fb::CaptureRef>> v;
    for (const auto& c : p.captures)
      v.push_back(fb::CreateCaptureRef(b, c.call_uid, static_cast<fb::SketchWhich>(c.which),
                                       b.CreateString(c.file), c.offset, c.bytes));
    captures = b.CreateVector(v);
  }
  flatbuffers::Offset<fb::Footer> footer = 0;
  if (p.footer) footer = EncodeFooter(b, *p.footer);
  auto comms = StructVector<fb::CommRec>(b, p.comms);
  auto calls = StructVector<fb::CallRec>(b, p.calls);
  auto clocks = StructVector<fb::ClockPair>(b, p.clocks);
  auto drops = StructVector<fb::DropCount>(b, p.drops);
  auto gpu = StructVector<fb::GpuTime>(b, p.gpu_times);
  auto graph = StructVector<fb::GraphEvent>(b, p.graph_events);
  auto queries = StructVector<fb::QueryCount>(b, p.queries);
  auto batch = fb::CreateBatch(b, strings, comms, calls, clocks, drops, notes, gpu, graph, queries,
                               sketches, captures, footer, p.nccl_version);
  b.Finish(batch, fb::BatchIdentifier());
  return {b.GetBufferPointer(), b.GetSize()};
}

TransposedRegion BatchEncoder::CallsRegion() const {
  static_assert(sizeof(CallRecord) % 8 == 0);
  const uint8_t* base = builder_.GetBufferPointer();
  const fb::Batch* batch = flatbuffers::GetRoot<fb::Batch>(base);
  if (!batch->calls() || batch->calls()->size() == 0) return {};
  const auto* data = reinterpret_cast<const uint8_t*>(batch->calls()->Data());
  return {static_cast<uint32_t>(data - base), sizeof(CallRecord) / 8, batch->calls()->size()};
}

std::vector<uint8_t> EncodeHeader(const HeaderData& h) {
  flatbuffers::FlatBufferBuilder b(4096);
  std::vector<flatbuffers::Offset<flatbuffers::String>> argv;
  for (const auto& a : h.argv) argv.push_back(b.CreateString(a));
  std::vector<flatbuffers::Offset<fb::KeyValue>> env;
  for (const auto& [k, v] : h.env)
    env.push_back(fb::CreateKeyValue(b, b.CreateString(k), b.CreateString(v)));
  auto header = fb::CreateHeader(
      b, b.CreateString(h.schema_hash.empty() ? NCCLRR_SCHEMA_HASH : h.schema_hash),
      b.CreateString(h.host), h.pid, h.ppid, h.start_mono_ns, h.start_real_ns, h.nccl_version,
      h.cuda_version, static_cast<fb::Route>(h.route), h.ring_mode, h.ring_capacity,
      b.CreateVector(argv), b.CreateVector(env));
  b.Finish(header);
  return {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
}

}  // namespace ncclrr::internal
