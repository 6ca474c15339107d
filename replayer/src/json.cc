#include "json.h"

#include "ncclrr/trace/describe.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace ncclrr::replay {

Json Json::Bool(bool b) {
  Json j;
  j.type_ = Type::kBool;
  j.bool_ = b;
  return j;
}
Json Json::Number(double v) {
  Json j;
  j.type_ = Type::kNumber;
  j.number_ = v;
  return j;
}
Json Json::Int(int64_t v) {
  Json j = Number(static_cast<double>(v));
  j.integral_ = true;
  j.negative_ = v < 0;
  j.magnitude_ = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  return j;
}
Json Json::Uint(uint64_t v) {
  Json j = Number(static_cast<double>(v));
  j.integral_ = true;
  j.magnitude_ = v;
  return j;
}
Json Json::Str(std::string s) {
  Json j;
  j.type_ = Type::kString;
  j.string_ = std::move(s);
  return j;
}
Json Json::Array() {
  Json j;
  j.type_ = Type::kArray;
  return j;
}
Json Json::Object() {
  Json j;
  j.type_ = Type::kObject;
  return j;
}

bool Json::AsUint(uint64_t* out) const {
  if (type_ != Type::kNumber || !integral_ || negative_) return false;
  *out = magnitude_;
  return true;
}
bool Json::AsInt(int64_t* out) const {
  if (type_ != Type::kNumber || !integral_ || magnitude_ > (uint64_t{1} << 62)) return false;
  *out = negative_ ? -static_cast<int64_t>(magnitude_) : static_cast<int64_t>(magnitude_);
  return true;
}

const Json* Json::Find(std::string_view key) const {
  for (const auto& [k, v] : members_)
    if (k == key) return &v;
  return nullptr;
}

Json& Json::Push(Json v) {
  items_.push_back(std::move(v));
  return items_.back();
}
Json& Json::Set(std::string key, Json v) {
  members_.emplace_back(std::move(key), std::move(v));
  return members_.back().second;
}

namespace {

void Quote(std::string_view s, std::string* out) {
  *out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    const char ch = s[i];
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x80) {  // copied when well-formed UTF-8, else U+FFFD: the output stays valid
      i += AppendJsonUtf8(s, i, out) - 1;
    } else if (c == '"' || c == '\\') {
      *out += '\\';
      *out += ch;
    } else if (c < 0x20) {  // control characters as \u00XX: valid JSON, one rule
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      *out += buf;
    } else {
      *out += ch;
    }
  }
  *out += '"';
}

void Newline(std::string* out, int indent, int depth) {
  if (indent <= 0) return;
  *out += '\n';
  out->append(static_cast<size_t>(indent * depth), ' ');
}

}  // namespace

void Json::Write(std::string* out, int indent, int depth) const {
  switch (type_) {
    case Type::kNull:
      *out += "null";
      return;
    case Type::kBool:
      *out += bool_ ? "true" : "false";
      return;
    case Type::kString:
      Quote(string_, out);
      return;
    case Type::kNumber: {
      if (integral_) {
        if (negative_) *out += '-';
        *out += std::to_string(magnitude_);
      } else if (!std::isfinite(number_)) {
        *out += "null";  // JSON has no NaN or infinity
      } else {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.17g", number_);
        *out += buf;
      }
      return;
    }
    case Type::kArray:
    case Type::kObject: {
      const bool obj = type_ == Type::kObject;
      const size_t n = obj ? members_.size() : items_.size();
      *out += obj ? '{' : '[';
      for (size_t i = 0; i < n; ++i) {
        if (i) *out += ',';
        Newline(out, indent, depth + 1);
        if (obj) {
          Quote(members_[i].first, out);
          *out += indent > 0 ? ": " : ":";
          members_[i].second.Write(out, indent, depth + 1);
        } else {
          items_[i].Write(out, indent, depth + 1);
        }
      }
      if (n) Newline(out, indent, depth);
      *out += obj ? '}' : ']';
      return;
    }
  }
}

std::string Json::Serialize(int indent) const {
  std::string out;
  Write(&out, indent, 0);
  return out;
}

class JsonParser {
 public:
  explicit JsonParser(std::string_view s) : s_(s) {}

  StatusOr<Json> Document() {
    Json v;
    if (!Value(&v, 0)) return InvalidArgument(error_);
    Space();
    if (pos_ != s_.size()) {
      Fail("the end of the document", "more text");
      return InvalidArgument(error_);
    }
    return v;
  }

 private:
  static constexpr int kMaxDepth = 64;

