// TraceModel built from in-memory traces: communicators, per-rank sequences, graph launches,
// clocks, and the inconsistencies lifecycle_error reports.
#include "ncclrr/analysis/model.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "ncclrr/analysis/check.h"
#include "ncclrr/analysis/perfetto_export.h"
#include "ncclrr/analysis/report_format.h"

namespace ncclrr::analysis {
namespace {

CommRecord Comm(uint64_t id, int nranks, int rank) {
  CommRecord c{};
  c.comm_id = id;
  c.nranks = nranks;
  c.rank = rank;
  c.device = rank;
  c.blocking = 1;
  return c;
}

CallRecord Coll(uint64_t comm, int rank, uint64_t seq, uint64_t count, int64_t t) {
  CallRecord c{};
  c.comm_id = comm;
  c.rank = rank;
  c.seq = seq;
  c.count = count;
  c.api = static_cast<uint16_t>(Api::kAllReduce);
  c.dtype = static_cast<uint8_t>(Dtype::kFloat32);
  c.root_peer = -1;
  c.device = rank;
  c.enter_ns = t;
  c.exit_ns = t + 10;
  c.sendbuff = 0x1000 + count;
  c.uid = seq + 1;
  return c;
}

TraceFile File(const std::string& host, std::vector<CommRecord> comms,
               std::vector<CallRecord> calls) {
  TraceFile f;
  f.path = "/trace/" + host + ".ncclrr";
  f.header.host = host;
  f.comms = std::move(comms);
  f.calls = std::move(calls);
  f.footer = FooterData{true, f.calls.size(), 0, 0, "closed", std::nullopt};
  return f;
}

TEST(TraceModel, GroupsCallsByCommAndRankInSeqOrder) {
  TraceDir d;
  d.files.push_back(File("a", {Comm(7, 2, 0)}, {Coll(7, 0, 1, 8, 20), Coll(7, 0, 0, 4, 10)}));
  d.files.push_back(File("b", {Comm(7, 2, 1)}, {Coll(7, 1, 0, 4, 11), Coll(7, 1, 1, 8, 21)}));
  const TraceModel m = TraceModel::Build(std::move(d));
  ASSERT_EQ(m.comms().size(), 1u);
  const CommModel& c = m.comms()[0];
  EXPECT_EQ(c.nranks, 2);
  ASSERT_EQ(c.ranks.size(), 2u);
  ASSERT_EQ(c.ranks[0].collectives.size(), 2u);
  EXPECT_EQ(c.ranks[0].collectives[0].seq, 0u);
  EXPECT_EQ(c.ranks[0].collectives[0].call, (CallRef{0, 1}));  // (file, index) of the record
  EXPECT_EQ(m.call(c.ranks[1].collectives[1].call).count, 8u);
  EXPECT_EQ(c.ranks[1].file, 1);
  EXPECT_EQ(c.max_issued(), 2u);
  EXPECT_TRUE(c.problems.empty());
  EXPECT_EQ(m.FindComm(7), 0);
  EXPECT_EQ(m.FindComm(8), -1);
}

TEST(TraceModel, InconsistentCreationIsALifecycleError) {
  TraceDir d;
  d.files.push_back(File("a", {Comm(9, 2, 0)}, {}));
  d.files.push_back(File("b", {Comm(9, 3, 1)}, {}));         // disagrees on nranks
  d.files.push_back(File("c", {Comm(9, 2, 1)}, {}));         // claims rank 1 too
  d.files.push_back(File("d", {}, {Coll(10, 0, 0, 4, 1)}));  // a comm nobody created
  const TraceModel m = TraceModel::Build(std::move(d));
  const Report r = Check(m);
  std::vector<std::string> shorts;
  for (const Finding& f : r.findings)
    if (f.kind == FindingKind::kLifecycleError) shorts.push_back(f.short_text);
  ASSERT_EQ(shorts.size(), 3u) << FormatJson(r, &m, {});
  EXPECT_NE(shorts[0].find("3 ranks"), std::string::npos);
}

TEST(TraceModel, GraphLaunchesTakePositionsInTheSequence) {
  TraceFile f = File("a", {Comm(5, 1, 0)}, {});
  f.calls.push_back(Coll(5, 0, 0, 16, 100));  // eager seq 0
  CallRecord t0 = Coll(5, 0, 0, 1024, 200), t1 = Coll(5, 0, 1, 2048, 210);
  t0.capture = t1.capture = 1;
  t0.graph_id = t1.graph_id = 0xab;
  f.calls.push_back(t0);
  f.calls.push_back(t1);
  f.calls.push_back(Coll(5, 0, 5, 16, 1000));  // eager after two launches: seq 5
  for (int64_t t : {300, 400})
    f.graph_events.push_back(
        {0xab, 0xab, 0, t, 0, static_cast<uint8_t>(GraphEventKind::kLaunch), {}});
  TraceDir d;
  d.files.push_back(f);
  const TraceModel m = TraceModel::Build(std::move(d));
  const RankView& r = m.comms()[0].ranks[0];
  ASSERT_EQ(r.collectives.size(), 6u);
  std::vector<uint64_t> counts;
  for (const CollectiveSlot& s : r.collectives) counts.push_back(m.call(s.call).count);
  EXPECT_EQ(counts, (std::vector<uint64_t>{16, 1024, 2048, 1024, 2048, 16}));
  EXPECT_EQ(r.collectives[3].launch, 2u);
  EXPECT_EQ(r.collectives[5].seq, 5u);
  ASSERT_EQ(r.graphs.size(), 1u);
  EXPECT_EQ(r.graphs[0].launch_times_ns.size(), 2u);
}

TEST(TraceModel, ClocksMapToOneTimelineAndHostsAreAlignedByCollectives) {
  TraceFile a = File("host-a", {Comm(3, 2, 0)}, {});
  TraceFile b = File("host-b", {Comm(3, 2, 1)}, {});
  a.clocks.push_back({0, 1'000'000'000});  // realtime = mono + 1 s
  b.clocks.push_back({0, 1'005'000'000});  // host b's clock runs 5 ms ahead (NTP error)
  for (uint64_t s = 0; s < 10; ++s) {
    a.calls.push_back(Coll(3, 0, s, 4, 1000 * static_cast<int64_t>(s)));
    b.calls.push_back(Coll(3, 1, s, 4, 1000 * static_cast<int64_t>(s)));
  }
  TraceDir d;
  d.files.push_back(a);
  d.files.push_back(b);
  const TraceModel m = TraceModel::Build(std::move(d));
  EXPECT_EQ(m.files()[0].clock_offset_ns, 1'000'000'000);
  EXPECT_TRUE(m.files()[1].offset_refined);
  EXPECT_EQ(m.CommonTime(1, 5000), m.CommonTime(0, 5000));  // the 5 ms are corrected
}

TEST(TraceModel, SketchesAreFoundByCall) {
  TraceFile f = File("a", {Comm(3, 1, 0)}, {Coll(3, 0, 0, 4, 1)});
  SketchData s;
  s.call_uid = f.calls[0].uid;
  s.count = 4;
  f.sketches.push_back(s);
  TraceDir d;
  d.files.push_back(f);
  const TraceModel m = TraceModel::Build(std::move(d));
  ASSERT_EQ(m.Sketches({0, 0}).size(), 1u);
  EXPECT_EQ(m.Sketches({0, 0})[0]->count, 4u);
}

TEST(TraceModel, CorruptValuesAreReportedNotTrustedOrCrashedOn) {
  CommRecord huge = Comm(11, 1 << 30, 0);  // absurd nranks
  CallRecord far_rank = Coll(12, 1'000'000'000, 0, 4, 1);
  CallRecord no_seq = Coll(12, 0, kNoSeq, 4, 2);  // a collective without a seq
  CallRecord big_seq = Coll(12, 0, uint64_t{1} << 50, 4, 3);
  CallRecord bad_peer = Coll(12, 0, 0, 4, 4);
  bad_peer.api = static_cast<uint16_t>(Api::kSend);
  bad_peer.root_peer = -5;
  TraceDir d;
  d.files.push_back(File("a", {huge, Comm(12, 1, 0)}, {far_rank, no_seq, big_seq, bad_peer}));
  const TraceModel m = TraceModel::Build(std::move(d));
  const Report r = Check(m);
  const std::string json = FormatJson(r, &m, {});
  EXPECT_NE(json.find("names rank 1000000000"), std::string::npos) << json;
  EXPECT_NE(json.find("renumbered in issue order"), std::string::npos) << json;
  const int c12 = m.FindComm(12);
  ASSERT_GE(c12, 0);
  EXPECT_EQ(m.comms()[c12].ranks[0].collectives.size(), 2u);
  EXPECT_EQ(m.comms()[c12].ranks[0].issued(), 2u);
}

// NCCLRR_RANDOM_ROUNDS raises the number of random traces for a longer soak.
int RandomRounds() {
  const char* e = std::getenv("NCCLRR_RANDOM_ROUNDS");
  return e ? std::atoi(e) : 20;
}

TEST(TraceModel, RandomRecordsNeverCrashTheCheckers) {
  // Whatever a buggy recorder writes, check and export finish with a report.
  uint64_t state = 12345;
  auto next = [&](uint64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % n;
  };
  for (int round = 0; round < RandomRounds(); ++round) {
    TraceDir d;
    for (int f = 0; f < 4; ++f) {
      std::vector<CommRecord> comms;
      for (int c = 0; c < 3; ++c)
        if (next(4))
          comms.push_back(Comm(100 + c, static_cast<int>(next(6)), static_cast<int>(next(5))));
      std::vector<CallRecord> calls;
      for (int k = 0; k < 300; ++k) {
        CallRecord c = Coll(100 + next(4), static_cast<int>(next(7)) - 1, next(50), next(4) * 512,
                            static_cast<int64_t>(next(1'000'000)));
        const uint16_t apis[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 20, 21, 45, 47, 48, 49, 90, 0, 999};
        c.api = apis[next(18)];
        c.root_peer = static_cast<int>(next(8)) - 2;
        c.result = static_cast<int8_t>(next(3) == 0 ? next(8) : 0);
        c.capture = static_cast<uint8_t>(next(6) == 0 ? next(3) : 0);
        c.graph_id = c.capture ? 0x10 + next(3) : 0;
        c.group_id = next(3);
        c.dtype = static_cast<uint8_t>(next(14));
        if (next(40) == 0) c.seq = kNoSeq;
        calls.push_back(c);
      }
      TraceFile t = File("host" + std::to_string(f % 2), comms, calls);
      for (int g = 0; g < 5; ++g)
        t.graph_events.push_back({0x10 + next(3),
                                  0,
                                  0,
                                  static_cast<int64_t>(next(1'000'000)),
                                  0,
                                  static_cast<uint8_t>(next(5)),
                                  {}});
      if (next(2)) t.footer.reset();
      t.torn = next(3) == 0;
      d.files.push_back(std::move(t));
    }
    const TraceModel m = TraceModel::Build(std::move(d));
    const Report r = Check(m);
    EXPECT_FALSE(FormatText(r, &m, {}).empty());
    EXPECT_FALSE(FormatJson(r, &m, {}).empty());
    std::ostringstream exported;
    EXPECT_TRUE(ExportPerfetto(m, &r, {}, exported).ok());
    EXPECT_TRUE(ExportChromeJson(m, &r, {}, exported).ok());
  }
}

TEST(TraceModel, LoadReportsWhatIsMissing) {
  auto m = TraceModel::Load("/nonexistent/ncclrr-trace");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("does not exist"), std::string::npos);
}

}  // namespace
}  // namespace ncclrr::analysis
