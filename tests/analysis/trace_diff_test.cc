// DiffTraces on scripted pairs of runs: runs that differ only in what differs between any two
// runs (communicator ids, hosts, buffer addresses, times, GPU-time jitter) are equivalent; each
// kind of divergence is found once, at the right communicator, position and rank.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "ncclrr/analysis/trace_diff.h"
#include "scenarios.h"
#include "sketch_scenarios.h"

namespace ncclrr::analysis {
namespace {

namespace fs = std::filesystem;
using testing::ScriptBuilder;

// What differs between two runs of one program without the program changing.
struct RunLook {
  uint64_t comm_base = 0x1100;  // communicator ids (NCCL's random unique ids)
  uint64_t salt = 0;            // buffer addresses
  std::string host = "node-a";
  int64_t gap_ns = 20'000;   // host time between calls
  uint64_t jitter_seed = 0;  // 0: no GPU times; else GPU durations with jitter
};

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

const std::vector<uint64_t> kCounts = {1728, 36864, 512, 4096};

// A training loop: `steps` steps of one allreduce per tensor on comm "dp", plus a split "tp"
// (two colors) created after it. `edit(process, step, index, call)` changes one call (return
// false to leave it out).
using Edit = std::function<bool(int p, int step, int index, ScriptCall& c)>;

SyntheticScript Training(const RunLook& look, int ranks = 2, int steps = 8,
                         const Edit& edit = nullptr) {
  ScriptBuilder b(ranks);
  b.s.address_salt = look.salt;
  std::vector<int> all;
  for (int r = 0; r < ranks; ++r) all.push_back(r);
  const int dp = b.Comm(look.comm_base + 1, "dp", all);
  std::vector<int> even, odd;
  for (int r = 0; r < ranks; ++r) (r % 2 ? odd : even).push_back(r);
  const int tp0 = b.Comm(look.comm_base + 7, "", even);
  const int tp1 = b.Comm(look.comm_base + 3, "", odd);
  for (int c : {tp0, tp1}) {
    b.s.comms[c].parent = look.comm_base + 1;
    b.s.comms[c].origin = CommOrigin::kSplit;
    b.s.comms[c].color = c == tp0 ? 0 : 1;
  }
  for (auto& p : b.s.processes) p.host = look.host;
  uint64_t rng = look.jitter_seed;
  for (int step = 0; step < steps; ++step)
    for (int p = 0; p < ranks; ++p) {
      for (int i = 0; i < static_cast<int>(kCounts.size()); ++i) {
        ScriptCall c = testing::AllReduce(kCounts[i], i + 1);
        c.comm = dp;
        c.gap_ns = look.gap_ns;
        c.callsite = static_cast<uint32_t>(i + 1);
        if (look.jitter_seed) {
          // About 40 us +-25%, and now and then a rank waits for a late peer for up to 3 ms.
          rng = SplitMix(rng);
          c.gpu = 2;
          c.gpu_ns = 30'000 + static_cast<int64_t>(rng % 20'000);
          // (never two ranks at once: the last to arrive waits for nobody).
          if (rng % 7 == 0 && p == step % 2)
            c.gpu_ns += static_cast<int64_t>((rng >> 16) % 3'000'000);
        }
        if (edit && !edit(p, step, i, c)) continue;
        b.On(p, c);
      }
      ScriptCall t = testing::Collective(Api::kAllGather, 256, 9);
      t.comm = p % 2 ? tp1 : tp0;
      if (b.s.comms[t.comm].members.size() > 1) b.On(p, t);
    }
  return b.s;
}

class TraceDiffTest : public ::testing::Test {
 protected:
  std::optional<TraceModel> Load(SyntheticScript s) {
    s.dir = (fs::temp_directory_path() /
             ("ncclrr-diff-" + std::to_string(getpid()) + "-" + std::to_string(next_++)))
                .string();
    fs::remove_all(s.dir);
    auto w = WriteSyntheticScript(s);
    if (!w.ok()) {
      ADD_FAILURE() << w.status().message();
      return std::nullopt;
    }
    auto m = TraceModel::Load(s.dir);
    fs::remove_all(s.dir);
    if (!m.ok()) {
      ADD_FAILURE() << m.status().message();
      return std::nullopt;
    }
    return std::move(m.value());
  }

  DiffReport Diff(const SyntheticScript& a, const SyntheticScript& b) {
    ma_ = Load(a);
    mb_ = Load(b);
    if (!ma_ || !mb_) return {};
    DiffReport r = DiffTraces(*ma_, *mb_);
    text_ = FormatDiffText(r, *ma_, *mb_, {true, "", ""});
    return r;
  }

