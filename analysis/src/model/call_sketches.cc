#include "model/call_sketches.h"

namespace ncclrr::analysis {

CallSketches SketchesOf(const TraceModel& m, CallRef r, uint32_t launch) {
  CallSketches out;
  for (const SketchData* s : m.Sketches(r)) {
    if (s->launch != launch) continue;
    switch (s->which) {
      case SketchWhich::kSendBefore:
        out.send.push_back(s);
        break;
      case SketchWhich::kRecvAfter:
        out.recv.push_back(s);
        break;
      case SketchWhich::kSendAfterSample:
        out.send_after = s;
        break;
      case SketchWhich::kSendBeforeSample:
        out.send_before_twin = s;
        break;
      case SketchWhich::kScalar:
        out.scalar = s;
        break;
    }
  }
  return out;
}

bool TraceHasSketches(const TraceModel& m) {
  for (const TraceFile& f : m.dir().files)
    if (!f.sketches.empty()) return true;
  return false;
}

sketch::RankSketches ToRankSketches(const CallSketches& s, const CallRecord& c) {
  sketch::RankSketches rs;
  for (const SketchData* d : s.send) rs.send.push_back(*d);
  for (const SketchData* d : s.recv) rs.recv.push_back(*d);
  if (c.flags & call_flags::kScalarOnDevice) {
    if (s.scalar && !s.scalar->samples.empty()) rs.scalar = s.scalar->samples[0];
  } else if ((c.flags & call_flags::kPreMulSum) || c.op >= kNumBuiltinOps) {
    rs.scalar = c.scalar;  // NCCL copied the host scalar at creation; so did the recorder
  }
  return rs;
}

const SketchData* RaceBaseline(const CallSketches& s, bool* is_twin) {
  *is_twin = s.send_before_twin != nullptr;
  if (s.send_before_twin) return s.send_before_twin;
  return s.send.size() == 1 ? s.send[0] : nullptr;
}

}  // namespace ncclrr::analysis
