// The value arena, and JSON into it through nlohmann-json's SAX interface: no DOM and no
// recursion, so a deeply nested or huge document costs only its values.
#include "import/py_data.h"

#include <nlohmann/json.hpp>

namespace ncclrr::py {

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kStr:
      return "str";
    case Kind::kBytes:
      return "bytes";
    case Kind::kList:
      return "list";
    case Kind::kTuple:
      return "tuple";
    case Kind::kDict:
      return "dict";
  }
  return "?";
}

const Value* Document::Find(const Value& dict, std::string_view key) const {
  if (dict.kind != Kind::kDict) return nullptr;
  for (size_t k = 0; k + 1 < dict.items.size(); k += 2) {
    const Value& name = values_[dict.items[k]];
    if (name.kind == Kind::kStr && name.s == key) return &values_[dict.items[k + 1]];
  }
  return nullptr;
}

namespace {

class JsonBuilder : public nlohmann::json_sax<nlohmann::json> {
 public:
  bool null() override { return Put(Value{}); }
  bool boolean(bool b) override { return Scalar(Kind::kBool, b ? 1 : 0); }
  bool number_integer(number_integer_t n) override { return Scalar(Kind::kInt, n); }
  bool number_unsigned(number_unsigned_t n) override {
    if (n > static_cast<uint64_t>(INT64_MAX)) return number_float(static_cast<double>(n), "");
    return Scalar(Kind::kInt, static_cast<int64_t>(n));
  }
  bool number_float(number_float_t f, const string_t&) override {
    Value v;
    v.kind = Kind::kFloat;
    v.f = f;
    return Put(std::move(v));
  }
  bool string(string_t& s) override {
    Value v;
    v.kind = Kind::kStr;
    v.s = std::move(s);
    return Put(std::move(v));
  }
  bool binary(binary_t&) override { return Put(Value{}); }
  bool start_object(std::size_t) override { return Open(Kind::kDict); }
  bool key(string_t& s) override { return string(s); }
  bool end_object() override { return Close(); }
  bool start_array(std::size_t) override { return Open(Kind::kList); }
  bool end_array() override { return Close(); }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& e) override {
    error_ = "JSON error at byte " + std::to_string(position) + ": " + e.what();
    return false;
  }

  Document doc;
  std::string error_;
  bool has_root = false;

 private:
  bool Scalar(Kind kind, int64_t i) {
    Value v;
    v.kind = kind;
    v.i = i;
    return Put(std::move(v));
  }
  // Adds a value to the innermost open container, or as the document when none is open.
  uint32_t Attach(Value v) {
    const uint32_t id = doc.Add(std::move(v));
    if (open_.empty()) {
      doc.set_root(id);
      has_root = true;
    } else {
      doc.mutable_at(open_.back()).items.push_back(id);
    }
    return id;
  }
  bool Put(Value v) {
    Attach(std::move(v));
    return true;
  }
  bool Open(Kind kind) {
    Value v;
    v.kind = kind;
    open_.push_back(Attach(std::move(v)));
    return true;
  }
  bool Close() {
    if (!open_.empty()) open_.pop_back();
    return true;
  }
  std::vector<uint32_t> open_;
};

}  // namespace

StatusOr<Document> ParseJson(std::string_view text) {
  JsonBuilder b;
  bool ok = false;
  try {
    ok = nlohmann::json::sax_parse(text.begin(), text.end(), &b);
  } catch (const std::exception& e) {  // sax_parse reports through parse_error; be safe anyway
    return Corrupt(std::string("JSON error: ") + e.what());
  }
  if (!ok || !b.has_root) return Corrupt(b.error_.empty() ? "not a JSON document" : b.error_);
  return std::move(b.doc);
}

}  // namespace ncclrr::py