  // The one divergence of `kind`; fails when there is not exactly one.
  const Divergence* Only(const DiffReport& r, DiffKind kind) {
    const Divergence* found = nullptr;
    for (const Divergence& d : r.divergences)
      if (d.kind == kind) {
        EXPECT_EQ(found, nullptr) << "two " << DiffKindName(kind) << "\n" << text_;
        found = &d;
      }
    EXPECT_NE(found, nullptr) << "no " << DiffKindName(kind) << "\n" << text_;
    return found;
  }

  std::optional<TraceModel> ma_, mb_;
  std::string text_;
  int next_ = 0;
};

RunLook OtherRun() {
  RunLook l;
  l.comm_base = 0x7e57000000000000ull;
  l.salt = 0x3000000000ull;
  l.host = "node-b";
  l.gap_ns = 35'000;
  return l;
}

TEST_F(TraceDiffTest, RunsThatDifferOnlyInIdsAddressesAndTimesAreEquivalent) {
  const DiffReport r = Diff(Training({}), Training(OtherRun()));
  EXPECT_TRUE(r.divergences.empty()) << text_;
  EXPECT_EQ(r.ExitCode(), 0);
  EXPECT_EQ(r.summary.matched, 3u) << text_;
  EXPECT_EQ(r.summary.paired, r.summary.calls_a);
  EXPECT_EQ(r.summary.calls_a, r.summary.calls_b);
  EXPECT_TRUE(r.summary.call_sites_compared);
  EXPECT_NE(text_.find("equivalent, no differences"), std::string::npos) << text_;
}

TEST_F(TraceDiffTest, SplitsAreMatchedByColorNotByIdOrListOrder) {
  SyntheticScript b = Training(OtherRun(), 4);
  std::swap(b.comms[1].color, b.comms[2].color);  // color 1 holds the even ranks in run B ...
  std::swap(b.comms[1].members, b.comms[2].members);
  for (auto& p : b.processes)  // ... and the calls follow the members
    for (ScriptCall& c : p.calls)
      if (c.comm == 1 || c.comm == 2) c.comm = 3 - c.comm;
  const DiffReport r = Diff(Training({}, 4), b);
  EXPECT_TRUE(r.divergences.empty()) << text_;
  ASSERT_EQ(r.comms.size(), 3u);
  for (const CommPair& p : r.comms) {
    ASSERT_GE(p.a, 0);
    ASSERT_GE(p.b, 0);
    EXPECT_EQ(ma_->comms()[p.a].color, mb_->comms()[p.b].color);
    EXPECT_FALSE(p.loose);
  }
}

TEST_F(TraceDiffTest, ACommunicatorOnlyOneRunCreatedHasNoCounterpart) {
  SyntheticScript b = Training(OtherRun(), 4);
  ScriptComm extra;
  extra.id = 0xabc;
  extra.name = "pp";
  extra.members = {0, 1, 2, 3};
  b.comms.push_back(extra);
  for (int p = 0; p < 4; ++p) {
    ScriptCall c = testing::Collective(Api::kBroadcast, 64, 11, 0);
    c.comm = static_cast<int>(b.comms.size()) - 1;
    b.processes[p].calls.push_back(c);
  }
  const DiffReport r = Diff(Training({}, 4), b);
  const Divergence* d = Only(r, DiffKind::kUnmatchedComm);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->comm_a, -1);
  EXPECT_EQ(mb_->comms()[d->comm_b].name, "pp");
  EXPECT_EQ(r.divergences.size(), 1u) << text_;
  EXPECT_EQ(r.ExitCode(), 1);
  EXPECT_NE(d->short_text.find("of run B has no counterpart in run A"), std::string::npos);
}

TEST_F(TraceDiffTest, TwoCallsSwappedOnOneRankAreOneOrderDivergence) {
  // Rank 1 issues tensors 1 and 2 (1728, 36864) the other way round in steps 3 and 6.
  const Edit swap = [](int p, int step, int i, ScriptCall& c) {
    if (p == 1 && (step == 3 || step == 6) && i < 2) {
      c.count = kCounts[1 - i];
      c.tensor = 2 - i;
      c.callsite = static_cast<uint32_t>(c.tensor);  // the code moved, its call sites with it
    }
    return true;
  };
  const DiffReport r = Diff(Training({}), Training(OtherRun(), 2, 8, swap));
  const Divergence* d = Only(r, DiffKind::kOrder);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->seq_a, 12u);  // step 3 starts at seq 3 * 4
  EXPECT_EQ(d->ranks, std::vector<int>{1});
  EXPECT_EQ(d->more, 1u);  // step 6
  EXPECT_EQ(r.divergences.size(), 1u) << text_;
  ASSERT_EQ(d->table.size(), 2u);
  EXPECT_FALSE(d->table[0].differs);
  EXPECT_TRUE(d->table[1].differs);
  EXPECT_NE(d->table[1].b.find("AllReduce(36864 float32, sum) then AllReduce(1728"),
            std::string::npos)
      << text_;
  EXPECT_NE(d->message.find("other ranks did not change"), std::string::npos) << text_;
}

