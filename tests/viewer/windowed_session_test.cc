// A trace shown at levels of detail (windowed_trace.h): buckets hold every call, a window reads
// exactly the calls that lie in it, and the whole trace's findings land on buckets and then on
// the calls themselves once a window holds them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <numeric>

#include "models/trace_session.h"
#include "models/windowed_trace.h"
#include "ncclrr/analysis/check.h"
#include "ncclrr/testing/synthetic_trace.h"
#include "ncclrr/testing/temp_dir.h"
#include "viewer_test_util.h"

namespace ncclrr::viewer {
namespace {

// 4 ranks, 300 steps flushed every 50 calls; rank 3 swaps two same-size calls at steps 100, 200.
std::string WriteLongSwapTrace(const std::string& tag) {
  const std::string dir = ncclrr::testing::FreshTempDir(tag);
  SyntheticTraceOptions o;
  o.dir = dir + "/t";
  o.ranks = 4;
  o.steps = 300;
  o.swap_rank = 3;
  o.swap_steps = {100, 200};
  o.flush_every = 50;
  auto r = WriteSyntheticTrace(o);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return o.dir;
}

TEST(WindowedTrace, BucketsHoldEveryCallAndAWindowReadsTheCallsInIt) {
  const std::string dir = WriteLongSwapTrace("windowed-buckets");
  auto whole = analysis::TraceModel::Load(dir);
  ASSERT_TRUE(whole.ok());
  auto outlined = WindowedTrace::Outline(dir, 2, {}, 512);  // 64 a lane, for 1,200 calls
  ASSERT_TRUE(outlined.ok()) << outlined.status().message();
  const WindowedTrace& w = *outlined.value();
  ASSERT_EQ(w.files(), whole->dir().files.size());
  EXPECT_EQ(w.calls(), whole->total_calls());
  EXPECT_EQ(w.origin_ns(), whole->start_ns());
  uint64_t in_buckets = 0, buckets = 0;
  for (uint32_t f = 0; f < w.files(); ++f) {
    buckets += w.Buckets(f).size();
    for (const CallBucket& b : w.Buckets(f)) in_buckets += b.calls;
  }
  EXPECT_EQ(in_buckets, w.calls());
  EXPECT_LE(buckets, 4u * 64);
  auto held = [](const analysis::TraceModel& m) {
    uint64_t n = 0;
    for (const TraceFile& t : m.dir().files) n += t.calls.size();
    return n;
  };

  // Buckets alone: one call per bucket, none real.
  std::vector<std::vector<CompositeCall>> what;
  auto overview = w.Composite(std::nullopt, &what);
  ASSERT_TRUE(overview.ok()) << overview.status().message();
  EXPECT_EQ(held(*overview), buckets);
  for (const auto& file : what)
    for (const CompositeCall& c : file) EXPECT_TRUE(c.is_bucket());

  // A window of a fiftieth of the trace: every call that starts in it is read, with its index.
  int64_t span = 0;
  for (uint32_t f = 0; f < w.files(); ++f)
    for (uint32_t i = 0; i < whole->file(f).calls.size(); ++i)
      span = std::max(span, whole->CallTime({f, i}) - whole->start_ns());
  const std::pair<int64_t, int64_t> window{span / 3, span / 3 + span / 50};
  auto part = w.Composite(window, &what);
  ASSERT_TRUE(part.ok());
  uint64_t real = 0, inside = 0;
  for (uint32_t f = 0; f < w.files(); ++f) {
    std::vector<bool> read(whole->file(f).calls.size(), false);
    for (uint32_t i = 0; i < what[f].size(); ++i) {
      const CompositeCall& c = what[f][i];
      if (c.is_bucket()) continue;
      ++real;
      read[static_cast<size_t>(c.index)] = true;
      const CallRecord got = part->call({f, i});
      const CallRecord want = whole->call({f, static_cast<uint32_t>(c.index)});
      ASSERT_EQ(got.uid, want.uid);
      ASSERT_EQ(got.enter_ns, want.enter_ns);
    }
    for (uint32_t i = 0; i < read.size(); ++i) {
      const int64_t t = whole->CallTime({f, i}) - whole->start_ns();
      if (t < window.first || t > window.second) continue;
      ++inside;
      EXPECT_TRUE(read[i]) << "file " << f << " call " << i << " at " << t << " ns";
    }
  }
  EXPECT_GT(inside, 0u);
  EXPECT_GE(real, inside);
  EXPECT_LT(real, w.calls() / 10);
}

TEST(WindowedSession, FindingsOfTheWholeTraceLandOnBucketsThenOnTheirCalls) {
  testing::EnsureApp();
  const std::string dir = WriteLongSwapTrace("windowed-findings");
  auto whole = analysis::TraceModel::Load(dir);
  ASSERT_TRUE(whole.ok());
  const analysis::Report expected = analysis::Check(*whole);
  ASSERT_FALSE(expected.findings.empty());

  SessionOptions options;
  options.max_calls = 1000;  // far fewer than the trace's 4,800
  bool shown_first = false;
  auto loaded = TraceSession::Load(
      dir, {},
      [&](std::shared_ptr<const TraceSession> first) {
        shown_first = true;
        EXPECT_FALSE(first->checked());
        EXPECT_TRUE(first->windowed());
      },
      options);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_TRUE(shown_first);
  const TraceSession& s = *loaded.value();
  ASSERT_TRUE(s.windowed());
  ASSERT_TRUE(s.checked());
  uint64_t held = 0;
  for (const TraceFile& t : s.model().dir().files) held += t.calls.size();
  EXPECT_LT(held, whole->total_calls() / 4);
  ASSERT_EQ(s.report().findings.size(), expected.findings.size());
  for (size_t i = 0; i < expected.findings.size(); ++i)
    EXPECT_EQ(s.report().findings[i].message, expected.findings[i].message);

  // The first finding's calls are buckets, marked as the finding's.
  const std::vector<CallRef> on_buckets = s.CallsOfFinding(0);
  ASSERT_FALSE(on_buckets.empty());
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (CallRef r : on_buckets) {
    const CallBucket* b = s.BucketAt(r);
    ASSERT_NE(b, nullptr);
    EXPECT_TRUE(s.marks().MarksOf(r) & mark::kFinding);
    EXPECT_NE(s.CallTip(r).find("zoom in"), std::string::npos);
    const int64_t shift = s.model().files()[r.file].clock_offset_ns - s.windowed()->origin_ns();
    lo = std::min(lo, b->begin + shift);
    hi = std::max(hi, b->end + shift);
  }

  // Read the window around them: the finding now names the calls themselves.
  auto windowed = TraceSession::LoadWindow(s, std::make_pair(lo, hi));
  ASSERT_TRUE(windowed.ok()) << windowed.status().message();
  const TraceSession& w = *windowed.value();
  ASSERT_TRUE(w.checked());
  const std::vector<CallRef> on_calls = w.CallsOfFinding(0);
  ASSERT_EQ(on_calls.size(), expected.findings[0].calls.size());
  std::vector<uint64_t> want, got;
  for (const analysis::InvolvedCall& c : expected.findings[0].calls)
    want.push_back(whole->call(c.call).uid ^ (uint64_t{c.call.file} << 56));
  for (CallRef r : on_calls) {
    EXPECT_EQ(w.BucketAt(r), nullptr);
    EXPECT_TRUE(w.marks().MarksOf(r) & mark::kFinding);
    got.push_back(w.model().call(r).uid ^ (uint64_t{r.file} << 56));
  }
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, want);
  // Both sessions keep the whole trace's time 0.
  EXPECT_EQ(w.timeline().origin_ns(), s.timeline().origin_ns());
}

TEST(WindowedSession, CommunicatorLargerThanMemoryIsNotCheckedAndSaysWhatToRun) {
  const std::string dir = WriteLongSwapTrace("windowed-unchecked");
  auto outlined = WindowedTrace::Outline(dir, 2, {});
  ASSERT_TRUE(outlined.ok());
  auto report = outlined.value()->Check(64 << 10, {});  // 64 KiB: 4,800 calls do not fit
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->findings.empty());
  ASSERT_EQ(report->notes.size(), 1u);
  EXPECT_NE(report->notes[0].message.find("not checked here"), std::string::npos);
  EXPECT_NE(report->notes[0].message.find("--mpi"), std::string::npos);
  // With room, the same trace is checked (in passes) and the swap is found.
  auto checked = outlined.value()->Check(1ull << 30, {});
  ASSERT_TRUE(checked.ok());
  EXPECT_FALSE(checked->findings.empty());
}

}  // namespace
}  // namespace ncclrr::viewer

