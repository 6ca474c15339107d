#include "import/fr_dump.h"

#include <cctype>
#include <cstdlib>

#include "import/py_data.h"

namespace ncclrr::fr {
namespace {

using py::Document;
using py::Kind;
using py::Value;

// Reads the fields of one dict; the first type error wins and names where it was.
class FieldReader {
 public:
  FieldReader(const Document& d, const Value& dict, std::string where)
      : d_(d), dict_(dict), where_(std::move(where)) {}

  const Value* Get(std::string_view key) const { return d_.Find(dict_, key); }

  // An int, or a string holding one (JSON dumps write pg_status as strings); None keeps `def`.
  int64_t Int(std::string_view key, int64_t def = 0) {
    const Value* v = Get(key);
    if (!v || v->kind == Kind::kNone) return def;
    if (v->kind == Kind::kInt || v->kind == Kind::kBool) return v->i;
    if (v->kind == Kind::kFloat) {  // in range only: casting a larger double is undefined
      if (v->f > -9.2e18 && v->f < 9.2e18) return static_cast<int64_t>(v->f);
      Fail(key, "an int in the 64-bit range", *v);
      return def;
    }
    if (v->kind == Kind::kStr) {
      char* end = nullptr;
      const long long n = std::strtoll(v->s.c_str(), &end, 10);
      if (end && *end == '\0' && !v->s.empty()) return n;
    }
    Fail(key, "an int", *v);
    return def;
  }
  std::string Str(std::string_view key) {
    const Value* v = Get(key);
    if (!v || v->kind == Kind::kNone) return {};
    if (v->kind == Kind::kStr || v->kind == Kind::kBytes) return v->s;
    if (v->kind == Kind::kInt) return std::to_string(v->i);
    Fail(key, "a str", *v);
    return {};
  }
  bool Bool(std::string_view key) { return Int(key, 0) != 0; }
  std::vector<std::string> StrList(std::string_view key) {
    std::vector<std::string> out;
    const Value* v = Get(key);
    if (!v || v->kind == Kind::kNone) return out;
    if (!IsSeq(*v)) return Fail(key, "a list of str", *v), out;
    for (uint32_t i : v->items) {
      const Value& s = d_.at(i);
      if (s.kind != Kind::kStr) return Fail(key, "a list of str", s), out;
      out.push_back(s.s);
    }
    return out;
  }
  std::vector<std::vector<int64_t>> Sizes(std::string_view key) {
    std::vector<std::vector<int64_t>> out;
    const Value* v = Get(key);
    if (!v || v->kind == Kind::kNone) return out;
    if (!IsSeq(*v)) return Fail(key, "a list of lists of int", *v), out;
    for (uint32_t i : v->items) {
      const Value& dims = d_.at(i);
      if (!IsSeq(dims)) return Fail(key, "a list of lists of int", dims), out;
      auto& row = out.emplace_back();
      for (uint32_t j : dims.items) {
        const Value& n = d_.at(j);
        if (n.kind != Kind::kInt) return Fail(key, "a list of lists of int", n), out;
        row.push_back(n.i);
      }
    }
    return out;
  }

  static bool IsSeq(const Value& v) { return v.kind == Kind::kList || v.kind == Kind::kTuple; }
  void Fail(std::string_view key, const char* want, const Value& got) {
    if (error_.empty())
      error_ = where_ + ": '" + std::string(key) + "' should be " + want + ", found " +
               py::KindName(got.kind);
  }
  const std::string& error() const { return error_; }

