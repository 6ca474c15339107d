#pragma once
// Protocol Buffers wire format, the part the Perfetto export needs: varints, fixed64, doubles,
// length-delimited strings and nested messages (https://protobuf.dev/programming-guides/encoding/).
// No protobuf library is a dependency of ncclrr; field numbers come from the caller.
//
// Nested messages are written in place and their length is inserted in front of them when they
// end, so keep each message small (a TracePacket) and append finished ones to the output: the
// insertion moves the message's bytes once per nesting level.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace ncclrr::analysis {

class ProtoWriter {
 public:
  enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2 };

  explicit ProtoWriter(std::string* out) : out_(*out) {}

  static void AppendVarint(std::string& o, uint64_t v) {
    char b[10];
    size_t n = 0;
    while (v >= 0x80) {
      b[n++] = static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    b[n++] = static_cast<char>(v);
    o.append(b, n);
  }

  void Uint(uint32_t field, uint64_t v) {
    Tag(field, kVarint);
    AppendVarint(out_, v);
  }
  // int32/int64 fields: two's complement as a 64-bit varint (negative values take 10 bytes).
  void Int(uint32_t field, int64_t v) { Uint(field, static_cast<uint64_t>(v)); }
  void Fixed64(uint32_t field, uint64_t v) {
    Tag(field, kFixed64);
    char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(v >> (8 * i));  // little endian
    out_.append(b, 8);
  }
  void Double(uint32_t field, double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    Fixed64(field, bits);
  }
  void String(uint32_t field, std::string_view v) {
    Tag(field, kLengthDelimited);
    AppendVarint(out_, v.size());
    out_.append(v);
  }

  // A nested message: Begin returns where its body starts, End inserts the body's length.
  size_t Begin(uint32_t field) {
    Tag(field, kLengthDelimited);
    return out_.size();
  }
  void End(size_t body_start) {
    std::string len;
    AppendVarint(len, out_.size() - body_start);
    out_.insert(body_start, len);
  }

 private:
  void Tag(uint32_t field, WireType w) { AppendVarint(out_, (uint64_t{field} << 3) | w); }

  std::string& out_;
};

}  // namespace ncclrr::analysis