TEST_F(TraceDiffTest, OneCountThatDiffersIsAnArgumentsDivergence) {
  const Edit count = [](int p, int step, int i, ScriptCall& c) {
    if (p == 2 && step >= 2 && i == 1) c.count = 36928;
    return true;
  };
  const DiffReport r = Diff(Training({}, 4), Training(OtherRun(), 4, 8, count));
  const Divergence* d = Only(r, DiffKind::kArguments);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->seq_a, 9u);
  EXPECT_EQ(d->ranks, std::vector<int>{2});
  EXPECT_EQ(d->more, 5u);  // steps 3-7
  EXPECT_NE(d->short_text.find("count 36864 in run A, 36928 in run B"), std::string::npos) << text_;
  EXPECT_EQ(r.divergences.size(), 1u) << text_;
}

TEST_F(TraceDiffTest, EveryRankChangedAlikeIsStillReportedAsAProgramChange) {
  const Edit count = [](int, int step, int i, ScriptCall& c) {
    if (step == 4 && i == 3) c.count = 8192;
    return true;
  };
  const DiffReport r = Diff(Training({}), Training(OtherRun(), 2, 8, count));
  const Divergence* d = Only(r, DiffKind::kArguments);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->seq_a, 19u);
  EXPECT_EQ(d->ranks, (std::vector<int>{0, 1}));
  EXPECT_NE(d->message.find("Every rank changed alike"), std::string::npos) << text_;
}

TEST_F(TraceDiffTest, ASkippedCallIsOneMissingCall) {
  const Edit skip = [](int p, int step, int i, ScriptCall&) {
    return !(p == 0 && step == 2 && i == 2);
  };
  const DiffReport r = Diff(Training({}), Training(OtherRun(), 2, 8, skip));
  const Divergence* d = Only(r, DiffKind::kMissingCall);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->seq_a, 10u);
  EXPECT_EQ(d->ranks, std::vector<int>{0});
  EXPECT_EQ(d->more, 0u);
  EXPECT_NE(d->short_text.find("skipped 1 call at seq 10"), std::string::npos) << text_;
  EXPECT_EQ(r.divergences.size(), 1u) << text_;
}

TEST_F(TraceDiffTest, ARunThatStoppedEarlyMissesItsTail) {
  SyntheticScript b = Training(OtherRun(), 2, 3);
  for (auto& p : b.processes) p.close = false;  // killed
  const DiffReport r = Diff(Training({}), b);
  const Divergence* d = Only(r, DiffKind::kMissingCall);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->seq_a, 12u);
  EXPECT_EQ(d->ranks, (std::vector<int>{0, 1}));
  EXPECT_NE(d->message.find("ends without a clean close"), std::string::npos) << text_;
  // And the other way round: run B's extra calls.
  const DiffReport back = Diff(Training({}, 2, 3), Training(OtherRun()));
  const Divergence* e = Only(back, DiffKind::kExtraCall);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->seq_b, 12u);
}

TEST_F(TraceDiffTest, ACallFromAnotherCallSiteIsACallSiteDivergence) {
  const Edit site = [](int p, int step, int i, ScriptCall& c) {
    if (p == 1 && step == 5 && i == 0) c.callsite = 77;
    return true;
  };
  const DiffReport r = Diff(Training({}), Training(OtherRun(), 2, 8, site));
  const Divergence* d = Only(r, DiffKind::kCallSite);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->seq_a, 20u);
  EXPECT_EQ(d->ranks, std::vector<int>{1});
  EXPECT_NE(d->message.find("site1 in run A, site77 in run B"), std::string::npos) << text_;
  EXPECT_EQ(r.divergences.size(), 1u) << text_;
}

TEST_F(TraceDiffTest, GpuTimeJitterAndWaitsAreNotOutliers) {
  RunLook a, b = OtherRun();
  a.jitter_seed = 1;
  b.jitter_seed = 2;
  const DiffReport r = Diff(Training(a, 2, 40), Training(b, 2, 40));
  EXPECT_TRUE(r.summary.timing_compared);
  EXPECT_TRUE(r.divergences.empty()) << text_;
}