namespace ncclrr::viewer {
namespace {

// Every real job's trace shown at levels of detail: the whole trace's findings, and, once a
// window holds the whole trace, each finding on the very calls the in-memory check names
// (killed jobs' in-flight copies, several communicators, p2p, graphs and sketches included).
TEST(WindowedSession, RealJobsTracesGiveTheInMemoryFindingsOnTheirCalls) {
  namespace fs = std::filesystem;
  const char* src = std::getenv("NCCLRR_SOURCE_DIR");
  const fs::path real = fs::path(src ? src : ".") / "tests/data/real";
  int traces = 0, placed = 0;
  for (const auto& e : fs::directory_iterator(real)) {
    if (!e.is_directory() || e.path().filename() == "diff") continue;
    SCOPED_TRACE(e.path().string());
    auto whole = analysis::TraceModel::Load(e.path().string());
    ASSERT_TRUE(whole.ok()) << whole.status().message();
    const analysis::Report expected = analysis::Check(*whole);
    SessionOptions options;
    options.max_calls = std::max<uint64_t>(whole->total_calls() / 4, 8);
    auto s = TraceSession::Load(e.path().string(), {}, {}, options);
    ASSERT_TRUE(s.ok()) << s.status().message();
    ASSERT_TRUE((*s)->windowed());
    ASSERT_EQ((*s)->report().findings.size(), expected.findings.size());
    auto all = TraceSession::LoadWindow(**s, std::make_pair(INT64_MIN / 4, INT64_MAX / 4));
    ASSERT_TRUE(all.ok()) << all.status().message();
    const TraceSession& w = **all;
    for (size_t i = 0; i < expected.findings.size(); ++i) {
      const analysis::Finding& want = expected.findings[i];
      const analysis::Finding& got = w.report().findings[i];
      EXPECT_EQ(got.message, want.message);
      std::vector<std::pair<uint32_t, uint64_t>> a, b;  // (file, uid)
      for (const analysis::InvolvedCall& c : want.calls)
        a.push_back({c.call.file, whole->call(c.call).uid});
      for (const analysis::InvolvedCall& c : got.calls) {
        EXPECT_EQ(w.BucketAt(c.call), nullptr);
        b.push_back({c.call.file, w.model().call(c.call).uid});
      }
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      EXPECT_EQ(b, a) << want.message;
      placed += static_cast<int>(b.size());
    }
    ++traces;
  }
  EXPECT_GE(traces, 50);
  EXPECT_GT(placed, 100);
}

}  // namespace
}  // namespace ncclrr::viewer
