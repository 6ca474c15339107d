#include "models/trace_session.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <future>

#include "models/time_axis.h"
#include "ncclrr/analysis/check.h"
#include "ncclrr/analysis/check_in_passes.h"
#include "ncclrr/base/memory_use.h"
#include "ncclrr/base/parallel_for.h"
#include "ncclrr/trace/describe.h"

namespace ncclrr::viewer {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// What the viewer holds per call of a trace it loads whole (model, check, timeline index and
// its copy for the marks: 9.1 GB at the peak for 10^8 calls, bench/README.md "Viewer").
constexpr uint64_t kViewerBytesPerCall = 100;

bool TooLargeToHold(const std::string& path, const SessionOptions& options) {
  const uint64_t free = AvailableMemoryBytes();
  if (options.max_calls == 0) {
    // Most traces are far from it: their size on disk says so without reading the footers (a
    // call takes at least a quarter of a byte on disk, compressed).
    uint64_t on_disk = 0;
    if (auto files = ListTraceFiles(path); files.ok())
      for (const std::string& f : files.value()) {
        std::error_code ec;
        const auto n = std::filesystem::file_size(f, ec);
        if (!ec) on_disk += n;
      }
    if (free == 0 || on_disk * 4 * kViewerBytesPerCall <= free / 10 * 8) return false;
  }
  const uint64_t bytes = analysis::OnePassMemoryEstimate(path, CoreCount());
  const uint64_t calls = bytes / analysis::kCheckBytesPerCall;
  if (options.max_calls > 0) return calls > options.max_calls;
  return free > 0 && calls * kViewerBytesPerCall > free / 10 * 8;
}

}  // namespace

TraceSession::TraceSession(std::string path, std::shared_ptr<const analysis::TraceModel> model,
                           analysis::Report report, int64_t origin_ns)
    : path_(std::move(path)), model_(std::move(model)), report_(std::move(report)) {
  marks_ = CallMarks::FromReport(report_);
  const auto t0 = std::chrono::steady_clock::now();
  timeline_ = TimelineIndex::Build(*model_, marks_, {}, origin_ns);
  timings_.index_s = SecondsSince(t0);
}

TraceSession::TraceSession(const TraceSession& before, TimelineIndex timeline,
                           analysis::Report report)
    : path_(before.path_),
      model_(before.model_),
      report_(std::move(report)),
      timeline_(std::move(timeline)),
      timings_(before.timings_) {
  marks_ = CallMarks::FromReport(report_);
  timeline_.AddMarks(*model_, marks_);
}

std::shared_ptr<const TraceSession> TraceSession::Make(std::string path, analysis::TraceModel model,
                                                       analysis::Report report) {
  return std::shared_ptr<const TraceSession>(new TraceSession(
      std::move(path), std::make_shared<const analysis::TraceModel>(std::move(model)),
      std::move(report)));
}

StatusOr<std::shared_ptr<const TraceSession>> TraceSession::Load(const std::string& path,
                                                                 const ProgressFn& progress,
                                                                 const TimelineFn& timeline,
                                                                 const SessionOptions& options) {
  auto say = [&](int percent, std::string_view what) {
    if (progress) progress(percent, what);
  };
  if (TooLargeToHold(path, options)) {
    const auto t0 = std::chrono::steady_clock::now();
    say(0, "outlining the trace (too large to hold: shown at levels of detail)");
    // The buckets take at most a quarter of what a session may hold.
    const uint64_t buckets = options.max_calls > 0
                                 ? std::min(WindowedTrace::kBucketBudget, options.max_calls / 4)
                                 : WindowedTrace::kBucketBudget;
    auto trace = WindowedTrace::Outline(
        path, CoreCount(), [&](std::string_view w) { say(20, w); }, buckets);
    if (!trace.ok()) return trace.status();
    // A window with what is around it holds at most what a session may.
    if (options.max_calls > 0)
      trace.value()->set_window_calls(
          std::clamp<uint64_t>(options.max_calls / 2, 1, WindowedTrace::kWindowCalls));
    return LoadWindowed(std::move(trace.value()), SecondsSince(t0), progress, timeline);
  }
  auto t0 = std::chrono::steady_clock::now();
  say(0, "reading trace files");
  analysis::LoadOptions lo;
  lo.progress = [&](std::string_view what) { say(30, what); };
  auto loaded = analysis::TraceModel::Load(path, lo);
  if (!loaded.ok()) return loaded.status();
  const double read_s = SecondsSince(t0);
  auto model = std::make_shared<const analysis::TraceModel>(std::move(loaded.value()));

  say(60, "checking (the analysis library's findings)");
  double check_s = 0;
  auto check = [&] {
    const auto c0 = std::chrono::steady_clock::now();
    analysis::CheckOptions co;
    co.progress = [&](std::string_view what) { say(70, what); };
    analysis::Report r = analysis::Check(*model, co);
    check_s = SecondsSince(c0);
    return r;
  };
  std::shared_ptr<TraceSession> first;
  TimelineIndex copy;
  analysis::Report report;
  if (timeline) {  // the calls first, the findings when the check (run meanwhile) is done
    auto checked = std::async(std::launch::async, check);
    first = std::shared_ptr<TraceSession>(new TraceSession(path, model, analysis::Report{}));
    first->checked_ = false;
    first->timings_.read_s = read_s;
    timeline(first);
    // The copy that will take the marks: made while the check still runs (memory-bound beside a
    // CPU-bound check) for traces that fit easily; after it for huge ones, so that the copy and
    // the check's working memory never add up.
    constexpr uint64_t kCopyBesideCheckUpTo = 20'000'000;
    const bool early = model->total_calls() <= kCopyBesideCheckUpTo;
    if (early) copy = first->timeline_;
    report = checked.get();
    t0 = std::chrono::steady_clock::now();
    if (!early) copy = first->timeline_;
  } else {
    report = check();
  }

  say(85, first ? "marking the findings on the timeline" : "indexing the timeline");
  auto session = first ? std::shared_ptr<TraceSession>(
                             new TraceSession(*first, std::move(copy), std::move(report)))
                       : std::shared_ptr<TraceSession>(
                             new TraceSession(path, std::move(model), std::move(report)));
  session->timings_.read_s = read_s;
  session->timings_.check_s = check_s;
  if (first) session->timings_.marks_s = SecondsSince(t0);
  say(100, "done");
  return std::shared_ptr<const TraceSession>(std::move(session));
}

