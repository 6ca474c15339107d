#include "ncclrr/trace/capture_filter.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace ncclrr {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool ParseNumber(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  const std::string copy(s);
  errno = 0;
  *out = std::strtoull(copy.c_str(), nullptr, 10);
  return errno == 0;
}

Status Bad(std::string_view item, const std::string& why) {
  return InvalidArgument("bad --capture-filter item '" + std::string(item) + "': " + why +
                         "; expected " + kCaptureFilterForm);
}

Status AddRange(std::string_view item, std::string_view value, CaptureFilter::Ranges* out) {
  const size_t dash = value.find('-');
  uint64_t a = 0, b = 0;
  if (dash == std::string_view::npos) {
    if (!ParseNumber(value, &a)) return Bad(item, "not a number or a range A-B");
    b = a;
  } else if (!ParseNumber(value.substr(0, dash), &a) || !ParseNumber(value.substr(dash + 1), &b)) {
    return Bad(item, "not a number or a range A-B");
  } else if (b < a) {
    return Bad(item, "the range ends before it starts");
  }
  out->push_back({a, b});
  return Status::Ok();
}

Status AddName(std::string_view item, std::string_view value, CaptureFilter* f) {
  static constexpr Api kCalls[] = {Api::kAllReduce, Api::kBroadcast, Api::kBcast,
                                   Api::kReduce,    Api::kAllGather, Api::kReduceScatter,
                                   Api::kAlltoAll,  Api::kGather,    Api::kScatter,
                                   Api::kSend,      Api::kRecv};
  const std::string name = Lower(value);
  for (Api a : kCalls)
    if (Lower(ApiName(a)) == name) {
      f->apis.push_back(CanonicalApi(a));
      return Status::Ok();
    }
  for (int32_t op = 0; op <= kNumBuiltinOps; ++op) {
    const uint8_t flags = op == kNumBuiltinOps ? call_flags::kPreMulSum : 0;
    if (RedOpName(op, flags) == name) {
      f->ops.push_back(op);
      return Status::Ok();
    }
  }
  return Bad(item,
             "not an NCCL call (allreduce, broadcast, reduce, allgather, reducescatter, "
             "alltoall, gather, scatter, send, recv) or reduction (sum, prod, max, min, "
             "avg, premulsum)");
}

bool InRanges(const CaptureFilter::Ranges& ranges, uint64_t v) {
  if (ranges.empty()) return true;
  for (const auto& [a, b] : ranges)
    if (v >= a && v <= b) return true;
  return false;
}

}  // namespace

StatusOr<CaptureFilter> ParseCaptureFilter(std::string_view text) {
  CaptureFilter f;
  std::string key;  // the field a bare item continues
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (item.empty()) return Bad(item, "an empty item");
    std::string_view value = item;
    const size_t eq = item.find('=');
    if (eq != std::string_view::npos) {
      key = Lower(item.substr(0, eq));
      value = item.substr(eq + 1);
    } else if (key.empty()) {
      return Bad(item, "no field name (comm=, seq=, op= or step=)");
    }
    if (value.empty()) return Bad(item, "no value");
    if (key == "comm") {
      std::string hex = Lower(value);
      if (hex.rfind("0x", 0) == 0) hex.erase(0, 2);
      if (hex.empty() || hex.size() > 16 ||
          hex.find_first_not_of("0123456789abcdef") != std::string::npos)
        return Bad(item, "not a hex prefix of a communicator hash (up to 16 digits)");
      if (!f.comm_prefix.empty()) return Bad(item, "comm= given twice");
      f.comm_prefix = hex;
    } else if (key == "seq") {
      NCCLRR_RETURN_IF_ERROR(AddRange(item, value, &f.seqs));
    } else if (key == "step") {
      NCCLRR_RETURN_IF_ERROR(AddRange(item, value, &f.steps));
    } else if (key == "op") {
      NCCLRR_RETURN_IF_ERROR(AddName(item, value, &f));
    } else {
      return Bad(item, "unknown field '" + key + "'");
    }
  }
  return f;
}

bool CaptureFilter::Matches(uint64_t comm_id, uint64_t seq, Api api, int32_t op,
                            uint8_t flags) const {
  if (!comm_prefix.empty()) {
    static constexpr char kHex[] = "0123456789abcdef";
    for (size_t i = 0; i < comm_prefix.size(); ++i)
      if (kHex[(comm_id >> (60 - 4 * i)) & 0xf] != comm_prefix[i]) return false;
  }
  if (!InRanges(seqs, seq)) return false;
  if (!apis.empty()) {
    const Api a = CanonicalApi(api);
    bool any = false;
    for (Api want : apis) any = any || want == a;
    if (!any) return false;
  }
  if (!ops.empty()) {
    const bool reduces =
        api == Api::kAllReduce || api == Api::kReduce || api == Api::kReduceScatter;
    if (!reduces) return false;
    const int32_t mine = (flags & call_flags::kPreMulSum) ? kNumBuiltinOps : op;
    bool any = false;
    for (int32_t want : ops) any = any || want == mine;
    if (!any) return false;
  }
  return true;
}

bool CaptureFilter::StepMatches(uint64_t step) const { return InRanges(steps, step); }

StatusOr<uint64_t> ParseByteCount(std::string_view text) {
  std::string s = Lower(text);
  if (s.size() > 2 && s.compare(s.size() - 2, 2, "ib") == 0)
    s.erase(s.size() - 2);
  else if (s.size() > 1 && s.back() == 'b')
    s.pop_back();
  int shift = 0;
  if (!s.empty()) {
    switch (s.back()) {
      case 'k':
        shift = 10;
        break;
      case 'm':
        shift = 20;
        break;
      case 'g':
        shift = 30;
        break;
      case 't':
        shift = 40;
        break;
      default:
        break;
    }
  }
  if (shift) s.pop_back();
  uint64_t n = 0;
  if (!ParseNumber(s, &n) || n == 0 || (shift && n > (UINT64_MAX >> shift)))
    return InvalidArgument("'" + std::string(text) +
                           "' is not a byte count: expected a positive number of bytes, "
                           "optionally with K, M, G or T (powers of 1024), such as 1048576, "
                           "512M or 4G");
  return n << shift;
}

}  // namespace ncclrr
