#include "frame_reader.h"

#include <zstd.h>

#include <algorithm>
#include <cstring>

#include "ncclrr/base/crc32c.h"
#include "ncclrr/schema/trace_generated.h"
#include "ncclrr/trace/format.h"

namespace ncclrr::internal {
namespace {

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

std::string Str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

// One decompression context per thread, kept: ZSTD_decompress makes and frees one (~100 KB,
// its tables initialized) per call, which for the many small frames of a ring dump was a
// good part of reading them.
ZSTD_DCtx* ThreadDCtx() {
  struct Owner {
    ZSTD_DCtx* dctx = ZSTD_createDCtx();
    ~Owner() { ZSTD_freeDCtx(dctx); }
  };
  thread_local Owner owner;
  return owner.dctx;
}

template <typename Pod, typename Fb>
void AppendStructs(const flatbuffers::Vector<const Fb*>* v, std::vector<Pod>* out) {
  static_assert(sizeof(Pod) == sizeof(Fb));
  if (!v || v->size() == 0) return;
  // One copy, no zero-fill: the layouts are identical (checked in tests/recorder).
  const Pod* first = reinterpret_cast<const Pod*>(v->Data());
  out->insert(out->end(), first, first + v->size());
}

}  // namespace

FooterData ReadFooter(const fb::Footer& f) {
  FooterData d{f.clean(), f.calls(), f.dropped(), f.end_ns(), Str(f.reason()), std::nullopt};
  if (!f.summary()) return d;
  FooterSummary& s = d.summary.emplace();
  AppendStructs(f.comms(), &s.comms);
  if (s.comms.size() > FooterSummary::kMaxComms) s.comms.resize(FooterSummary::kMaxComms);
  s.gpu_times = f.gpu_times();
  s.gpu_times_cupti = f.gpu_times_cupti();
  s.gpu_times_events = f.gpu_times_events();
  s.captures = f.captures();
  s.capture_bytes = f.capture_bytes();
  s.captured_calls = f.captured_calls();
  if (f.notes())
    for (const auto* n : *f.notes())
      if (s.notes.size() < FooterSummary::kMaxNotes) s.notes.push_back(Str(n));
  return d;
}

Status ParseHeader(const std::string& path, const ByteView& f, HeaderData* out, size_t* end) {
  const uint8_t* p = f.data();
  const std::string expect =
      "; expected an ncclrr trace (a file written by `ncclrr record`, starting with the bytes "
      "\\x89NCCLRR)";
  if (f.size() == 0) return Corrupt("'" + path + "' is empty" + expect);
  if (std::memcmp(p, format::kFileMagic, std::min<size_t>(8, f.size())) != 0)
    return Corrupt("'" + path + "' is not an ncclrr trace: wrong magic bytes" + expect);
  if (f.size() < format::kFilePreambleSize)
    return Corrupt("'" + path + "' ends inside its file header (" + std::to_string(f.size()) +
                   " of at least 20 bytes); the recording process died before writing anything");
  out->format_major = Load<uint16_t>(p + 8);
  out->format_minor = Load<uint16_t>(p + 10);
  if (out->format_major > format::kMajor)
    return Unsupported("'" + path + "' uses trace format " + std::to_string(out->format_major) +
                       "." + std::to_string(out->format_minor) + ", newer than this ncclrr (" +
                       std::to_string(format::kMajor) + "." + std::to_string(format::kMinor) +
                       "); read it with a newer ncclrr");
  if (out->format_major == 0)
    return Corrupt("'" + path +
                   "' has trace format major version 0, which no ncclrr wrote; the "
                   "file is damaged");
  const uint32_t hsize = Load<uint32_t>(p + 12);
  const uint32_t hcrc = Load<uint32_t>(p + 16);
  if (f.size() < format::kFilePreambleSize + hsize)
    return Corrupt("'" + path + "' ends inside its file header (" + std::to_string(f.size()) +
                   " of " + std::to_string(format::kFilePreambleSize + hsize) + " bytes)");
  const uint8_t* hp = p + format::kFilePreambleSize;
  if (Crc32c(hp, hsize, Crc32c(p + 8, 8)) != hcrc)
    return Corrupt("'" + path + "': the file header fails its checksum; the file is damaged");
  flatbuffers::Verifier v(hp, hsize);
  if (!v.VerifyBuffer<fb::Header>(nullptr))
    return Corrupt("'" + path + "': the file header is malformed");
  const fb::Header* h = flatbuffers::GetRoot<fb::Header>(hp);
  out->schema_hash = Str(h->schema_hash());
  out->host = Str(h->host());
  out->pid = h->pid();
  out->ppid = h->ppid();
  out->start_mono_ns = h->start_mono_ns();
  out->start_real_ns = h->start_real_ns();
  out->nccl_version = h->nccl_version();
  out->cuda_version = h->cuda_version();
  out->route = static_cast<Route>(h->route());
  out->ring_mode = h->ring_mode();
  out->ring_capacity = h->ring_capacity();
  if (h->argv())
    for (const auto* a : *h->argv()) out->argv.push_back(Str(a));
  if (h->env())
    for (const auto* kv : *h->env()) out->env[Str(kv->key())] = Str(kv->value());
  *end = format::kFilePreambleSize + hsize;
  return Status::Ok();
}

FrameCheck CheckFrame(const ByteView& f, size_t off, FrameHeader* h, std::vector<uint8_t>* scratch,
                      const uint8_t** payload, size_t* psize, size_t* frame_bytes,
                      TransposedRegion* columns) {
  if (columns) *columns = {};
  if (off + format::kFrameHeaderSize > f.size()) return FrameCheck::kTorn;
  std::memcpy(h, f.data() + off, sizeof *h);
  if (h->magic != format::kFrameMagic || h->stored_size > format::kMaxFrameBytes ||
      h->raw_size > format::kMaxFrameBytes || (h->flags & ~format::kFlagTransposed) != 0)
    return FrameCheck::kBad;
  const size_t ext = (h->flags & format::kFlagTransposed) ? format::kFrameExtensionSize : 0;
  *frame_bytes = format::kFrameHeaderSize + ext + h->stored_size;
  if (off + *frame_bytes > f.size()) return FrameCheck::kTorn;
  const uint8_t* extension = f.data() + off + format::kFrameHeaderSize;
  const uint8_t* stored = extension + ext;
  if (FrameCrc(*h, extension, stored) != h->crc) return FrameCheck::kBad;
  if (h->codec == static_cast<uint16_t>(format::Codec::kNone)) {
    *payload = stored;
    *psize = h->stored_size;
    if (reinterpret_cast<uintptr_t>(stored) % 8 != 0) {  // FlatBuffers reads aligned scalars
      scratch[0].assign(stored, stored + h->stored_size);
      *payload = scratch[0].data();
    }
  } else if (h->codec == static_cast<uint16_t>(format::Codec::kZstd)) {
    // Buffers only grow: a reader reuses them frame after frame, touching fresh memory once.
    if (scratch[0].size() < h->raw_size) scratch[0].resize(h->raw_size);
    ZSTD_DCtx* dctx = ThreadDCtx();
    const size_t n =
        dctx ? ZSTD_decompressDCtx(dctx, scratch[0].data(), h->raw_size, stored, h->stored_size)
             : ZSTD_decompress(scratch[0].data(), h->raw_size, stored, h->stored_size);
    if (ZSTD_isError(n) || n != h->raw_size) return FrameCheck::kBad;
    *payload = scratch[0].data();
    *psize = n;
  } else {
    return FrameCheck::kBad;
  }
  if (ext) {
    uint32_t e[3];
    std::memcpy(e, extension, sizeof e);
    const TransposedRegion r{e[0], e[1], e[2]};
    // Bounds by division: rows x row_words x 8 from the file may wrap around.
    if (r.row_words == 0 || r.rows == 0 || r.offset > *psize ||
        uint64_t{r.row_words} > (*psize - r.offset) / 8 ||
        uint64_t{r.rows} > (*psize - r.offset) / 8 / r.row_words)
      return FrameCheck::kBad;
    if (scratch[1].size() < *psize) scratch[1].resize(*psize);
    uint8_t* out = scratch[1].data();
    std::memcpy(out, *payload, r.offset);
    if (columns) {
      UndeltaColumns(*payload + r.offset, out + r.offset, r.rows, r.row_words);
      *columns = r;
    } else {
      UntransposeDelta(*payload + r.offset, out + r.offset, r.rows, r.row_words);
    }
    const size_t tail = r.offset + r.bytes();
    std::memcpy(out + tail, *payload + tail, *psize - tail);
    *payload = out;
  }
  flatbuffers::Verifier v(*payload, *psize, 64, 100'000'000);
  if (!v.VerifyBuffer<fb::Batch>(fb::BatchIdentifier())) return FrameCheck::kBad;
  return FrameCheck::kOk;
}

size_t Resync(const ByteView& f, size_t from, std::vector<uint8_t>* scratch) {
  // `scratch` is the reader's pair of buffers (see ForEachBatch). Checking a candidate costs its
  // claimed size (CRC, decompression): a file of headers each claiming megabytes would make the
  // search quadratic. So a candidate is checked in full only when its frame ends where another
  // frame starts (or at the end of the file), and the bytes checked in full in one search are
  // bounded by four times the file's size (plus 1 MiB): past that, nothing more is read.
  FrameHeader h;
  const uint8_t* payload;
  size_t psize, frame_bytes;
  uint64_t budget = 4 * static_cast<uint64_t>(f.size()) + (1u << 20);
  for (size_t off = from; off + format::kFrameHeaderSize <= f.size(); ++off) {
    if (Load<uint32_t>(f.data() + off) != format::kFrameMagic) continue;
    std::memcpy(&h, f.data() + off, sizeof h);
    if (h.stored_size > format::kMaxFrameBytes || h.raw_size > format::kMaxFrameBytes ||
        (h.flags & ~format::kFlagTransposed) != 0)
      continue;
    const size_t ext = (h.flags & format::kFlagTransposed) ? format::kFrameExtensionSize : 0;
    const size_t end = off + format::kFrameHeaderSize + ext + h.stored_size;
    if (end > f.size()) continue;  // a frame that runs past the end is no place to resume
    if (end + 4 <= f.size() && Load<uint32_t>(f.data() + end) != format::kFrameMagic) continue;
    const uint64_t cost = h.stored_size + h.raw_size;
    if (cost > budget) return f.size();
    budget -= cost;
    if (CheckFrame(f, off, &h, scratch, &payload, &psize, &frame_bytes) == FrameCheck::kOk)
      return off;
  }
  return f.size();
}

uint64_t ClampCallTimes(CallRecord* calls, size_t n) {
  uint64_t clamped = 0;
  for (size_t i = 0; i < n; ++i)
    clamped += ClampTime(&calls[i].enter_ns) + ClampTime(&calls[i].exit_ns);
  return clamped;
}

bool CallTimesSane(const CallRecord* calls, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (!TimeSane(calls[i].enter_ns) || !TimeSane(calls[i].exit_ns)) return false;
  return true;
}

void CollectBatch(const fb::Batch& b, TraceFile* t) {
  std::vector<CallRecord> calls;
  CollectBatch(b, t, &calls);
  t->calls.Append(calls.data(), calls.size());
}

void CollectBatch(const fb::Batch& b, TraceFile* t, std::vector<CallRecord>* out_calls) {
  if (b.strings())
    for (const auto* s : *b.strings()) t->strings[s->id()] = Str(s->text());
  const size_t comms = t->comms.size(), calls = out_calls ? out_calls->size() : 0,
               clocks = t->clocks.size(), gpu = t->gpu_times.size(), graph = t->graph_events.size();
  AppendStructs(b.comms(), &t->comms);
  if (out_calls) AppendStructs(b.calls(), out_calls);
  AppendStructs(b.clocks(), &t->clocks);
  auto sane = [t](int64_t& v) { t->clamped_times += ClampTime(&v); };
  for (size_t i = comms; i < t->comms.size(); ++i) sane(t->comms[i].create_ns);
  if (out_calls)
    t->clamped_times += ClampCallTimes(out_calls->data() + calls, out_calls->size() - calls);
  for (size_t i = clocks; i < t->clocks.size(); ++i) {
    sane(t->clocks[i].mono_ns);
    sane(t->clocks[i].real_ns);
  }
  AppendStructs(b.drops(), &t->drops);
  AppendStructs(b.gpu_times(), &t->gpu_times);
  AppendStructs(b.graph_events(), &t->graph_events);
  for (size_t i = gpu; i < t->gpu_times.size(); ++i) {
    sane(t->gpu_times[i].start_ns);
    sane(t->gpu_times[i].end_ns);
  }
  // Start marks go apart: whoever reads GPU times reads complete ones.
  auto marks =
      std::stable_partition(t->gpu_times.begin() + static_cast<ptrdiff_t>(gpu), t->gpu_times.end(),
                            [](const GpuTimeRecord& g) { return !IsStartMark(g); });
  t->gpu_started.insert(t->gpu_started.end(), marks, t->gpu_times.end());
  t->gpu_times.erase(marks, t->gpu_times.end());
  for (size_t i = graph; i < t->graph_events.size(); ++i) sane(t->graph_events[i].time_ns);
  AppendStructs(b.queries(), &t->queries);
  if (b.notes())
    for (const auto* n : *b.notes())
      t->notes.push_back({n->time_ns(), static_cast<NoteLevel>(n->level()), Str(n->text())});
  if (b.sketches()) {
    for (const auto* s : *b.sketches()) {
      SketchData d;
      d.call_uid = s->call_uid();
      d.which = static_cast<SketchWhich>(s->which());
      d.dtype = s->dtype();
      d.count = s->count();
      d.first = s->first();
      if (s->dots())
        for (size_t i = 0; i < std::min<size_t>(kSketchDots, s->dots()->size()); ++i)
          d.dots[i] = s->dots()->Get(i);
      d.sumsq = s->sumsq();
      d.nan = s->nan();
      d.posinf = s->posinf();
      d.neginf = s->neginf();
      if (s->sample_idx()) d.sample_idx.assign(s->sample_idx()->begin(), s->sample_idx()->end());
      if (s->samples()) d.samples.assign(s->samples()->begin(), s->samples()->end());
      d.launch = s->launch();
      t->sketches.push_back(std::move(d));
    }
  }
  if (b.captures())
    for (const auto* c : *b.captures())
      t->captures.push_back({c->call_uid(), static_cast<SketchWhich>(c->which()), Str(c->file()),
                             c->offset(), c->bytes()});
  if (b.footer()) t->footer = ReadFooter(*b.footer());
  if (b.nccl_version() != 0) t->nccl_version = b.nccl_version();
}

}  // namespace ncclrr::internal