TEST_F(TraceDiffTest, AGrosslySlowerCollectiveIsATimingOutlier) {
  RunLook a, b = OtherRun();
  a.jitter_seed = 1;
  b.jitter_seed = 2;
  const Edit slow = [](int, int step, int i, ScriptCall& c) {
    if (step == 17 && i == 1) c.gpu_ns = 4'000'000;  // 4 ms on every rank
    return true;
  };
  const DiffReport r = Diff(Training(a, 2, 40), Training(b, 2, 40, slow));
  const Divergence* d = Only(r, DiffKind::kTiming);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->seq_a, 17u * 4 + 1);
  EXPECT_EQ(d->more, 0u);
  EXPECT_EQ(r.divergences.size(), 1u) << text_;
  EXPECT_NE(d->short_text.find("took 4"), std::string::npos) << text_;
}

// Data: sketched steps as `record --sketch` would give them (sketch_scenarios.h).
SyntheticScript DataRun(uint64_t comm_id,
                        const std::function<void(int step, testing::DataStep&)>& edit) {
  ScriptBuilder b(2);
  const int dp = b.Comm(comm_id, "dp", {0, 1});
  for (int step = 0; step < 4; ++step) {
    testing::DataStep d;
    d.counts = {3000, 5000, 5000, 1000};
    if (edit) edit(step, d);
    testing::AddDataStep(b, dp, step, d);
  }
  return b.s;
}

TEST_F(TraceDiffTest, SketchedRunsWithTheSameDataAreEquivalent) {
  const DiffReport r = Diff(DataRun(0x1, nullptr), DataRun(0x2, nullptr));
  EXPECT_TRUE(r.summary.data_compared);
  EXPECT_TRUE(r.divergences.empty()) << text_;
}

TEST_F(TraceDiffTest, AnOutputThatDiffersWhileInputsAgreeIsADataDivergence) {
  const DiffReport r = Diff(DataRun(0x1, nullptr), DataRun(0x2, [](int step, testing::DataStep& d) {
                              if (step == 2)
                                d.corrupt = [](int p, int pos, std::vector<float>& recv) {
                                  if (p == 0 && pos == 3) recv[7] += 1.0f;
                                };
                            }));
  const Divergence* d = Only(r, DiffKind::kData);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->seq_a, 11u);
  EXPECT_EQ(d->ranks, std::vector<int>{0});
  EXPECT_NE(d->message.find("Every sketched input"), std::string::npos) << text_;
  EXPECT_EQ(r.divergences.size(), 1u) << text_;
}

TEST_F(TraceDiffTest, SameShapeTensorsSwappedShowInDataAndOrder) {
  // Rank 1 reduces tensor 3's data where tensor 2's belongs and the other way round, in step 1:
  // shapes alike, so only the sketches tell.
  const DiffReport r = Diff(DataRun(0x1, nullptr), DataRun(0x2, [](int step, testing::DataStep& d) {
                              if (step == 1)
                                d.data_at = [](int p, int pos) {
                                  return p == 1 && (pos == 1 || pos == 2) ? 4 - pos : pos + 1;
                                };
                            }));
  const Divergence* d = Only(r, DiffKind::kData);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->seq_a, 5u);
  EXPECT_EQ(d->ranks, (std::vector<int>{0, 1}));  // rank 0's output, rank 1's input
  EXPECT_NE(d->message.find("Rank 1 sent different data at seq 5"), std::string::npos) << text_;
  const Divergence* o = Only(r, DiffKind::kOrder);
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->seq_a, 5u);
  EXPECT_EQ(o->ranks, std::vector<int>{1});
  EXPECT_NE(o->short_text.find("same-shape"), std::string::npos) << text_;
}

TEST_F(TraceDiffTest, JsonHasTheDocumentedShape) {
  const Edit count = [](int p, int step, int i, ScriptCall& c) {
    if (p == 1 && step == 1 && i == 0) c.count = 1729;
    return true;
  };
  const DiffReport r = Diff(Training({}), Training(OtherRun(), 2, 8, count));
  const std::string json = FormatDiffJson(r, *ma_, *mb_, {true, "", ""});
  for (const char* key : {"\"runs\":", "\"comms\":", "\"divergences\":[{\"kind\":\"arguments\"",
                          "\"comm_a\":", "\"seq_a\":4", "\"ranks\":[1]", "\"table\":", "\"notes\":",
                          "\"summary\":", "\"exit_code\":1", "\"by_kind\":{\"arguments\":1}"})
    EXPECT_NE(json.find(key), std::string::npos) << key << "\n" << json;
  EXPECT_EQ(json.find("\"calls_a\":["), std::string::npos) << "--stable leaves out file positions";
}

}  // namespace
}  // namespace ncclrr::analysis
