#include "export/pickle_writer.h"

#include <cstdint>
#include <cstring>
#include <limits>

namespace ncclrr::analysis {
namespace {

// Opcodes of pickle protocol 2 (CPython's Lib/pickle.py).
constexpr char kProto = '\x80', kStop = '.', kMark = '(', kNone = 'N', kTrue = '\x88',
               kFalse = '\x89', kBinInt = 'J', kLong1 = '\x8a', kBinFloat = 'G', kBinUnicode = 'X',
               kEmptyDict = '}', kSetItems = 'u', kEmptyList = ']', kAppends = 'e';

void Le(std::ostream& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.put(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

PickleWriter::PickleWriter(std::ostream& out) : out_(out) {
  out_.put(kProto);
  out_.put('\x02');
}

void PickleWriter::Finish() { out_.put(kStop); }

// An empty container, then a mark: the items that follow are added at End (SETITEMS, APPENDS).
void PickleWriter::BeginDict() {
  out_.put(kEmptyDict);
  out_.put(kMark);
}
void PickleWriter::EndDict() { out_.put(kSetItems); }
void PickleWriter::BeginList() {
  out_.put(kEmptyList);
  out_.put(kMark);
}
void PickleWriter::EndList() { out_.put(kAppends); }

void PickleWriter::String(std::string_view s) {
  out_.put(kBinUnicode);
  Le(out_, s.size(), 4);  // strings of a dump are far below 4 GiB
  out_.write(s.data(), static_cast<std::streamsize>(s.size()));
}

void PickleWriter::Int(int64_t v) {
  if (v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max()) {
    out_.put(kBinInt);
    Le(out_, static_cast<uint32_t>(static_cast<int32_t>(v)), 4);
    return;
  }
  out_.put(kLong1);  // two's complement, little-endian, 8 bytes
  out_.put('\x08');
  Le(out_, static_cast<uint64_t>(v), 8);
}

void PickleWriter::Float(double v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  out_.put(kBinFloat);
  for (int i = 7; i >= 0; --i) out_.put(static_cast<char>((bits >> (8 * i)) & 0xff));  // big-endian
}

void PickleWriter::Value(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null:
      out_.put(kNone);
      break;
    case nlohmann::json::value_t::boolean:
      out_.put(v.get<bool>() ? kTrue : kFalse);
      break;
    case nlohmann::json::value_t::number_integer:
      Int(v.get<int64_t>());
      break;
    case nlohmann::json::value_t::number_unsigned: {
      const uint64_t u = v.get<uint64_t>();
      if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        Int(static_cast<int64_t>(u));
      } else {  // nine bytes: the top bit of eight would make it negative
        out_.put(kLong1);
        out_.put('\x09');
        Le(out_, u, 8);
        out_.put('\0');
      }
      break;
    }
    case nlohmann::json::value_t::number_float:
      Float(v.get<double>());
      break;
    case nlohmann::json::value_t::string:
      String(v.get_ref<const std::string&>());
      break;
    case nlohmann::json::value_t::array:
      BeginList();
      for (const auto& item : v) Value(item);
      EndList();
      break;
    case nlohmann::json::value_t::object:
      BeginDict();
      for (const auto& [k, item] : v.items()) {
        Key(k);
        Value(item);
      }
      EndDict();
      break;
    default:  // binary and discarded values do not occur in a dump
      out_.put(kNone);
      break;
  }
}

}  // namespace ncclrr::analysis
