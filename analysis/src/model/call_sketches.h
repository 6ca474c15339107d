#pragma once
// The sketches recorded for one call, sorted by what they describe (docs/sketches.md
// "Integration"): the send blocks sketched before the call, the recv blocks after it, the send
// buffer's race sample re-read after the call and its before-call twin, and a device-resident
// PreMulSum scalar. A call captured into a CUDA graph has sketches per graph launch: only those
// of the slot's launch are taken.
#include <cstdint>
#include <optional>
#include <vector>

#include "ncclrr/analysis/model.h"
#include "ncclrr/sketch/identity.h"

namespace ncclrr::analysis {

struct CallSketches {
  std::vector<const SketchData*> send;           // SendBefore blocks
  std::vector<const SketchData*> recv;           // RecvAfter blocks
  const SketchData* send_after = nullptr;        // SendAfterSample
  const SketchData* send_before_twin = nullptr;  // SendBeforeSample
  const SketchData* scalar = nullptr;            // Scalar (samples[0])
  bool empty() const {
    return send.empty() && recv.empty() && !send_after && !send_before_twin && !scalar;
  }
};

// `launch`: CollectiveSlot::launch (0 for calls issued eagerly).
CallSketches SketchesOf(const TraceModel& m, CallRef r, uint32_t launch = 0);

// Does any file of the trace hold sketches? (The data checks cost nothing without them.)
bool TraceHasSketches(const TraceModel& m);

// One rank's part of a collective identity check: its sketches and its PreMulSum scalar (the
// recorded host scalar, or the sketched device-resident one).
sketch::RankSketches ToRankSketches(const CallSketches& s, const CallRecord& c);

// The before-call sketch a race check compares with the after-call sample: the race twin when
// recorded, else a single-block send sketch (samples only). nullptr when neither exists.
const SketchData* RaceBaseline(const CallSketches& s, bool* is_twin);

}  // namespace ncclrr::analysis
