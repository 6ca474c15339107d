#pragma once
// The streaming JSON writer of every report and export (objects, arrays, strings with escaping,
// numbers, null): it appends to a string as it goes, so big outputs never exist as a document.
// Compact by default; with an indent, one member or element a line (reports people read).
// Documents that are read (order files, Flight Recorder JSON) use nlohmann-json.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "ncclrr/base/text.h"

namespace ncclrr {

class JsonWriter {
 public:
  explicit JsonWriter(std::string* out) : out_(*out) {}
  // `indent` > 0: every member and element on a line of its own, `indent` spaces deeper than its
  // container, and ": " after each key; empty containers stay "{}" and "[]".
  JsonWriter(std::string* out, int indent) : out_(*out), indent_(indent > 0 ? indent : 0) {}

  JsonWriter& BeginObject() { return Open('{'); }
  JsonWriter& EndObject() { return Close('}'); }
  JsonWriter& BeginArray() { return Open('['); }
  JsonWriter& EndArray() { return Close(']'); }
  JsonWriter& Key(std::string_view k) {
    Sep();
    String(k);
    out_ += indent_ ? ": " : ":";
    after_key_ = true;
    return *this;
  }
  JsonWriter& Str(std::string_view v) {
    Sep();
    String(v);
    return *this;
  }
  JsonWriter& Int(int64_t v) {
    Sep();
    out_ += std::to_string(v);
    return *this;
  }
  JsonWriter& Uint(uint64_t v) {
    Sep();
    out_ += std::to_string(v);
    return *this;
  }
  // `decimals` < 0: shortest %g form. NaN and infinities have no JSON form: null.
  JsonWriter& Double(double v, int decimals = -1) {
    Sep();
    if (!std::isfinite(v)) {
      out_ += "null";
      return *this;
    }
    char buf[40];
    if (decimals < 0)
      std::snprintf(buf, sizeof buf, "%.6g", v);
    else
      std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    out_ += buf;
    return *this;
  }
  // Every significant digit (%.17g), so the value reads back as the same double; null as above.
  JsonWriter& ExactDouble(double v) {
    Sep();
    if (!std::isfinite(v)) {
      out_ += "null";
      return *this;
    }
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    out_ += buf;
    return *this;
  }
  JsonWriter& Bool(bool v) {
    Sep();
    out_ += v ? "true" : "false";
    return *this;
  }
  JsonWriter& Null() {
    Sep();
    out_ += "null";
    return *this;
  }
  // Newline between top-level array elements keeps big exports diffable and greppable.
  void Newline() { out_ += '\n'; }

  static void Escape(std::string_view s, std::string* out) {
    for (size_t i = 0; i < s.size(); ++i) {
      const char ch = s[i];
      const auto c = static_cast<unsigned char>(ch);
      if (c >= 0x80) {  // copied when well-formed UTF-8, else U+FFFD: the output stays valid
        i += AppendJsonUtf8(s, i, out) - 1;
        continue;
      }
      switch (c) {
        case '"':
          *out += "\\\"";
          break;
        case '\\':
          *out += "\\\\";
          break;
        case '\n':
          *out += "\\n";
          break;
        case '\t':
          *out += "\\t";
          break;
        case '\r':
          *out += "\\r";
          break;
        default:
          if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            *out += buf;
          } else {
            *out += ch;
          }
      }
    }
  }

 private:
  JsonWriter& Open(char c) {
    Sep();
    out_ += c;
    first_ = true;
    ++depth_;
    return *this;
  }
  JsonWriter& Close(char c) {
    --depth_;
    if (!first_) LineBreak();  // a container with members closes on a line of its own
    out_ += c;
    first_ = false;
    return *this;
  }
  void Sep() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_) out_ += ',';
    first_ = false;
    if (depth_ > 0) LineBreak();
  }
  void LineBreak() {
    if (!indent_) return;
    out_ += '\n';
    out_.append(static_cast<size_t>(indent_) * static_cast<size_t>(depth_), ' ');
  }
  void String(std::string_view s) {
    out_ += '"';
    Escape(s, &out_);
    out_ += '"';
  }
  std::string& out_;
  int indent_ = 0;
  int depth_ = 0;  // open containers
  bool first_ = true;
  bool after_key_ = false;
};

}  // namespace ncclrr