  bool Fail(const std::string& expected, const std::string& found) {
    int line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    error_ = "line " + std::to_string(line) + ", column " + std::to_string(col) + ": expected " +
             expected + ", found " + found;
    return false;
  }
  std::string Here() const {
    if (pos_ >= s_.size()) return "the end of the file";
    return "'" + std::string(1, s_[pos_]) + "'";
  }
  int Line() const {
    int line = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) line += s_[i] == '\n';
    return line;
  }
  void Space() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r'))
      ++pos_;
  }
  bool Literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return Fail("a JSON value", Here());
    pos_ += word.size();
    return true;
  }

  bool Value(Json* out, int depth) {
    Space();
    if (depth > kMaxDepth) return Fail("at most 64 nested arrays or objects", "deeper nesting");
    out->line_ = Line();
    if (pos_ >= s_.size()) return Fail("a JSON value", Here());
    const char c = s_[pos_];
    if (c == '{') return Object(out, depth);
    if (c == '[') return Array(out, depth);
    if (c == '"') {
      out->type_ = Json::Type::kString;
      return String(&out->string_);
    }
    if (c == 't' || c == 'f') {
      out->type_ = Json::Type::kBool;
      out->bool_ = c == 't';
      return Literal(c == 't' ? "true" : "false");
    }
    if (c == 'n') return Literal("null");
    if (c == '-' || (c >= '0' && c <= '9')) return Number(out);
    return Fail("a JSON value", Here());
  }

  bool Object(Json* out, int depth) {
    out->type_ = Json::Type::kObject;
    ++pos_;
    Space();
    if (pos_ < s_.size() && s_[pos_] == '}') return ++pos_, true;
    for (;;) {
      Space();
      std::string key;
      if (pos_ >= s_.size() || s_[pos_] != '"') return Fail("a member name in quotes", Here());
      if (!String(&key)) return false;
      Space();
      if (pos_ >= s_.size() || s_[pos_] != ':') return Fail("':' after the member name", Here());
      ++pos_;
      Json v;
      if (!Value(&v, depth + 1)) return false;
      out->members_.emplace_back(std::move(key), std::move(v));
      Space();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == '}') return ++pos_, true;
      return Fail("',' or '}'", Here());
    }
  }

  bool Array(Json* out, int depth) {
    out->type_ = Json::Type::kArray;
    ++pos_;
    Space();
    if (pos_ < s_.size() && s_[pos_] == ']') return ++pos_, true;
    for (;;) {
      Json v;
      if (!Value(&v, depth + 1)) return false;
      out->items_.push_back(std::move(v));
      Space();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == ']') return ++pos_, true;
      return Fail("',' or ']'", Here());
    }
  }

  static void Utf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      *out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      *out += static_cast<char>(0xC0 | (cp >> 6));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      *out += static_cast<char>(0xE0 | (cp >> 12));
      *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      *out += static_cast<char>(0xF0 | (cp >> 18));
      *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  bool Hex4(uint32_t* v) {
    *v = 0;
    for (int i = 0; i < 4; ++i, ++pos_) {
      if (pos_ >= s_.size()) return Fail("4 hex digits after \\u", Here());
      const char c = s_[pos_];
      const int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
      if (d < 0) return Fail("4 hex digits after \\u", Here());
      *v = *v * 16 + static_cast<uint32_t>(d);
    }
    return true;
  }

  bool String(std::string* out) {
    ++pos_;  // opening quote
    for (;;) {
      if (pos_ >= s_.size()) return Fail("a closing '\"'", Here());
      const char c = s_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) {
        --pos_;
        return Fail("a character (control characters must be escaped)", "a control character");
      }
      if (c != '\\') {
        *out += c;
        continue;
      }
      if (pos_ >= s_.size()) return Fail("an escape sequence", Here());
      const char e = s_[pos_++];
      switch (e) {
        case '"':
          *out += '"';
          break;
        case '\\':
          *out += '\\';
          break;
        case '/':
          *out += '/';
          break;
        case 'b':
          *out += '\b';
          break;
        case 'f':
          *out += '\f';
          break;
        case 'n':
          *out += '\n';
          break;
        case 'r':
          *out += '\r';
          break;
        case 't':
          *out += '\t';
          break;
        case 'u': {
          uint32_t cp = 0;
          if (!Hex4(&cp)) return false;
          if (cp >= 0xD800 && cp < 0xDC00 && s_.substr(pos_, 2) == "\\u") {
            pos_ += 2;
            uint32_t lo = 0;
            if (!Hex4(&lo)) return false;
            if (lo >= 0xDC00 && lo < 0xE000) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          Utf8(cp, out);
          break;
        }
        default:
          --pos_;
          return Fail("one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u", Here());
      }
    }
  }

  bool Number(Json* out) {
    const size_t start = pos_;
    if (s_[pos_] == '-') ++pos_;
    const size_t digits = pos_;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    if (pos_ == digits) return Fail("a digit", Here());
    bool integral = true;
    if (pos_ < s_.size() && (s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E')) {
      integral = false;
      while (pos_ < s_.size() &&
             (std::string_view("0123456789.eE+-").find(s_[pos_]) != std::string_view::npos))
        ++pos_;
    }
    const std::string text(s_.substr(start, pos_ - start));
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size()) {
      pos_ = start;
      return Fail("a number", "'" + text + "'");
    }
    out->type_ = Json::Type::kNumber;
    out->number_ = v;
    if (integral) {  // exactly, when it fits 64 bits (ids and seqs do)
      errno = 0;
      const bool neg = text[0] == '-';
      const uint64_t m = std::strtoull(text.c_str() + neg, nullptr, 10);
      if (errno != ERANGE) {
        out->integral_ = true;
        out->negative_ = neg;
        out->magnitude_ = m;
      }
    }
    return true;
  }

  std::string_view s_;
  size_t pos_ = 0;
  std::string error_;
};

StatusOr<Json> Json::Parse(std::string_view text) { return JsonParser(text).Document(); }

}  // namespace ncclrr::replay
