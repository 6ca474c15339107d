// TraceSession for a trace shown at levels of detail (windowed_trace.h): composite models of
// buckets and a window of real calls, the whole trace's findings checked in passes, and those
// findings put on the composite's calls.
#include <chrono>
#include <unordered_map>
#include <unordered_set>

#include "models/trace_session.h"
#include "ncclrr/base/memory_use.h"

namespace ncclrr::viewer {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Records of the calls findings name, read back to place them on buckets: enough for every
// finding a person reads, few enough to read in a moment.
constexpr size_t kNamedCallsRead = 100'000;

}  // namespace

StatusOr<std::shared_ptr<TraceSession>> TraceSession::MakeComposite(
    std::shared_ptr<const WindowedTrace> trace, std::optional<std::pair<int64_t, int64_t>> window,
    std::shared_ptr<const WindowedFindings> findings) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::vector<CompositeCall>> what;
  auto model = trace->Composite(window, &what);
  if (!model.ok()) return model.status();
  const double read_s = SecondsSince(t0);
  std::shared_ptr<TraceSession> s(new TraceSession(
      trace->path(), std::make_shared<const analysis::TraceModel>(std::move(model.value())),
      analysis::Report{}, trace->origin_ns()));
  s->windowed_ = std::move(trace);
  s->composite_ = std::move(what);
  s->window_ = window;
  s->timings_.read_s = read_s;
  s->checked_ = findings != nullptr;
  if (findings) {
    s->report_ = s->Translate(*findings);
    s->marks_ = CallMarks::FromReport(s->report_);
    s->timeline_.AddMarks(*s->model_, s->marks_);
    s->windowed_findings_ = std::move(findings);
  }
  return s;
}

StatusOr<std::shared_ptr<const TraceSession>> TraceSession::LoadWindowed(
    std::shared_ptr<const WindowedTrace> trace, double outline_s, const ProgressFn& progress,
    const TimelineFn& timeline) {
  auto say = [&](int percent, std::string_view what) {
    if (progress) progress(percent, what);
  };
  say(40, "indexing the buckets");
  auto first = MakeComposite(trace, std::nullopt, nullptr);
  if (!first.ok()) return first.status();
  (*first)->timings_.read_s += outline_s;
  if (timeline) timeline(*first);
  // The check holds a group of communicators at a time: what is free now, less what the
  // session shown meanwhile may take for a window.
  const uint64_t free = AvailableMemoryBytes();
  const uint64_t budget = free > (2ull << 30) ? free - (1ull << 30) : free / 2;
  const auto t0 = std::chrono::steady_clock::now();
  auto report = trace->Check(budget, [&](std::string_view w) { say(60, w); });
  if (!report.ok()) return report.status();
  auto findings = std::make_shared<WindowedFindings>();
  std::vector<analysis::CallRef> named;
  for (const analysis::Finding& f : report->findings)
    for (const analysis::InvolvedCall& c : f.calls) named.push_back(c.call);
  say(90, "placing the findings");
  findings->named = trace->ReadCalls(named, kNamedCallsRead);
  findings->report = std::move(report.value());
  const double check_s = SecondsSince(t0);
  std::shared_ptr<TraceSession> shown = Checked(**first, std::move(findings));
  shown->timings_.check_s = check_s;
  say(100, "done");
  return std::shared_ptr<const TraceSession>(std::move(shown));
}

StatusOr<std::shared_ptr<const TraceSession>> TraceSession::LoadWindow(
    const TraceSession& shown, std::optional<std::pair<int64_t, int64_t>> window) {
  if (!shown.windowed_)
    return Status(StatusCode::kInvalidArgument, "the trace is not shown at levels of detail");
  auto s = MakeComposite(shown.windowed_, window, shown.windowed_findings_);
  if (!s.ok()) return s.status();
  return std::shared_ptr<const TraceSession>(std::move(s.value()));
}

std::shared_ptr<const TraceSession> TraceSession::WithFindings(
    const TraceSession& shown, std::shared_ptr<const WindowedFindings> findings) {
  return Checked(shown, std::move(findings));
}

std::shared_ptr<TraceSession> TraceSession::Checked(
    const TraceSession& shown, std::shared_ptr<const WindowedFindings> findings) {
  std::shared_ptr<TraceSession> s(
      new TraceSession(shown, shown.timeline_, shown.Translate(*findings)));
  s->windowed_ = shown.windowed_;
  s->composite_ = shown.composite_;
  s->window_ = shown.window_;
  s->windowed_findings_ = std::move(findings);
  return s;
}

const CallBucket* TraceSession::BucketAt(CallRef r) const {
  if (!windowed_ || r.file >= composite_.size() || r.index >= composite_[r.file].size())
    return nullptr;
  const CompositeCall& c = composite_[r.file][r.index];
  return c.is_bucket() ? &windowed_->Buckets(r.file)[c.bucket] : nullptr;
}

analysis::Report TraceSession::Translate(const WindowedFindings& findings) const {
  analysis::Report r = findings.report;
  const size_t n = composite_.size();
  std::vector<std::unordered_map<uint64_t, uint32_t>> real(n);
  std::vector<std::vector<uint32_t>> bucket(n);
  for (size_t f = 0; f < n; ++f) {
    bucket[f].assign(windowed_->Buckets(static_cast<uint32_t>(f)).size(), UINT32_MAX);
    for (uint32_t i = 0; i < composite_[f].size(); ++i) {
      const CompositeCall& c = composite_[f][i];
      if (c.is_bucket())
        bucket[f][c.bucket] = i;
      else
        real[f][static_cast<uint64_t>(c.index)] = i;
    }
  }
  for (analysis::Finding& finding : r.findings) {
    std::vector<analysis::InvolvedCall> placed;
    std::unordered_set<uint64_t> seen;
    for (analysis::InvolvedCall c : finding.calls) {
      const uint32_t f = c.call.file;
      if (f >= n) continue;
      std::optional<uint32_t> at;
      if (auto it = real[f].find(c.call.index); it != real[f].end()) {
        at = it->second;
      } else if (auto rec = findings.named.find((uint64_t{f} << 32) | c.call.index);
                 rec != findings.named.end()) {
        if (auto b = windowed_->BucketOf(f, rec->second); b && bucket[f][*b] != UINT32_MAX)
          at = bucket[f][*b];
      }
      if (!at || !seen.insert((uint64_t{f} << 32) | *at).second) continue;
      c.call.index = *at;
      placed.push_back(c);
    }
    finding.calls = std::move(placed);
  }
  return r;
}

}  // namespace ncclrr::viewer
