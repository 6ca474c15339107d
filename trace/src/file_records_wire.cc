#include "ncclrr/trace/file_records_wire.h"

#include <map>
#include <type_traits>

#include "ncclrr/base/wire.h"

namespace ncclrr {
namespace {

using wire::Reader;
using wire::Writer;

// The fixed-size records go as they are.
static_assert(std::is_trivially_copyable_v<CommRecord> &&
              std::is_trivially_copyable_v<ClockPairRecord> &&
              std::is_trivially_copyable_v<DropCountRecord> &&
              std::is_trivially_copyable_v<GpuTimeRecord> &&
              std::is_trivially_copyable_v<GraphEventRecord> &&
              std::is_trivially_copyable_v<QueryCountRecord> &&
              std::is_trivially_copyable_v<FooterSummary::CommRank>);

void PutStrings(Writer& w, const std::vector<std::string>& v) {
  w.Each(v, [&](const std::string& s) { w.Str(s); });
}
std::vector<std::string> GetStrings(Reader& r) {
  std::vector<std::string> v;
  r.Each([&] { v.push_back(r.Str()); });
  return v;
}

void PutHeader(Writer& w, const HeaderData& h) {
  w.Put(h.format_major);
  w.Put(h.format_minor);
  w.Str(h.schema_hash);
  w.Str(h.host);
  w.Put(h.pid);
  w.Put(h.ppid);
  w.Put(h.start_mono_ns);
  w.Put(h.start_real_ns);
  w.Put(h.nccl_version);
  w.Put(h.cuda_version);
  w.Put(h.route);
  w.Put<uint8_t>(h.ring_mode);
  w.Put(h.ring_capacity);
  PutStrings(w, h.argv);
  w.Put<uint64_t>(h.env.size());
  for (const auto& [k, v] : h.env) {
    w.Str(k);
    w.Str(v);
  }
}

void GetHeader(Reader& r, HeaderData* h) {
  h->format_major = r.Get<uint16_t>();
  h->format_minor = r.Get<uint16_t>();
  h->schema_hash = r.Str();
  h->host = r.Str();
  h->pid = r.Get<int32_t>();
  h->ppid = r.Get<int32_t>();
  h->start_mono_ns = r.Get<int64_t>();
  h->start_real_ns = r.Get<int64_t>();
  h->nccl_version = r.Get<int32_t>();
  h->cuda_version = r.Get<int32_t>();
  h->route = r.Get<Route>();
  h->ring_mode = r.Get<uint8_t>() != 0;
  h->ring_capacity = r.Get<uint32_t>();
  h->argv = GetStrings(r);
  r.Each([&] {
    std::string k = r.Str();
    h->env[std::move(k)] = r.Str();
  });
}

void PutFooter(Writer& w, const std::optional<FooterData>& f) {
  w.Put<uint8_t>(f.has_value());
  if (!f) return;
  w.Put<uint8_t>(f->clean);
  w.Put(f->calls);
  w.Put(f->dropped);
  w.Put(f->end_ns);
  w.Str(f->reason);
  w.Put<uint8_t>(f->summary.has_value());
  if (!f->summary) return;
  const FooterSummary& s = *f->summary;
  w.Vec(s.comms);
  for (uint64_t v : {s.gpu_times, s.gpu_times_cupti, s.gpu_times_events, s.captures,
                     s.capture_bytes, s.captured_calls})
    w.Put(v);
  PutStrings(w, s.notes);
}

void GetFooter(Reader& r, std::optional<FooterData>* out) {
  if (!r.Get<uint8_t>()) return;
  FooterData& f = out->emplace();
  f.clean = r.Get<uint8_t>() != 0;
  f.calls = r.Get<uint64_t>();
  f.dropped = r.Get<uint64_t>();
  f.end_ns = r.Get<int64_t>();
  f.reason = r.Str();
  if (!r.Get<uint8_t>()) return;
  FooterSummary& s = f.summary.emplace();
  s.comms = r.Vec<FooterSummary::CommRank>();
  for (uint64_t* v : {&s.gpu_times, &s.gpu_times_cupti, &s.gpu_times_events, &s.captures,
                      &s.capture_bytes, &s.captured_calls})
    *v = r.Get<uint64_t>();
  s.notes = GetStrings(r);
}

void PutSketch(Writer& w, const SketchData& s) {
  w.Put(s.call_uid);
  w.Put(s.which);
  w.Put(s.dtype);
  w.Put(s.count);
  w.Put(s.first);
  w.Put(s.dots);
  w.Put(s.sumsq);
  w.Put(s.nan);
  w.Put(s.posinf);
  w.Put(s.neginf);
  w.Vec(s.sample_idx);
  w.Vec(s.samples);
  w.Put(s.launch);
}

SketchData GetSketch(Reader& r) {
  SketchData s;
  s.call_uid = r.Get<uint64_t>();
  s.which = r.Get<SketchWhich>();
  s.dtype = r.Get<uint8_t>();
  s.count = r.Get<uint64_t>();
  s.first = r.Get<uint64_t>();
  s.dots = r.Get<decltype(s.dots)>();
  s.sumsq = r.Get<double>();
  s.nan = r.Get<uint64_t>();
  s.posinf = r.Get<uint64_t>();
  s.neginf = r.Get<uint64_t>();
  s.sample_idx = r.Vec<uint64_t>();
  s.samples = r.Vec<double>();
  s.launch = r.Get<uint64_t>();
  return s;
}

}  // namespace

void SaveRecordsButCalls(const TraceFile& t, std::string* out) {
  std::string body;
  Writer w(&body);
  w.Str(t.path);
  PutHeader(w, t.header);
  w.Put(t.nccl_version);
  // By id, so that the same records always give the same bytes.
  const std::map<uint32_t, std::string> strings(t.strings.begin(), t.strings.end());
  w.Put<uint64_t>(strings.size());
  for (const auto& [id, s] : strings) {
    w.Put(id);
    w.Str(s);
  }
  w.Vec(t.gpu_started);
  PutFooter(w, t.footer);
  PutStrings(w, t.warnings);
  w.Put<uint8_t>(t.torn);
  for (uint64_t v : {t.frames, t.bad_frames, t.file_bytes, t.clamped_times}) w.Put(v);
  w.Vec(t.comms);
  w.Vec(t.clocks);
  w.Vec(t.drops);
  w.Each(t.notes, [&](const NoteData& n) {
    w.Put(n.time_ns);
    w.Put(n.level);
    w.Str(n.text);
  });
  w.Vec(t.gpu_times);
  w.Vec(t.graph_events);
  w.Vec(t.queries);
  w.Each(t.sketches, [&](const SketchData& s) { PutSketch(w, s); });
  w.Each(t.captures, [&](const CaptureRefData& c) {
    w.Put(c.call_uid);
    w.Put(c.which);
    w.Str(c.file);
    w.Put(c.offset);
    w.Put(c.bytes);
  });
  // Its length first, so that a reader knows where it ends without trusting its contents.
  Writer(out).Str(body);
}

bool LoadRecordsButCalls(const char* data, size_t n, size_t* used, TraceFile* t) {
  uint64_t len = 0;
  if (n < sizeof len) return false;
  std::memcpy(&len, data, sizeof len);
  if (len > n - sizeof len) return false;
  const std::string body(data + sizeof len, len);
  Reader r(body);
  *t = TraceFile{};
  t->path = r.Str();
  GetHeader(r, &t->header);
  t->nccl_version = r.Get<int32_t>();
  r.Each([&] {
    const auto id = r.Get<uint32_t>();
    t->strings[id] = r.Str();
  });
  t->gpu_started = r.Vec<GpuTimeRecord>();
  GetFooter(r, &t->footer);
  t->warnings = GetStrings(r);
  t->torn = r.Get<uint8_t>() != 0;
  for (uint64_t* v : {&t->frames, &t->bad_frames, &t->file_bytes, &t->clamped_times})
    *v = r.Get<uint64_t>();
  t->comms = r.Vec<CommRecord>();
  t->clocks = r.Vec<ClockPairRecord>();
  t->drops = r.Vec<DropCountRecord>();
  r.Each([&] {
    NoteData d;
    d.time_ns = r.Get<int64_t>();
    d.level = r.Get<NoteLevel>();
    d.text = r.Str();
    t->notes.push_back(std::move(d));
  });
  t->gpu_times = r.Vec<GpuTimeRecord>();
  t->graph_events = r.Vec<GraphEventRecord>();
  t->queries = r.Vec<QueryCountRecord>();
  r.Each([&] { t->sketches.push_back(GetSketch(r)); });
  r.Each([&] {
    CaptureRefData c;
    c.call_uid = r.Get<uint64_t>();
    c.which = r.Get<SketchWhich>();
    c.file = r.Str();
    c.offset = r.Get<uint64_t>();
    c.bytes = r.Get<uint64_t>();
    t->captures.push_back(std::move(c));
  });
  if (r.bad() || !r.done()) {
    *t = TraceFile{};
    return false;
  }
  *used = sizeof len + len;
  return true;
}

}  // namespace ncclrr
