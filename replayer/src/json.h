#pragma once
// A small JSON value: parsed from order files (with line:column in every error) and built for
// the --json report (serialized with members in insertion order, so output is byte-stable).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ncclrr/base/status.h"

namespace ncclrr::replay {

class Json {
 public:
  enum class Type : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };

  Json() = default;
  static Json Bool(bool b);
  static Json Number(double v);
  static Json Int(int64_t v);
  static Json Uint(uint64_t v);
  static Json Str(std::string s);
  static Json Array();
  static Json Object();

  Type type() const { return type_; }
  bool is(Type t) const { return type_ == t; }
  bool boolean() const { return bool_; }
  double number() const { return number_; }
  // True when the number is an integer that fits (order files hold seqs and ranks).
  bool AsUint(uint64_t* out) const;
  bool AsInt(int64_t* out) const;
  const std::string& str() const { return string_; }
  const std::vector<Json>& items() const { return items_; }
  const std::vector<std::pair<std::string, Json>>& members() const { return members_; }
  const Json* Find(std::string_view key) const;  // nullptr when absent (objects only)

  Json& Push(Json v);                  // arrays
  Json& Set(std::string key, Json v);  // objects (appends; keys are not deduplicated)

  std::string Serialize(int indent = 2) const;

  // Parses one JSON document. Errors say where ("line 3, column 7") and what was expected.
  static StatusOr<Json> Parse(std::string_view text);

  // Where a parsed value began, for messages about its meaning ("line 4").
  int line() const { return line_; }

 private:
  friend class JsonParser;
  void Write(std::string* out, int indent, int depth) const;

  Type type_ = Type::kNull;
  bool bool_ = false;
  bool integral_ = false;  // written without a fraction
  bool negative_ = false;
  uint64_t magnitude_ = 0;  // integral values, exactly
  double number_ = 0;
  std::string string_;
  std::vector<Json> items_;
  std::vector<std::pair<std::string, Json>> members_;
  int line_ = 0;
};

}  // namespace ncclrr::replay
