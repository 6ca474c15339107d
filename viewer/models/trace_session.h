#pragma once
// TraceSession: everything the viewer shows about one trace directory, built once off the GUI
// thread and then shared read-only (hotspot's rule: parse in the background, hand immutable
// values over). It owns the analysis library's TraceModel and Report -- the viewer displays the
// findings, it never computes them -- plus the marks and timeline index derived from them.
//
// This header and trace_session.cc are the only places that call into the analysis library's
// loading and checking; the views read the model through the accessors below.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/call_marks.h"
#include "models/timeline_index.h"
#include "models/windowed_trace.h"
#include "ncclrr/analysis/finding.h"
#include "ncclrr/analysis/model.h"
#include "ncclrr/base/status.h"

namespace ncclrr::viewer {

// Progress: a percentage (0..100) and what is being done ("read 3 of 8 trace files").
using ProgressFn = std::function<void(int percent, std::string_view what)>;

struct LoadTimings {
  double read_s = 0;   // reading, verifying and modelling the files
  double check_s = 0;  // analysis::Check
  double index_s = 0;  // timeline index
  double marks_s = 0;  // after the check: the timeline shown before it, copied (for huge
                       // traces) and given the findings' marks
};

// Called with the session that has the timeline but not yet the findings (checked() false),
// so that the viewer shows calls while the check runs.
using TimelineFn = std::function<void(std::shared_ptr<const class TraceSession>)>;

// Where a call sits in NCCL's pairing: the communicator and the position NCCL pairs by.
struct CommSeq {
  size_t comm = 0;   // index into TraceModel::comms()
  int rank = -1;     // communicator rank of the call
  uint64_t seq = 0;  // collective seq, or per-pair index for p2p
  bool p2p = false;
  int peer = -1;
};

struct SessionOptions {
  // Traces of more calls than this are shown at levels of detail (windowed_trace.h); 0: more
  // than fit in the memory this machine has free.
  uint64_t max_calls = 0;
};

// The whole trace's findings for a trace shown at levels of detail: the report, whose calls
// are numbered as ReadTraceFile numbers them, and the records of the calls it names.
struct WindowedFindings {
  analysis::Report report;
  std::map<uint64_t, CallRecord> named;  // CallKey of (file, index) -> its record
};

class TraceSession {
 public:
  // Reads, models, checks and indexes `path` (a trace directory or one .ncclrr file). Call it
  // from a worker thread; `timeline` is called from that thread. With `timeline`, the check
  // runs on a second thread while the index is built, the session without findings is handed
  // over first, and the one returned shares its model and copies its index, marks added;
  // `progress` may then be called from either thread.
  static StatusOr<std::shared_ptr<const TraceSession>> Load(const std::string& path,
                                                            const ProgressFn& progress = {},
                                                            const TimelineFn& timeline = {},
                                                            const SessionOptions& options = {});
  // A trace shown at levels of detail: `shown`'s trace and findings with the real calls of
  // `window` (session ns; nullopt: buckets only). Call it from a worker thread.
  static StatusOr<std::shared_ptr<const TraceSession>> LoadWindow(
      const TraceSession& shown, std::optional<std::pair<int64_t, int64_t>> window);
  // `shown` with the whole trace's findings (`shown` is a session of the same WindowedTrace).
  static std::shared_ptr<const TraceSession> WithFindings(
      const TraceSession& shown, std::shared_ptr<const WindowedFindings> findings);
  // From a model and report already at hand (tests give hand-written reports).
  static std::shared_ptr<const TraceSession> Make(std::string path, analysis::TraceModel model,
                                                  analysis::Report report);

  const std::string& path() const { return path_; }
  const analysis::TraceModel& model() const { return *model_; }
  // False while the check runs: the report is then empty, not clean.
  bool checked() const { return checked_; }
  const analysis::Report& report() const { return report_; }
  const CallMarks& marks() const { return marks_; }
  // The call's recorded site, innermost frame first ("train.py:214 in step<train.py:40 in
  // main"): its Python frames and, with --stacks, native ones; "" when none was recorded.
  std::string CallSite(CallRef r) const;
  // Hover text of a call: what it is, where it was issued, the findings that name it.
  std::string CallTip(CallRef r) const;
  const TimelineIndex& timeline() const { return timeline_; }  // unfiltered
  const LoadTimings& timings() const { return timings_; }

  // Set when the trace is shown at levels of detail: its model is then a composite of buckets
  // and the real calls of window() (windowed_trace.h).
  const std::shared_ptr<const WindowedTrace>& windowed() const { return windowed_; }
  const std::optional<std::pair<int64_t, int64_t>>& window() const { return window_; }
  const std::shared_ptr<const WindowedFindings>& windowed_findings() const {
    return windowed_findings_;
  }
  // The bucket a call of the composite model stands for, or null for a real call.
  const CallBucket* BucketAt(CallRef r) const;
  // What a bucket holds, for tool tips and the details pane.
  std::string BucketText(const CallBucket& b, int64_t clock_offset_ns) const;

  std::optional<CommSeq> CommSeqOf(CallRef r) const;
  // The calls NCCL pairs with `r` on every rank (itself included): the same (comm, seq) for a
  // collective, the peer's matching call for a send or receive. Empty for other calls.
  std::vector<CallRef> Linked(CallRef r) const;
  // Every call a finding names (its involved calls).
  std::vector<CallRef> CallsOfFinding(size_t finding) const;

 private:
  TraceSession(std::string path, std::shared_ptr<const analysis::TraceModel> model,
               analysis::Report report, int64_t origin_ns = INT64_MIN);
  // The session `before` (same model, no findings yet) with `report`, and `timeline` (a copy of
  // before's) with the report's marks added.
  TraceSession(const TraceSession& before, TimelineIndex timeline, analysis::Report report);
  // A session of `trace` showing the real calls of `window`, with `findings` when known.
  static StatusOr<std::shared_ptr<TraceSession>> MakeComposite(
      std::shared_ptr<const WindowedTrace> trace, std::optional<std::pair<int64_t, int64_t>> window,
      std::shared_ptr<const WindowedFindings> findings);
  static StatusOr<std::shared_ptr<const TraceSession>> LoadWindowed(
      std::shared_ptr<const WindowedTrace> trace, double outline_s, const ProgressFn& progress,
      const TimelineFn& timeline);
  static std::shared_ptr<TraceSession> Checked(const TraceSession& shown,
                                               std::shared_ptr<const WindowedFindings> findings);
  // The whole trace's report with its calls put on this composite's calls or buckets.
  analysis::Report Translate(const WindowedFindings& findings) const;

  std::string path_;
  std::shared_ptr<const analysis::TraceModel> model_;  // shared by the session shown first
  bool checked_ = true;
  analysis::Report report_;
  CallMarks marks_;
  TimelineIndex timeline_;
  LoadTimings timings_;
  std::shared_ptr<const WindowedTrace> windowed_;
  std::shared_ptr<const WindowedFindings> windowed_findings_;
  std::vector<std::vector<CompositeCall>> composite_;  // per file, per call of the model
  std::optional<std::pair<int64_t, int64_t>> window_;
};

// The text of the error dialog when a trace cannot be opened: what happened, the reader's
// explanation, and what to do.
std::string LoadErrorText(const std::string& path, const Status& status);

}  // namespace ncclrr::viewer