 private:
  const Document& d_;
  const Value& dict_;
  std::string where_;
  std::string error_;
};

// "[0, 1, 2]" (how FR writes a group's ranks) or a real list.
Status ReadRanks(const Document& d, const Value& v, std::vector<int64_t>* out) {
  if (FieldReader::IsSeq(v)) {
    for (uint32_t i : v.items) {
      if (d.at(i).kind != Kind::kInt) return Corrupt("a group's ranks should be ints");
      out->push_back(d.at(i).i);
    }
    return Status::Ok();
  }
  if (v.kind != Kind::kStr) return Corrupt("a group's ranks should be a list or \"[0, 1]\"");
  const std::string& s = v.s;
  for (size_t k = 0; k < s.size();) {
    if (std::isdigit(static_cast<unsigned char>(s[k]))) {
      size_t end = k;
      while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
      if (end - k > 9) return Corrupt("a rank in \"" + s.substr(0, 40) + "\" is out of range");
      out->push_back(std::stoll(s.substr(k, end - k)));
      k = end;
    } else if (s[k] == '[' || s[k] == ']' || s[k] == ',' || s[k] == ' ') {
      ++k;
    } else {
      return Corrupt("a group's ranks \"" + s.substr(0, 40) + "\" are not a list of ints");
    }
  }
  return Status::Ok();
}

Status ReadGroups(const Document& d, const Value& config, Dump* out) {
  if (config.kind != Kind::kDict) return Corrupt("'pg_config' should be a dict");
  for (size_t k = 0; k + 1 < config.items.size(); k += 2) {
    const Value& key = d.at(config.items[k]);
    const Value& info = d.at(config.items[k + 1]);
    if (key.kind != Kind::kStr || info.kind != Kind::kDict)
      return Corrupt("'pg_config' should map group names to dicts");
    Group g;
    FieldReader f(d, info, "pg_config['" + key.s + "']");
    g.name = f.Str("name");
    if (g.name.empty()) g.name = key.s;
    g.desc = f.Str("desc");
    if (const Value* r = f.Get("ranks")) NCCLRR_RETURN_IF_ERROR(ReadRanks(d, *r, &g.ranks));
    if (!f.error().empty()) return Corrupt(f.error());
    out->groups[key.s] = std::move(g);
  }
  out->has_pg_config = true;
  return Status::Ok();
}

Status ReadFrames(const Document& d, const Value& frames, const std::string& where,
                  std::vector<Frame>* out) {
  if (!FieldReader::IsSeq(frames)) return Corrupt(where + ": 'frames' should be a list");
  for (uint32_t i : frames.items) {
    const Value& fv = d.at(i);
    if (fv.kind != Kind::kDict) return Corrupt(where + ": a frame should be a dict");
    FieldReader f(d, fv, where + " frame");
    Frame fr;
    fr.file = f.Str("filename");
    fr.name = f.Str("name");
    fr.line = f.Int("line");
    if (!f.error().empty()) return Corrupt(f.error());
    out->push_back(std::move(fr));
  }
  return Status::Ok();
}

Status ReadEntry(const Document& d, const Value& ev, size_t index, Dump* out) {
  const std::string where = "entry " + std::to_string(index);
  if (ev.kind != Kind::kDict)
    return Corrupt(where + " should be a dict, found " + py::KindName(ev.kind));
  FieldReader f(d, ev, where);
  Entry e;
  e.profiling_name = f.Str("profiling_name");
  if (e.profiling_name.empty()) {
    ++out->entries_without_name;
    return Status::Ok();
  }
  e.record_id = f.Int("record_id", -1);
  e.pg_id = f.Int("pg_id", -1);
  if (const Value* pg = f.Get("process_group"); pg && FieldReader::IsSeq(*pg)) {
    if (!pg->items.empty() && d.at(pg->items[0]).kind == Kind::kStr)
      e.pg_name = d.at(pg->items[0]).s;
    if (pg->items.size() > 1 && d.at(pg->items[1]).kind == Kind::kStr)
      e.pg_desc = d.at(pg->items[1]).s;
  } else if (pg && pg->kind == Kind::kStr) {
    e.pg_name = pg->s;
  } else if (pg && pg->kind != Kind::kNone) {
    return Corrupt(where + ": 'process_group' should be a (name, desc) tuple, found " +
                   py::KindName(pg->kind));
  }
  if (e.pg_name.empty() && e.pg_id >= 0) e.pg_name = std::to_string(e.pg_id);  // before 2.1
  e.collective_seq_id =
      f.Get("collective_seq_id") ? f.Int("collective_seq_id", -1) : f.Int("seq_id", -1);
  e.p2p_seq_id = f.Int("p2p_seq_id", -1);
  e.op_id = f.Int("op_id", -1);
  e.input_sizes = f.Sizes("input_sizes");
  e.output_sizes = f.Sizes("output_sizes");
  e.input_dtypes = f.StrList("input_dtypes");
  e.output_dtypes = f.StrList("output_dtypes");
  e.state = f.Str("state");
  e.time_created_ns = f.Int("time_created_ns");
  e.time_started_ns = f.Int("time_discovered_started_ns");
  e.time_completed_ns = f.Int("time_discovered_completed_ns");
  e.timeout_ms = f.Int("timeout_ms");
  e.thread_id = f.Str("thread_id");
  // is_p2p appeared in 2.2; before it the name tells ("nccl:send 0->1").
  e.is_p2p = f.Get("is_p2p") ? f.Bool("is_p2p")
                             : e.profiling_name.find(":send") != std::string::npos ||
                                   e.profiling_name.find(":recv") != std::string::npos;
  if (!f.error().empty()) return Corrupt(f.error());
  if (const Value* frames = f.Get("frames"); frames && frames->kind != Kind::kNone)
    NCCLRR_RETURN_IF_ERROR(ReadFrames(d, *frames, where, &e.frames));
  out->entries.push_back(std::move(e));
  return Status::Ok();
}

StatusOr<Dump> FromDocument(const Document& d) {
  const Value& root = d.root();
  if (root.kind != Kind::kDict)
    return Corrupt(std::string("a Flight Recorder dump is a dict; this file holds a ") +
                   py::KindName(root.kind));
  FieldReader f(d, root, "dump");
  Dump out;
  out.version = f.Str("version");
  out.comm_lib_version = f.Str("comm_lib_version");
  if (!f.error().empty()) return Corrupt(f.error());
  const Value* entries = f.Get("entries");
  if (out.version.empty() && !entries)
    return Corrupt("no 'version' and no 'entries': not a Flight Recorder dump");
  if (const Value* config = f.Get("pg_config"))
    NCCLRR_RETURN_IF_ERROR(ReadGroups(d, *config, &out));
  if (entries && entries->kind != Kind::kNone) {  // JSON dumps leave it out when empty
    if (!FieldReader::IsSeq(*entries))
      return Corrupt(std::string("'entries' should be a list, found ") +
                     py::KindName(entries->kind));
    for (size_t k = 0; k < entries->items.size(); ++k)
      NCCLRR_RETURN_IF_ERROR(ReadEntry(d, d.at(entries->items[k]), k, &out));
  }
  return out;
}

// Python's repr of bytes, b'...' or b"...": undo its escapes.
bool UnreprBytes(std::string_view in, std::string* out) {
  if (in.size() < 3 || in[0] != 'b' || (in[1] != '\'' && in[1] != '"')) return false;
  const char quote = in[1];
  size_t end = in.find_last_of(quote);
  if (end == std::string_view::npos || end < 2) return false;
  for (size_t k = 2; k < end; ++k) {
    if (in[k] != '\\' || k + 1 >= end) {
      out->push_back(in[k]);
      continue;
    }
    const char c = in[++k];
    if (c == 'n')
      out->push_back('\n');
    else if (c == 't')
      out->push_back('\t');
    else if (c == 'r')
      out->push_back('\r');
    else if (c == 'x' && k + 2 < end && std::isxdigit(static_cast<unsigned char>(in[k + 1])) &&
             std::isxdigit(static_cast<unsigned char>(in[k + 2]))) {
      out->push_back(static_cast<char>(std::stoi(std::string(in.substr(k + 1, 2)), nullptr, 16)));
      k += 2;
    } else {
      out->push_back(c);  // \\, \', \"
    }
  }
  return true;
}

}  // namespace

StatusOr<Dump> ParseDump(std::string_view bytes) {
  if (bytes.empty())
    return Corrupt(
        "the file is empty (a dump that was never written: did the process die or "
        "time out before it dumped?)");
  if (static_cast<uint8_t>(bytes[0]) == 0x80) {
    auto doc = py::ParsePickle(bytes);
    if (!doc.ok()) return doc.status();
    return FromDocument(*doc);
  }
  size_t k = 0;
  while (k < bytes.size() && std::isspace(static_cast<unsigned char>(bytes[k]))) ++k;
  std::string unrepr;
  std::string_view text = bytes.substr(k);
  if (UnreprBytes(text, &unrepr)) text = unrepr;
  if (text.empty() || text[0] != '{')
    return Corrupt(
        "not a Flight Recorder dump: expected a pickle (first byte 0x80) or a JSON "
        "object ('{')");
  auto doc = py::ParseJson(text);
  if (!doc.ok()) return doc.status();
  return FromDocument(*doc);
}

}  // namespace ncclrr::fr
