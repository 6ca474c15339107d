#include "ncclrr/trace/describe.h"

#include <cinttypes>
#include <cstdarg>
#include <cstdio>

namespace ncclrr {
namespace {

__attribute__((format(printf, 2, 3))) void Appendf(std::string* s, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  *s += buf;
}

}  // namespace

std::string Hex64(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016" PRIx64, v);
  return buf;
}

const char* NcclResultName(int result) {
  static const char* kNames[] = {"ncclSuccess",       "ncclUnhandledCudaError", "ncclSystemError",
                                 "ncclInternalError", "ncclInvalidArgument",    "ncclInvalidUsage",
                                 "ncclRemoteError",   "ncclInProgress"};
  return result >= 0 && result < 8 ? kNames[result] : "ncclResult?";
}

const char* CommOriginName(uint8_t origin) {
  static const char* kNames[] = {"unknown", "InitRank", "InitRankConfig", "InitRankScalable",
                                 "InitAll", "Split",    "Shrink"};
  return origin < 7 ? kNames[origin] : "unknown";
}

std::string SiteFrame(std::string_view path, int line, std::string_view function) {
  const size_t slash = path.rfind('/');
  if (slash != std::string_view::npos) path.remove_prefix(slash + 1);
  std::string out;
  auto put = [&](std::string_view text) {
    for (char ch : text) {
      if (ch == '<')
        out += "\u2039";
      else if (ch == '>')
        out += "\u203a";
      else
        out += ch;
    }
  };
  put(path);
  out += ":" + std::to_string(line) + " in ";
  put(function);
  return out;
}

std::string DescribeCall(const CallRecord& c, bool stable) {
  const Api api = static_cast<Api>(c.api);
  std::string s(ApiName(api));
  if (c.comm_id != 0) Appendf(&s, " comm %s rank %d", Hex64(c.comm_id).c_str(), c.rank);
  if (IsCollective(api) || IsP2p(api)) {
    if (c.seq == kNoSeq)
      s += " seq -";
    else
      Appendf(&s, " seq %" PRIu64, c.seq);
    if (!stable) Appendf(&s, " sendbuff 0x%" PRIx64 " recvbuff 0x%" PRIx64, c.sendbuff, c.recvbuff);
    Appendf(&s, " count %" PRIu64 " datatype %s", c.count, std::string(DtypeName(c.dtype)).c_str());
    if (api != Api::kBroadcast && api != Api::kBcast && !IsP2p(api) && api != Api::kAllGather &&
        api != Api::kAlltoAll && api != Api::kGather && api != Api::kScatter)
      Appendf(&s, " op %s", std::string(RedOpName(c.op, c.flags)).c_str());
    if (c.flags & call_flags::kPreMulSum) Appendf(&s, " scalar %g", c.scalar);
    if (IsRooted(api)) {
      if (c.root_peer < 0)
        s += " root ?";  // not known to the trace (a Flight Recorder dump records none)
      else
        Appendf(&s, " root %d", c.root_peer);
    }
    if (IsP2p(api)) Appendf(&s, " peer %d", c.root_peer);
    if (c.flags & call_flags::kInPlace) s += " inplace";
  }
  if (c.group_depth > 0) Appendf(&s, " group depth %u", c.group_depth);
  if (c.capture == 1) s += " captured";
  if (c.flags & call_flags::kInFlight) s += " IN FLIGHT (had not returned when written)";
  if (!stable) {
    Appendf(&s, " dev %d stream 0x%" PRIx64 " tid %u t %.3fus", c.device, c.stream, c.tid,
            static_cast<double>(c.enter_ns) / 1e3);
    if (c.exit_ns == 0 && !(c.flags & call_flags::kInFlight))
      s += " in flight (never returned)";
    else if (c.exit_ns != 0)
      Appendf(&s, " dur %.3fus", static_cast<double>(c.exit_ns - c.enter_ns) / 1e3);
    if (c.group_id) Appendf(&s, " gid %" PRIu64, c.group_id);
  }
  if (c.result != 0) Appendf(&s, " -> %s", NcclResultName(c.result));
  return s;
}

std::string DescribeComm(const CommRecord& c, const std::string& name, bool stable) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "comm %s rank %d/%d dev %d via %s", Hex64(c.comm_id).c_str(),
                c.rank, c.nranks, c.device, CommOriginName(c.origin));
  std::string s = buf;
  if (c.parent_id) {
    std::snprintf(buf, sizeof buf, " parent %s color %d key %d", Hex64(c.parent_id).c_str(),
                  c.color, c.key);
    s += buf;
  }
  if (c.lineage) s += " lineage " + std::to_string(c.lineage);
  if (!c.blocking) s += " nonblocking";
  if (!name.empty()) s += " name \"" + Printable(name) + "\"";
  if (!stable) {
    std::snprintf(buf, sizeof buf, " handle 0x%" PRIx64, c.handle);
    s += buf;
  }
  return s;
}

std::string DescribeSketch(const SketchData& s) {
  std::string out;
  Appendf(&out, "sketch %s first %" PRIu64 " count %" PRIu64 " %s", SketchWhichName(s.which),
          s.first, s.count, std::string(DtypeName(s.dtype)).c_str());
  if (s.launch != 0) Appendf(&out, " launch %" PRIu64, s.launch);
  out += " dots [";
  for (int k = 0; k < 4; ++k) Appendf(&out, k ? " %.9g" : "%.9g", s.dots[k]);
  Appendf(&out, " ...] sumsq %.9g", s.sumsq);
  if (s.nan || s.posinf || s.neginf)
    Appendf(&out, " nan %" PRIu64 " +inf %" PRIu64 " -inf %" PRIu64, s.nan, s.posinf, s.neginf);
  Appendf(&out, " samples %zu", s.samples.size());
  if (!s.samples.empty()) {
    out += " [";
    for (size_t i = 0; i < s.samples.size() && i < 4; ++i)
      Appendf(&out, i ? " %.9g" : "%.9g", s.samples[i]);
    out += s.samples.size() > 4 ? " ...]" : "]";
  }
  return out;
}

}  // namespace ncclrr
