// The stragglers note: a synthetic two-rank trace (the recorder's synthetic_trace writer) given
// GPU times in which rank 1's kernels start 300 us after rank 0's, except at seq 9 where rank 0
// is 2 ms late.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "ncclrr/analysis/check.h"
#include "ncclrr/analysis/report_format.h"
#include "ncclrr/testing/synthetic_trace.h"
#include "ncclrr/trace/trace_reader.h"

namespace ncclrr::analysis {
namespace {

constexpr int64_t kLate = 300'000;        // rank 1, every seq but one
constexpr int64_t kVeryLate = 2'000'000;  // rank 0 at seq 9
constexpr uint64_t kOddSeq = 9;

std::string WriteTrace(const std::string& tag) {
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("ncclrr-straggler-" + tag + "-" + std::to_string(getpid())))
                              .string();
  std::filesystem::remove_all(dir);
  SyntheticTraceOptions o;
  o.dir = dir;
  o.ranks = 2;
  o.steps = 4;
  EXPECT_TRUE(WriteSyntheticTrace(o).ok());
  return dir;
}

// The trace with GPU times: every collective's kernel starts at one common instant per seq (after
// every rank issued it) plus the rank's lateness, and runs 50 us past the last start.
TraceModel WithGpuTimes(const std::string& dir, bool event_pairs = false) {
  const TraceModel plain = TraceModel::Build(*LoadTraceDir(dir));
  TraceDir d = *LoadTraceDir(dir);
  const CommModel& c = plain.comms().at(0);
  for (uint64_t seq = 0; seq < c.max_issued(); ++seq) {
    int64_t base = 0;
    for (const RankView& r : c.ranks) base = std::max(base, plain.CallTime(r.AtSeq(seq)->call));
    base += 1'000'000;
    for (const RankView& r : c.ranks) {
      const CallRef call = r.AtSeq(seq)->call;
      const int64_t late =
          seq == kOddSeq ? (r.rank == 0 ? kVeryLate : 0) : (r.rank == 1 ? kLate : 0);
      GpuTimeRecord g{};
      g.call_uid = plain.call(call).uid;
      g.start_ns = base + late - plain.files()[call.file].clock_offset_ns;
      g.end_ns = base + kVeryLate + 50'000 - plain.files()[call.file].clock_offset_ns;
      g.source =
          static_cast<uint8_t>(event_pairs ? GpuTimeSource::kEventPair : GpuTimeSource::kCupti);
      d.files[call.file].gpu_times.push_back(g);
    }
  }
  return TraceModel::Build(std::move(d));
}

const Note* StragglerNote(const Report& r) {
  for (const Note& n : r.notes)
    if (n.kind == NoteKind::kStragglers) return &n;
  return nullptr;
}

TEST(Stragglers, NoteNamesTheLateRankTheWaitsAndTheWorstCollectives) {
  const std::string dir = WriteTrace("times");
  const TraceModel m = WithGpuTimes(dir);
  const Report r = Check(m);
  EXPECT_TRUE(r.findings.empty());
  const Note* n = StragglerNote(r);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->count, 16u);
  ASSERT_EQ(n->ranks.size(), 1u);
  EXPECT_EQ(n->ranks[0].second, 1) << "rank 1 arrived last most often";
  const std::string& t = n->message;
  EXPECT_NE(t.find("GPU times (CUPTI) of 16 collectives"), std::string::npos) << t;
  EXPECT_NE(t.find("most often rank 1 (15 of 16)"), std::string::npos) << t;
  // rank 0 waited 15 x 300 us, rank 1 waited 2 ms once.
  EXPECT_NE(t.find("in total: rank 0 4.5 ms, rank 1 2.0 ms"), std::string::npos) << t;
  EXPECT_NE(t.find("Longest waits: seq 9 AllReduce("), std::string::npos) << t;
  EXPECT_NE(t.find("rank 0 last, 2.0 ms after rank 1; seq 0 "), std::string::npos) << t;
  // Informational: never a finding, not even under --strict; counted in the summary.
  EXPECT_EQ(r.ExitCode(true), 0);
  EXPECT_EQ(r.summary.by_kind.at("stragglers"), 1u);
  const std::string json = FormatJson(r, &m, {});
  EXPECT_NE(json.find("\"kind\":\"stragglers\""), std::string::npos) << json;
  std::filesystem::remove_all(dir);
}

TEST(Stragglers, StableOutputHasNoTimesAndEventPairsAreNamed) {
  const std::string dir = WriteTrace("stable");
  const TraceModel m = WithGpuTimes(dir, /*event_pairs=*/true);
  CheckOptions o;
  o.stable = true;
  const Report r = Check(m, o);
  const Note* n = StragglerNote(r);
  ASSERT_NE(n, nullptr);
  EXPECT_NE(n->message.find("(CUDA events)"), std::string::npos) << n->message;
  EXPECT_EQ(n->message.find(" ms"), std::string::npos) << n->message;
  EXPECT_EQ(n->message.find(" us"), std::string::npos) << n->message;
  EXPECT_NE(n->message.find("seq 9 AllReduce("), std::string::npos) << n->message;
  std::filesystem::remove_all(dir);
}

TEST(Stragglers, NoGpuTimesNoNote) {
  const std::string dir = WriteTrace("none");
  const Report r = Check(TraceModel::Build(*LoadTraceDir(dir)));
  EXPECT_EQ(StragglerNote(r), nullptr);
  std::filesystem::remove_all(dir);
}

TEST(Stragglers, ARankWithoutGpuTimesMakesNothingComparable) {
  const std::string dir = WriteTrace("partial");
  TraceModel full = WithGpuTimes(dir);
  TraceDir d = full.dir();
  d.files[1].gpu_times.clear();
  const Report r = Check(TraceModel::Build(std::move(d)));
  EXPECT_EQ(StragglerNote(r), nullptr);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ncclrr::analysis
