#pragma once
// A protobuf wire-format decoder for tests: splits a message into its fields, failing on
// anything malformed (truncated varints, lengths past the end, wire types the Perfetto export
// never writes). Independent of the writer in analysis/src/export/proto_writer.h on purpose.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ncclrr::testing {

struct ProtoField {
  uint32_t number = 0;
  uint32_t wire = 0;       // 0 varint, 1 fixed64, 2 length-delimited
  uint64_t value = 0;      // varint or fixed64
  std::string_view bytes;  // length-delimited
};

inline uint64_t ReadVarint(std::string_view s, size_t& i) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (i >= s.size()) throw std::runtime_error("truncated varint");
    const auto b = static_cast<uint8_t>(s[i++]);
    v |= uint64_t{b & 0x7fu} << shift;
    if (!(b & 0x80)) return v;
  }
  throw std::runtime_error("varint longer than 10 bytes");
}

inline std::vector<ProtoField> DecodeProto(std::string_view s) {
  std::vector<ProtoField> out;
  size_t i = 0;
  while (i < s.size()) {
    const uint64_t key = ReadVarint(s, i);
    ProtoField f;
    f.number = static_cast<uint32_t>(key >> 3);
    f.wire = static_cast<uint32_t>(key & 7);
    if (f.number == 0) throw std::runtime_error("field number 0");
    if (f.wire == 0) {
      f.value = ReadVarint(s, i);
    } else if (f.wire == 1) {
      if (s.size() - i < 8) throw std::runtime_error("truncated fixed64");
      for (int b = 0; b < 8; ++b) f.value |= uint64_t{static_cast<uint8_t>(s[i + b])} << (8 * b);
      i += 8;
    } else if (f.wire == 2) {
      const uint64_t n = ReadVarint(s, i);
      if (n > s.size() - i) throw std::runtime_error("length past the end");
      f.bytes = s.substr(i, n);
      i += n;
    } else {
      throw std::runtime_error("unexpected wire type " + std::to_string(f.wire));
    }
    out.push_back(f);
  }
  return out;
}

}  // namespace ncclrr::testing
