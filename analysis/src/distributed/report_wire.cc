#include "distributed/report_wire.h"

#include <optional>

namespace ncclrr::analysis::wire {
namespace {

template <typename T>
void PutOpt(Writer& w, const std::optional<T>& v) {
  w.Put<uint8_t>(v.has_value());
  if (v) w.Put(*v);
}

template <typename T>
std::optional<T> GetOpt(Reader& r) {
  if (!r.Get<uint8_t>()) return std::nullopt;
  return r.Get<T>();
}

}  // namespace

void PutFinding(Writer& w, const Finding& f) {
  w.Put(f.kind);
  w.Put<uint64_t>(f.comm_index);
  w.Put(f.comm);
  w.Str(f.comm_name);
  PutOpt(w, f.seq);
  PutOpt(w, f.peer);
  w.Vec(f.ranks);
  w.Put(f.first_time);
  w.Put(f.repeats);
  PutOpt(w, f.last_seq);
  PutOpt(w, f.confidence);
  w.Str(f.short_text);
  w.Str(f.message);
  w.Each(f.table, [&](const TableRow& t) {
    w.Str(t.rank);
    w.Str(t.seq);
    w.Str(t.what);
    w.Put<uint8_t>(t.differs);
  });
  w.Vec(f.calls);
  w.Str(f.pattern);
  w.Str(f.call_sites);
}

Finding GetFinding(Reader& r) {
  Finding f;
  f.kind = r.Get<FindingKind>();
  f.comm_index = r.Get<uint64_t>();
  f.comm = r.Get<uint64_t>();
  f.comm_name = r.Str();
  f.seq = GetOpt<uint64_t>(r);
  f.peer = GetOpt<int>(r);
  f.ranks = r.Vec<int>();
  f.first_time = r.Get<int64_t>();
  f.repeats = r.Get<uint64_t>();
  f.last_seq = GetOpt<uint64_t>(r);
  f.confidence = GetOpt<double>(r);
  f.short_text = r.Str();
  f.message = r.Str();
  r.Each([&] {
    TableRow t;
    t.rank = r.Str();
    t.seq = r.Str();
    t.what = r.Str();
    t.differs = r.Get<uint8_t>() != 0;
    f.table.push_back(std::move(t));
  });
  f.calls = r.Vec<InvolvedCall>();
  f.pattern = r.Str();
  f.call_sites = r.Str();
  return f;
}

void PutNote(Writer& w, const Note& n) {
  w.Put(n.kind);
  w.Put(n.file);
  w.Str(n.file_name);
  w.Each(n.ranks, [&](const std::pair<uint64_t, int>& cr) {
    w.Put(cr.first);
    w.Put(cr.second);
  });
  w.Put(n.count);
  w.Str(n.message);
  w.Put(n.comm_index);
}

Note GetNote(Reader& r) {
  Note n;
  n.kind = r.Get<NoteKind>();
  n.file = r.Get<int32_t>();
  n.file_name = r.Str();
  r.Each([&] {
    const auto comm = r.Get<uint64_t>();
    n.ranks.emplace_back(comm, r.Get<int>());
  });
  n.count = r.Get<uint64_t>();
  n.message = r.Str();
  n.comm_index = r.Get<int64_t>();
  return n;
}

}  // namespace ncclrr::analysis::wire
