// A check spread over several members (`check --mpi`, here members on threads exchanging in
// memory), and a check in passes of bounded memory (`check --memory`, the same members one after
// the other), must print exactly what one process prints: every golden scenario, every real
// trace, and synthetic traces of many communicators, split over 1 to 4 members.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <thread>

#include "distributed/share_check.h"
#include "golden_file.h"
#include "ncclrr/analysis/check_group.h"
#include "ncclrr/analysis/check_in_passes.h"
#include "ncclrr/analysis/report_format.h"
#include "ncclrr/base/memory_use.h"
#include "ncclrr/base/spill.h"
#include "ncclrr/testing/synthetic_trace.h"
#include "ncclrr/testing/temp_dir.h"
#include "scenarios.h"
#include "sketch_scenarios.h"

namespace ncclrr::analysis {
namespace {

namespace fs = std::filesystem;

// Every rendering a user can ask for; times in seconds of analysis are left out.
std::string Renderings(const Report& r) {
  std::string out;
  for (bool stable : {true, false}) {
    FormatOptions fo;
    fo.stable = stable;
    out += FormatText(r, nullptr, fo) + FormatJson(r, nullptr, fo);
  }
  out = std::regex_replace(out, std::regex("checked in [0-9.]+ s"), "checked in - s");
  return std::regex_replace(out, std::regex("\"seconds\":[0-9.e+-]+"), "\"seconds\":-");
}

std::string CheckedInOneProcess(const std::string& dir) {
  auto model = TraceModel::Load(dir);
  EXPECT_TRUE(model.ok()) << model.status().message();
  if (!model.ok()) return "";
  CheckOptions o;
  o.threads = 1;
  return Renderings(Check(*model, o));
}

struct Spread {
  std::string rendered;  // member 0's report
  std::vector<SpreadStats> stats;
};

Spread CheckedSpread(const std::string& dir, int members) {
  auto group = LocalCheckGroups(members);
  std::vector<StatusOr<Report>> reports(members, Report{});
  Spread s;
  s.stats.resize(members);
  std::vector<std::thread> threads;
  for (int m = 0; m < members; ++m)
    threads.emplace_back([&, m] {
      CheckOptions o;
      o.threads = 1;
      reports[m] = CheckSpread(dir, *group[m], o, &s.stats[m]);
    });
  for (std::thread& t : threads) t.join();
  for (int m = 0; m < members; ++m) EXPECT_TRUE(reports[m].ok()) << reports[m].status().message();
  if (reports[0].ok()) s.rendered = Renderings(*reports[0]);
  return s;
}

struct InPasses {
  std::string rendered;
  PassStats stats;
};

InPasses CheckedInPasses(const std::string& dir, PassOptions po) {
  CheckOptions o;
  o.threads = 1;
  InPasses p;
  auto report = CheckInPasses(dir, po, o, &p.stats);
  EXPECT_TRUE(report.ok()) << report.status().message();
  if (report.ok()) p.rendered = Renderings(*report);
  return p;
}

// A directory on the disk the tests run from (the system's temporary directory may be tmpfs,
// which spilling refuses), for the spilled arrays' file.
std::string SpillDir() {
  struct Dir {
    fs::path path = fs::current_path() / ("spill-" + std::to_string(getpid()));
    Dir() { fs::create_directories(path); }
    ~Dir() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  };
  static const Dir dir;
  return dir.path.string();
}

// The one-process check with every per-call array spilled to disk, however small
// (ncclrr/base/spill.h): the same code on the same arrays, only their pages elsewhere.
std::string CheckedSpilled(const std::string& dir) {
  const uint64_t before = GetSpillStats().bytes;
  std::string rendered;
  {
    auto scope = SpillScope::Start(SpillDir(), 1);
    EXPECT_TRUE(scope.ok()) << scope.status().message();
    rendered = CheckedInOneProcess(dir);
    EXPECT_GT(GetSpillStats().allocations, 0u);
  }
  EXPECT_FALSE(Spilling());
  EXPECT_EQ(GetSpillStats().bytes, before) << "every spilled array freed with the model";
  return rendered;
}

void ExpectSameOnEveryMemberCount(const std::string& dir) {
  const std::string one = CheckedInOneProcess(dir);
  ASSERT_FALSE(one.empty());
  EXPECT_EQ(CheckedSpilled(dir), one) << dir << " with its calls spilled to disk";
  for (int members : {1, 2, 3, 4}) {
    SCOPED_TRACE(dir + " on " + std::to_string(members) + " members");
    EXPECT_EQ(CheckedSpread(dir, members).rendered, one);
    PassOptions po;
    po.shares = members;
    EXPECT_EQ(CheckedInPasses(dir, po).rendered, one) << "in passes";
  }
}

class SpreadScenarioTest : public ::testing::TestWithParam<testing::Scenario> {};

TEST_P(SpreadScenarioTest, ReportsAsOneProcessDoes) {
  const testing::Scenario& sc = GetParam();
  const fs::path dir =
      fs::temp_directory_path() / ("ncclrr-spread-" + std::to_string(getpid()) + "-" + sc.name);
  fs::remove_all(dir);
  SyntheticScript script = sc.build();
  script.dir = dir.string();
  auto written = WriteSyntheticScript(script);
  ASSERT_TRUE(written.ok()) << written.status().message();
  ExpectSameOnEveryMemberCount(dir.string());
  fs::remove_all(dir);
}

std::string ScenarioName(const ::testing::TestParamInfo<testing::Scenario>& p) {
  return p.param.name;
}
INSTANTIATE_TEST_SUITE_P(Scenarios, SpreadScenarioTest,
                         ::testing::ValuesIn(testing::GoldenScenarios()), ScenarioName);
INSTANTIATE_TEST_SUITE_P(SketchScenarios, SpreadScenarioTest,
                         ::testing::ValuesIn(testing::SketchScenarios()), ScenarioName);

TEST(SpreadRealTraces, ReportAsOneProcessDoes) {
  const fs::path real = testing::SourceDataDir("tests/data/real");
  int checked = 0;
  for (const auto& e : fs::directory_iterator(real)) {
    if (!e.is_directory() || e.path().filename() == "diff") continue;
    ExpectSameOnEveryMemberCount(e.path().string());
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

// `ranks` in `groups` communicators; `swap_rank` swaps two calls of different sizes in `swaps`.
SyntheticTraceOptions GroupsWithASwap(const std::string& dir, int ranks, int groups, int steps,
                                      int swap_rank, std::vector<int> swaps) {
  return {.dir = dir,
          .ranks = ranks,
          .groups = groups,
          .steps = steps,
          .swap_rank = swap_rank,
          .swap_index = 0,
          .swap_steps = std::move(swaps)};
}

// The last collectives of a file not closed in order go to member 0 (a cycle of waits through
// several communicators is looked for there): the file's reader and a whole model must cut the
// tail at the same call.
TEST(SpreadTails, AReaderAndTheModelCutAFileAtTheSameCall) {
  std::optional<SyntheticScript> script;
  for (const testing::Scenario& sc : testing::GoldenScenarios())
    if (sc.name == "grid_cross_order_long") script = sc.build();
  ASSERT_TRUE(script);
  testing::ScratchDir dir("spread-tails");
  script->dir = dir.path();
  ASSERT_TRUE(WriteSyntheticScript(*script).ok());
  auto model = TraceModel::Load(dir.path());
  ASSERT_TRUE(model.ok()) << model.status().message();
  ASSERT_EQ(model->files().size(), 4u);
  for (uint32_t f = 0; f < model->files().size(); ++f) {
    const int64_t from = model->TailFromNs(f);
    EXPECT_NE(from, INT64_MIN) << "file " << f << " holds more than kTailCollectives collectives";
    EXPECT_EQ(FactsOf(model->file(f)).totals.tail_from_ns, from) << "file " << f;
    uint64_t tail = 0;
    for (size_t i = 0; i < model->file(f).calls.size(); ++i) {
      const CallRecord c = model->file(f).calls[i];
      tail += TailCollective(c) && c.enter_ns >= from;
    }
    EXPECT_EQ(tail, kTailCollectives) << "file " << f;
  }
}

// Many communicators, bugs in some: each member checks its own, and together they report what
// one process does.
TEST(SpreadManyCommunicators, SplitsTheCommunicatorsAndAgrees) {
  const std::string dir = testing::FreshTempDir("spread-groups");
  SyntheticTraceOptions o = GroupsWithASwap(dir, 16, 8, 20, 3, {4, 9});  // the swap in group 1
  o.missing_rank = 12;                                                   // group 6: a hang
  o.missing_step = 15;
  o.missing_index = 2;
  ASSERT_TRUE(WriteSyntheticTrace(o).ok());
  const std::string one = CheckedInOneProcess(dir);
  EXPECT_NE(one.find("order_swap"), std::string::npos) << one;
  EXPECT_NE(one.find("missing_call"), std::string::npos) << one;
  for (int members : {2, 4}) {
    const Spread s = CheckedSpread(dir, members);
    EXPECT_EQ(s.rendered, one) << members << " members";
    uint64_t held = 0, owned = 0;
    for (const SpreadStats& st : s.stats) {
      EXPECT_FALSE(st.whole);
      EXPECT_EQ(st.comms_owned, 8u / members);  // equal groups: equal shares
      held += st.calls_held;
    }
    EXPECT_GT(held, 0u);
    for (const SpreadStats& st : s.stats) owned += st.comms_owned;
    EXPECT_EQ(owned, 8u);
    for (const SpreadStats& st : s.stats) EXPECT_LT(st.calls_held, held);
    PassOptions po;
    po.shares = members;
    const InPasses p = CheckedInPasses(dir, po);
    EXPECT_EQ(p.rendered, one) << members << " groups in passes";
    EXPECT_EQ(p.stats.shares, members);
    EXPECT_EQ(p.stats.reads, 1 + members);  // one to count, one per group
    uint64_t most = 0;
    for (const SpreadStats& st : s.stats) most = std::max(most, st.calls_held);
    EXPECT_EQ(p.stats.largest_share_calls, most);  // group m holds what member m holds
    EXPECT_FALSE(p.stats.unbounded);
  }
  fs::remove_all(dir);
}

// --memory: the groups are as many as the budget needs, over the memory the records but the
// calls already take; too small a budget for even those says so.
TEST(PassesMemoryBudget, GroupsAsManyAsTheBudgetNeeds) {
  const std::string dir = testing::FreshTempDir("passes-budget");
  // 640 k calls: ~64 MB at the check's peak, well above the noise of RSS.
  const SyntheticTraceOptions o = GroupsWithASwap(dir, 32, 8, 5000, 5, {7});
  auto written = WriteSyntheticTrace(o);
  ASSERT_TRUE(written.ok()) << written.status().message();
  const std::string one = CheckedInOneProcess(dir);
  EXPECT_NE(one.find("order_swap"), std::string::npos) << one;
  const uint64_t calls = written->calls;
  PassOptions po;
  po.memory_bytes = ResidentBytes() + calls * kCheckBytesPerCall / 4;  // about 4 groups' worth
  const InPasses p = CheckedInPasses(dir, po);
  EXPECT_EQ(p.rendered, one);
  EXPECT_GE(p.stats.shares, 2);
  EXPECT_LE(p.stats.shares, 8);  // never more groups than communicators
  EXPECT_EQ(p.stats.calls, calls);
  EXPECT_LE(p.stats.largest_share_calls, calls / 2);
  EXPECT_FALSE(p.stats.unbounded);

  po.memory_bytes = 1 << 20;  // less than the process already holds
  CheckOptions co;
  auto too_small = CheckInPasses(dir, po, co);
  ASSERT_FALSE(too_small.ok());
  EXPECT_NE(too_small.status().message().find("give a larger --memory"), std::string::npos)
      << too_small.status().message();
  fs::remove_all(dir);
}

// --memory below what one communicator alone needs: its per-call arrays go to a file on disk, and
// the report is the in-memory one.
TEST(PassesSpill, ACommunicatorLargerThanTheBudgetIsCheckedFromDisk) {
  const std::string dir = testing::FreshTempDir("passes-spill");
  const SyntheticTraceOptions o = GroupsWithASwap(dir, 8, 1, 20000, 3, {7});
  auto written = WriteSyntheticTrace(o);
  ASSERT_TRUE(written.ok()) << written.status().message();
  const std::string one = CheckedInOneProcess(dir);
  EXPECT_NE(one.find("order_swap"), std::string::npos) << one;
  const uint64_t before = GetSpillStats().bytes;
  PassOptions po;
  po.memory_bytes = ResidentBytes() + (4 << 20);  // a fraction of the one communicator's ~50 MB
  po.spill_dir = SpillDir();
  const InPasses p = CheckedInPasses(dir, po);
  EXPECT_EQ(p.rendered, one);
  EXPECT_TRUE(p.stats.unbounded);
  EXPECT_EQ(p.stats.spill_error, "");
  EXPECT_EQ(p.stats.spill_dir, SpillDir());
  // At least the model's 16-byte slot of every call went there.
  EXPECT_GE(p.stats.spilled_bytes, written->calls * 16);
  EXPECT_FALSE(Spilling()) << "spilling stops with the check";
  EXPECT_EQ(GetSpillStats().bytes, before);

  po.spill = false;  // held in memory above the bound, as it says
  const InPasses held = CheckedInPasses(dir, po);
  EXPECT_EQ(held.rendered, one);
  EXPECT_TRUE(held.stats.unbounded);
  EXPECT_EQ(held.stats.spill_dir, "");
  EXPECT_EQ(held.stats.spilled_bytes, 0u);

  // Bounded or not at all (the viewer): a place the calls cannot go says why.
  po.must_bound = true;
  CheckOptions co;
  auto refused = CheckInPasses(dir, po, co);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("spilling them is off"), std::string::npos)
      << refused.status().message();
  po.spill = true;
  po.spill_dir = dir + "/absent";
  refused = CheckInPasses(dir, po, co);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find(dir + "/absent"), std::string::npos)
      << refused.status().message();
  po.spill_dir = SpillDir();
  EXPECT_EQ(CheckedInPasses(dir, po).rendered, one);
  fs::remove_all(dir);
}

// What `ncclrr check` weighs against the memory left before checking at once: footers' counts,
// or for a file without one (a killed job's) one call per byte, more than it can hold.
TEST(PassesMemoryEstimate, CountsFootersAndOverestimatesKilledFiles) {
  const std::string dir = testing::FreshTempDir("passes-estimate");
  SyntheticTraceOptions o = GroupsWithASwap(dir, 4, 2, 100, 1, {3});
  auto closed = WriteSyntheticTrace(o);
  ASSERT_TRUE(closed.ok());
  EXPECT_EQ(OnePassMemoryEstimate(dir, 2), closed->calls * kCheckBytesPerCall);
  fs::remove_all(dir);
  o.close_files = false;
  auto killed = WriteSyntheticTrace(o);
  ASSERT_TRUE(killed.ok());
  uint64_t bytes = 0;
  for (const std::string& f : killed->files) bytes += fs::file_size(f);
  EXPECT_EQ(OnePassMemoryEstimate(dir, 2), bytes * kCheckBytesPerCall);
  EXPECT_EQ(OnePassMemoryEstimate(dir + "/absent", 2), 0u);
  fs::remove_all(dir);
}

// Two hosts: their clocks are aligned from matched collectives of every communicator, which the
// members hold apart and pool.
TEST(SpreadManyHosts, AlignsClocksAsOneProcessDoes) {
  testing::ScriptBuilder b(4);
  for (int p = 0; p < 4; ++p) b.s.processes[p].host = p < 2 ? "host-a" : "host-b";
  const int world = b.Comm(0x1000, "world", {0, 1, 2, 3});
  const int left = b.Comm(0x2000, "left", {0, 2});
  const int right = b.Comm(0x3000, "right", {1, 3});
  for (int step = 0; step < 6; ++step) {
    b.All(world, testing::AllReduce(1024, 0));
    b.All(left, testing::AllReduce(256, 1));
    b.All(right, testing::AllReduce(512, 2));
  }
  b.All(left, testing::AllReduce(64, 3), [](int p, ScriptCall& c) {
    if (p == 2) c.count = 65;
  });
  const std::string dir = testing::FreshTempDir("spread-hosts");
  b.s.dir = dir;
  ASSERT_TRUE(WriteSyntheticScript(b.s).ok());
  const std::string one = CheckedInOneProcess(dir);
  EXPECT_NE(one.find("count_mismatch"), std::string::npos) << one;
  for (int members : {2, 3}) {
    const Spread s = CheckedSpread(dir, members);
    EXPECT_EQ(s.rendered, one) << members << " members";
    for (const SpreadStats& st : s.stats) EXPECT_FALSE(st.whole);
    PassOptions po;
    po.shares = members;
    EXPECT_EQ(CheckedInPasses(dir, po).rendered, one) << members << " groups in passes";
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ncclrr::analysis
