#pragma once
// Plain Python data (None, bool, int, float, str, bytes, list, tuple, dict) as read from a
// pickle or a JSON document: what PyTorch's Flight Recorder dumps hold. Values live in one arena
// and refer to each other by index, so a pickle whose memo makes a list contain itself costs no
// leak and no recursion here; readers walk only the fixed depth of the schema they expect.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ncclrr/base/status.h"

namespace ncclrr::py {

enum class Kind : uint8_t { kNone, kBool, kInt, kFloat, kStr, kBytes, kList, kTuple, kDict };
const char* KindName(Kind k);  // Python's names: "None", "int", "str", "list", ...

struct Value {
  Kind kind = Kind::kNone;
  int64_t i = 0;  // kBool (0/1), kInt
  double f = 0;   // kFloat
  std::string s;  // kStr (UTF-8), kBytes
  // kList, kTuple: item indices; kDict: key, value, key, value, ... indices.
  std::vector<uint32_t> items;
};

class Document {
 public:
  const Value& root() const { return values_[root_]; }
  const Value& at(uint32_t index) const { return values_[index]; }
  // The value of `key` in `dict` (a str key), or nullptr when absent or `dict` is no dict.
  const Value* Find(const Value& dict, std::string_view key) const;
  size_t size() const { return values_.size(); }

  // For the parsers.
  uint32_t Add(Value v) {
    values_.push_back(std::move(v));
    return static_cast<uint32_t>(values_.size() - 1);
  }
  Value& mutable_at(uint32_t index) { return values_[index]; }
  void set_root(uint32_t index) { root_ = index; }

 private:
  std::vector<Value> values_;
  uint32_t root_ = 0;
};

// Pickle protocols 2 to 5, the opcodes of plain data (FR dumps are written by torch's pickler,
// protocol 2). Anything else (classes, reduce calls, protocol 0 text opcodes) is an error that
// names the opcode and its offset.
StatusOr<Document> ParsePickle(std::string_view bytes);

// JSON (RFC 8259) into the same values: objects are dicts, arrays lists.
StatusOr<Document> ParseJson(std::string_view text);

}  // namespace ncclrr::py