std::optional<CommSeq> TraceSession::CommSeqOf(CallRef r) const {
  if (r.file >= model_->dir().files.size() || r.index >= model_->file(r.file).calls.size() ||
      BucketAt(r))
    return std::nullopt;
  const CallRecord& c = model_->call(r);
  const Api api = static_cast<Api>(c.api);
  if (!IsCollective(api) && !IsP2p(api)) return std::nullopt;
  for (auto [ci, rank] : model_->files()[r.file].ranks) {
    const analysis::CommModel& comm = model_->comms()[ci];
    if (comm.id != c.comm_id || rank != c.rank) continue;
    CommSeq cs{ci, rank, c.seq, IsP2p(api), IsP2p(api) ? c.root_peer : -1};
    if (!cs.p2p && c.capture != 0) {  // a graph template: its first launched position
      const analysis::RankView& rv = comm.ranks[rank];
      for (const analysis::CollectiveSlot& s : rv.collectives)
        if (s.call == r) {
          cs.seq = s.seq;
          break;
        }
    }
    return cs;
  }
  return std::nullopt;
}

std::vector<CallRef> TraceSession::Linked(CallRef r) const {
  std::vector<CallRef> out;
  const auto cs = CommSeqOf(r);
  if (!cs) return out;
  const analysis::CommModel& comm = model_->comms()[cs->comm];
  if (!cs->p2p) {
    for (const analysis::RankView& rv : comm.ranks)
      if (const analysis::CollectiveSlot* s = rv.AtSeq(cs->seq)) out.push_back(s->call);
    return out;
  }
  out.push_back(r);
  const bool send = static_cast<Api>(model_->call(r).api) == Api::kSend;
  if (cs->peer < 0 || cs->peer >= static_cast<int>(comm.ranks.size())) return out;
  for (const analysis::P2pCall& p : comm.ranks[cs->peer].p2p)
    if (p.send != send && p.peer == cs->rank && p.pair_seq == cs->seq) {
      out.push_back(p.call);
      break;
    }
  return out;
}

std::vector<CallRef> TraceSession::CallsOfFinding(size_t finding) const {
  std::vector<CallRef> out;
  if (finding >= report_.findings.size()) return out;
  for (const analysis::InvolvedCall& c : report_.findings[finding].calls) out.push_back(c.call);
  return out;
}

std::string LoadErrorText(const std::string& path, const Status& status) {
  std::string what;
  switch (status.code()) {
    case StatusCode::kNotFound:
      what = "Nothing to open there.";
      break;
    case StatusCode::kCorrupt:
      what = "The trace is damaged.";
      break;
    case StatusCode::kUnsupported:
      what = "This trace was written by a newer ncclrr.";
      break;
    default:
      what = "The trace could not be read.";
  }
  return "Could not open '" + path + "'.\n\n" + what + "\n" + status.message() +
         "\n\nOpen a directory written by `ncclrr record -o DIR` (or one .ncclrr file of it); "
         "`ncclrr info DIR` prints what the reader finds in each file.";
}

std::string TraceSession::BucketText(const CallBucket& b, int64_t clock_offset_ns) const {
  const int64_t shift = clock_offset_ns - timeline_.origin_ns();
  return std::to_string(b.calls) + (b.calls == 1 ? " call" : " calls") + " of this stream from " +
         FormatTime(b.begin + shift, 1000) + " to " + FormatTime(b.end + shift, 1000) +
         ", drawn as one box: the trace is too large to hold, so zoom in to see each call (they "
         "are read when the view holds few enough)";
}

std::string TraceSession::CallSite(CallRef r) const {
  const uint32_t site = model_->call(r).callsite;
  return site ? model_->file(r.file).String(site) : "";
}

std::string TraceSession::CallTip(CallRef r) const {
  if (const CallBucket* b = BucketAt(r)) {
    std::string tip = BucketText(*b, model_->files()[r.file].clock_offset_ns);
    for (uint32_t f : marks_.FindingsOf(r)) tip += "\n\n" + report_.findings[f].message;
    return tip;
  }
  std::string tip = DescribeCall(model_->call(r), false);
  const std::string site = CallSite(r);
  if (!site.empty()) tip += "\nat " + site.substr(0, site.find('<'));
  for (uint32_t f : marks_.FindingsOf(r)) tip += "\n\n" + report_.findings[f].message;
  return tip;
}

}  // namespace ncclrr::viewer
