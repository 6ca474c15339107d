// Sketch records and notes: results are written under their call's uid with the label of their
// half (docs/format.md "Sketch records"); calls that could not be sketched are counted per
// reason, noted once when the first of a kind happens and with their totals at exit.
#include <cstdlib>
#include <mutex>
#include <string>

#include "env_config.h"
#include "reason_counts.h"
#include "runtime.h"
#include "sketch_hooks.h"
#include "sketch_jobs.h"

namespace ncclrr::interpose {
namespace {

constexpr int kReasons = static_cast<int>(SkipReason::kCount);
ReasonCounts<kReasons> g_skips;

// What the calls of each SkipReason did, in the enum's order.
constexpr const char* kReasonText[kReasons] = {
    "could not be planned",
    "had no way to be sketched (no GPU sketch kernels or driver)",
    "found every GPU sketch slot in flight",
    "were refused by the GPU sketcher",
    "were captured into a graph on the host NCCL",
    "failed in NCCL (no after-call sketch)",
    "were queued beyond 4096 in one group or on one nonblocking communicator",
};
const char* ReasonText(SkipReason r) { return kReasonText[static_cast<int>(r)]; }

void NoteTotalsAtExit() {
  if (g_runtime.stage.load() != static_cast<int>(Stage::kRecording)) return;
  DeviceSketchAtExit();
  for (int i = 0; i < kReasons; ++i)
    if (const uint64_t n = g_skips.count(i))
      Note(NoteLevel::kWarning, "sketch: " + std::to_string(n) + " call halves " +
                                    ReasonText(static_cast<SkipReason>(i)) + " and were skipped" +
                                    g_skips.FirstSuffix(i));
}

}  // namespace

void CountSkip(SkipReason reason, const std::string& detail) {
  if (!g_skips.Add(static_cast<int>(reason), 1, detail)) return;
  Note(NoteLevel::kWarning, std::string("sketch: the first call half that ") + ReasonText(reason) +
                                " was skipped" + (detail.empty() ? "" : ": " + detail) +
                                "; the total is noted at exit");
}

void WriteSketchResult(const SketchPart& part, uint64_t call_uid, sketch::SketchResult result,
                       uint64_t launch) {
  TraceWriter* w = g_runtime.writer;
  if (w == nullptr) return;
  for (SketchData& b : result.blocks) {
    b.call_uid = call_uid;
    b.which = part.blocks_as;
    b.launch = launch;
    w->AddSketch(std::move(b));
  }
  if (result.race) {
    result.race->call_uid = call_uid;
    result.race->which = part.race_as;
    result.race->launch = launch;
    w->AddSketch(std::move(*result.race));
  }
}

void InitSketches(const NcclLibrary& lib) {
  if (!GetConfig().sketch) return;
  ChooseSketchBackend(lib);
  std::atexit(NoteTotalsAtExit);  // registered after triggers.cc's: runs before the trace closes
  Note(NoteLevel::kInfo,
       lib.host_nccl
           ? (HostSketchesAvailable()
                  ? "sketch: on; the host NCCL's buffers are sketched on the host in stream order"
                  : "sketch: the host NCCL exports no ncclrrHostStreamAddCallback; no sketches")
           : "sketch: on; buffers are sketched by GPU kernels on each call's stream");
  g_sketch_on = true;
}

}  // namespace ncclrr::interpose
