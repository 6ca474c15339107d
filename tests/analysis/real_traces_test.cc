// Traces recorded from real PyTorch and JAX jobs on real NCCL 2.28.9 (tests/gpu/realjobs, two
// ranks on one H200; tests/data/real/README.md says how each was made): `check --stable` of each
// must give its golden text, so the analysis is tested on what real allocators, interleaved
// collectives and killed hangs look like, not only on scripted traces.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "golden_file.h"
#include "ncclrr/analysis/check.h"
#include "ncclrr/analysis/logical_identity.h"
#include "ncclrr/analysis/report_format.h"
#include "ncclrr/trace/describe.h"

namespace ncclrr::analysis {
namespace {

namespace fs = std::filesystem;

fs::path RealDir() { return ncclrr::testing::SourceDataDir("tests/data/real"); }

struct RealTrace {
  std::string name;
  std::optional<FindingKind> kind;  // the one finding expected; nullopt: none
  uint64_t seq = 0;
  uint64_t repeats = 0;
};

void PrintTo(const RealTrace& t, std::ostream* os) { *os << t.name; }

class RealTraceTest : public ::testing::TestWithParam<RealTrace> {};

// `check --stable` of a real trace: the model, the report and its text.
struct Checked {
  std::optional<TraceModel> model;
  Report report;
  std::string text;
};
Checked CheckReal(const std::string& name) {
  Checked c;
  auto model = TraceModel::Load((RealDir() / name).string());
  EXPECT_TRUE(model.ok()) << model.status().message();
  if (!model.ok()) return c;
  c.model.emplace(std::move(*model));
  CheckOptions o;
  o.stable = true;
  c.report = Check(*c.model, o);
  FormatOptions fo;
  fo.stable = true;
  c.text = FormatText(c.report, &*c.model, fo);
  return c;
}

// The trace's one finding, expected of `kind` at `seq` (any seq when none is given).
Finding OnlyFinding(const Checked& c, FindingKind kind, std::optional<uint64_t> seq) {
  EXPECT_EQ(c.report.findings.size(), 1u) << c.text;
  if (c.report.findings.empty()) return Finding{};
  const Finding& f = c.report.findings[0];
  EXPECT_EQ(f.kind, kind) << c.text;
  if (seq) {
    EXPECT_EQ(f.seq, *seq) << c.text;
  }
  return f;
}

// Every phrase occurs in `text` (a finding's message).
void ExpectPhrases(const std::string& text, std::initializer_list<std::string_view> phrases) {
  for (std::string_view p : phrases)
    EXPECT_NE(text.find(p), std::string::npos) << p << "\n" << text;
}

TEST_P(RealTraceTest, CheckFindsWhatTheJobDid) {
  const RealTrace& want = GetParam();
  const Checked c = CheckReal(want.name);
  ASSERT_TRUE(c.model.has_value());
  const Report& r = c.report;
  const std::string& text = c.text;
  if (!want.kind) {
    EXPECT_TRUE(r.findings.empty()) << text;
  } else {
    ASSERT_EQ(r.findings.size(), 1u) << text;
    const Finding& f = r.findings[0];
    EXPECT_EQ(FindingKindName(f.kind), FindingKindName(*want.kind)) << text;
    ASSERT_TRUE(f.seq.has_value()) << text;
    EXPECT_EQ(*f.seq, want.seq) << text;
    EXPECT_EQ(f.repeats, want.repeats) << text;
  }
  const fs::path golden = RealDir() / (want.name + ".check.txt");
  ncclrr::testing::ExpectGolden(golden, text);
}

// Uneven inputs in a real DDP job: rank 0's shard held an 11th step. Its buffer broadcast met the
// other ranks' all_gather_object after the loop (seq 63); their gather got garbage sizes, rank 2
// raised, torchrun killed the rest, and rank 0 saw ncclRemoteError. One finding tells the cause
// at seq 63 -- rank 0 went on with the loop, ranks 1-3 did not -- and covers the calls rank 0
// issued after it (no second missing_call for them); the remote error is reported as it is.
TEST(RealTraces, UnevenInputsAreToldWhereTheRanksPart) {
  const Checked c = CheckReal("accum-uneven");
  ASSERT_TRUE(c.model.has_value());
  ASSERT_EQ(c.report.findings.size(), 2u) << c.text;
  const Finding& f = c.report.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kOpMismatch) << c.text;
  EXPECT_EQ(f.seq, 63u);
  EXPECT_EQ(f.ranks, std::vector<int>{0});
  EXPECT_NE(f.short_text.find("rank 0 went on with the loop at seq 63"), std::string::npos)
      << c.text;
  EXPECT_NE(f.message.find("uneven inputs"), std::string::npos) << c.text;
  EXPECT_NE(f.message.find("3 later calls had no partner"), std::string::npos) << c.text;
  EXPECT_EQ(c.report.findings[1].kind, FindingKind::kNcclError) << c.text;
  ncclrr::testing::ExpectGolden(RealDir() / "accum-uneven.check.txt", c.text);
}

// A side stream scales rank 1's gradient bucket in place while the all_reduce reads it (at 5
// steps; `record --sketch`). Where the scaling landed during the call, the sum is not what the
// ranks sent (wrong_sum, on both ranks: the buffer is in place, so buffer_race cannot see the
// send side, and the message names that cause); where it landed after NCCL wrote the output,
// only rank 1's output differs (output_divergence naming rank 1 and a buffer race). Where it
// landed before the call, the call itself was right: nothing is claimed.
TEST(RealTraces, SideStreamWritingTheBucketIsAWrongSum) {
  const Checked c = CheckReal("side-race");
  ASSERT_TRUE(c.model.has_value());
  ASSERT_EQ(c.report.findings.size(), 2u) << c.text;
  const Finding& sum = c.report.findings[0];
  EXPECT_EQ(sum.kind, FindingKind::kWrongSum) << c.text;
  EXPECT_EQ(sum.repeats, 2u);
  EXPECT_NE(sum.message.find("a send buffer written by another stream"), std::string::npos);
  const Finding& div = c.report.findings[1];
  EXPECT_EQ(div.kind, FindingKind::kOutputDivergence) << c.text;
  EXPECT_EQ(div.ranks, std::vector<int>{1});
  EXPECT_NE(div.message.find("a buffer race on rank 1"), std::string::npos);
  ncclrr::testing::ExpectGolden(RealDir() / "side-race.check.txt", c.text);
}

// The bug this project began with, in PyTorch: gradients all-reduced from per-parameter hooks
// as autograd produces them, and rank 1 evaluates two same-shape branches in the other order, so
// it all-reduces left.* where rank 0 all-reduces right.*, at every step (`#wrong 160`). Shapes,
// buffers (allocated in the order the calls are issued) and call sites are alike on both ranks:
// without data nothing can tell (tests/gpu/realjobs/README.md). Under `record --sketch` the
// values do: the two pairs (biases, weights), at every step.
TEST(RealTraces, SwapAtEveryStepIsToldByTheData) {
  const Checked c = CheckReal("hook-order-sketch");
  ASSERT_TRUE(c.model.has_value());
  ASSERT_EQ(c.report.findings.size(), 2u) << c.text;
  for (const Finding& f : c.report.findings) {
    EXPECT_EQ(f.kind, FindingKind::kSuspectedSwap) << c.text;
    EXPECT_EQ(f.ranks, std::vector<int>{1});
    EXPECT_EQ(f.repeats, 19u);  // all 20 steps, the first one too
    ASSERT_TRUE(f.confidence.has_value());
    EXPECT_GE(*f.confidence, 0.99);
    EXPECT_NE(f.short_text.find("told by their data"), std::string::npos);
  }
  EXPECT_EQ(c.report.findings[0].seq, 2u);  // the biases (128), then the weights (16384)
  EXPECT_EQ(c.report.findings[1].seq, 3u);
  ncclrr::testing::ExpectGolden(RealDir() / "hook-order-sketch.check.txt", c.text);
}

// Expert parallelism: rank 2 takes its receive split sizes from its send split sizes at step 3
// (assumes symmetric routing). Every peer's Send to it disagrees with its Recv, and its Sends
// back with theirs: one finding per exchange naming rank 2 and the likely cause, not one per
// pair; NCCL's errors on every rank follow from it and say so; the ranks' differing counts
// where the killed job stopped are not reported as missing Sends.
TEST(RealTraces, AllToAllWithOneRanksWrongSplitsNamesThatRank) {
  const Checked c = CheckReal("moe-splits");
  ASSERT_TRUE(c.model.has_value());
  std::vector<const Finding*> p2p;
  for (const Finding& f : c.report.findings) {
    if (f.kind == FindingKind::kP2pMismatch) {
      p2p.push_back(&f);
    } else {
      EXPECT_EQ(f.kind, FindingKind::kNcclError) << c.text;
      EXPECT_NE(f.message.find("It follows the mismatched calls"), std::string::npos) << c.text;
    }
  }
  ASSERT_EQ(p2p.size(), 2u) << c.text;
  for (const Finding* f : p2p) {
    EXPECT_EQ(f->ranks, (std::vector<int>{0, 1, 2, 3})) << c.text;
    EXPECT_NE(f->short_text.find("rank 2's"), std::string::npos) << c.text;
    EXPECT_NE(f->message.find("assumes symmetric traffic"), std::string::npos) << c.text;
  }
  EXPECT_EQ(p2p[0]->seq, 12u);
  EXPECT_EQ(p2p[1]->seq, 13u);
  ncclrr::testing::ExpectGolden(RealDir() / "moe-splits.check.txt", c.text);
}

// A job that captured NCCL calls in a CUDA graph and left its process group with the graph alive:
// ncclCommFinalize never returned on either rank (the job hung at exit; deleting the graph first
// ends it). One finding that says so, and no "calls after finalize" for the calls before it.
TEST(RealTraces, FinalizeWithALiveGraphIsTheHangAtExit) {
  const Checked c = CheckReal("graph-keep");
  ASSERT_TRUE(c.model.has_value());
  ASSERT_EQ(c.report.findings.size(), 1u) << c.text;
  const Finding& f = c.report.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kLifecycleError) << c.text;
  EXPECT_EQ(f.ranks, (std::vector<int>{0, 1}));
  EXPECT_NE(f.short_text.find("never returned from ncclCommFinalize"), std::string::npos);
  EXPECT_NE(f.message.find("Destroy the graphs first"), std::string::npos);
  ncclrr::testing::ExpectGolden(RealDir() / "graph-keep.check.txt", c.text);
}

// The one finding of a real trace, of `kind` (a default-constructed one, after a failure, when
// there is not exactly one).
Finding OnlyFinding(const std::string& name, FindingKind kind) {
  const Checked c = CheckReal(name);
  EXPECT_TRUE(c.model.has_value());
  EXPECT_EQ(c.report.findings.size(), 1u) << c.text;
  if (c.report.findings.size() != 1) return {};
  EXPECT_EQ(c.report.findings[0].kind, kind) << c.text;
  return c.report.findings[0];
}

// Process groups made by iterating a set of names: each rank's "grad" group is the other's
// "metrics" group, so both wait in their first gradient all-reduce. The same call issued first
// on each side names the swap of communicators as the likely cause; a genuine opposite order
// (two-groups: rank 1 logs its metrics first) does not.
TEST(RealTraces, GroupsMadeInADifferentOrderAreNamedAsTheCause) {
  for (const char* name : {"setup-group-order", "setup4-group-order"}) {
    const Finding f = OnlyFinding(name, FindingKind::kCrossCommOrder);
    EXPECT_NE(f.message.find("disagree on which communicator is which"), std::string::npos)
        << f.message;
    EXPECT_NE(f.message.find("one fixed order on every rank"), std::string::npos);
  }
  const Checked opposite = CheckReal("two-groups");
  ASSERT_EQ(opposite.report.findings.size(), 1u) << opposite.text;
  EXPECT_EQ(opposite.report.findings[0].kind, FindingKind::kCrossCommOrder);
  EXPECT_EQ(opposite.report.findings[0].message.find("which communicator is which"),
            std::string::npos);
}

// DDP with a parameter one rank left out of one step's forward: the skipped bucket is named as
// issued by autograd's hooks, with DDP's unused-parameter cause and both remedies.
TEST(RealTraces, DdpBucketMissingOnOneRankNamesUnusedParameters) {
  const Finding f = OnlyFinding("ddp-unused-param", FindingKind::kMissingCall);
  EXPECT_NE(f.short_text.find("rank 1 never issued"), std::string::npos) << f.short_text;
  EXPECT_NE(f.message.find("autograd's backward hooks"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("find_unused_parameters=True"), std::string::npos);
  // A step skipped whole (forward, backward and the loss all-reduce) is not that.
  const Checked skipped = CheckReal("ddp-skip-step");
  for (const Finding& g : skipped.report.findings)
    EXPECT_EQ(g.message.find("autograd's backward hooks"), std::string::npos) << g.message;
}

// A pipeline whose second stage runs fewer micro-batches: the first finding, the loss broadcast
// the first stage never reached, names the unmatched receives as the reason it stopped; the
// p2p_mismatch findings give the counts.
TEST(RealTraces, PipelineStagesWithDifferentMicroBatchCountsNameTheUnmatchedReceives) {
  const Checked c = CheckReal("pptp-micro");
  ASSERT_GE(c.report.findings.size(), 2u) << c.text;
  const Finding& f = c.report.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kMissingCall);
  EXPECT_NE(f.message.find("Rank 2 posted 18 Recvs from rank 0, which posted 16 Sends"),
            std::string::npos)
      << f.message;
  EXPECT_NE(f.message.find("same number of micro-batches"), std::string::npos);
  int p2p = 0;
  for (const Finding& g : c.report.findings) {
    if (g.kind != FindingKind::kP2pMismatch) continue;
    ++p2p;
    // Where the per-step counts changed: after the loss broadcast of step 2.
    EXPECT_NE(g.message.find("up to seq 2 (4 and 4 in the last of them)"), std::string::npos)
        << g.message;
    EXPECT_NE(g.message.find("different number of messages per step"), std::string::npos);
  }
  EXPECT_EQ(p2p, 4);
  // A hang with no point-to-point calls keeps the plain advice.
  const Checked crash = CheckReal("side-crash");
  for (const Finding& g : crash.report.findings)
    EXPECT_EQ(g.message.find("Recvs from rank"), std::string::npos) << g.message;
  ncclrr::testing::ExpectGolden(RealDir() / "pptp-micro.check.txt", c.text);
}

// The initial weights broadcast with src=rank: one finding for every parameter, naming the
// root each rank gave itself.
TEST(RealTraces, BroadcastFromEachRanksOwnRootIsOneFinding) {
  for (const auto& [name, ranks] : {std::pair{"setup-bcast-src", 2}, {"setup4-bcast-src", 4}}) {
    const Finding f = OnlyFinding(name, FindingKind::kRootMismatch);
    EXPECT_EQ(f.repeats, 5u);
    EXPECT_NE(f.message.find("passed its own rank as the root"), std::string::npos) << f.message;
    EXPECT_EQ(f.table.size(), static_cast<size_t>(ranks));  // every rank, none the odd one out
    EXPECT_EQ(f.calls.size(), static_cast<size_t>(ranks));
  }
}

// The founding bug in JAX: gradients psum'd one at a time, walked in each process's set order
// (its hash seed): two same-shape weights swapped and four same-shape biases rotated, at every
// step (`record --sketch`). The data tell both, at all 20 steps: a reordering of four and a swap.
TEST(RealTraces, SetOrderInJaxIsToldByTheData) {
  const Checked c = CheckReal("jax-set-order-sketch");
  ASSERT_TRUE(c.model.has_value());
  ASSERT_EQ(c.report.findings.size(), 2u) << c.text;
  for (const Finding& f : c.report.findings) {
    EXPECT_EQ(f.kind, FindingKind::kSuspectedSwap) << c.text;
    EXPECT_EQ(f.ranks, std::vector<int>{1});
    EXPECT_EQ(f.repeats, 19u);
  }
  EXPECT_EQ(c.report.findings[0].seq, 2u);  // the biases, 128 floats, at 2-5
  EXPECT_EQ(c.report.findings[1].seq, 7u);  // the weights, 16384 floats, at 7 and 9
  EXPECT_NE(c.report.findings[0].short_text.find("4 AllReduce(128 float32, sum) at seq 2-5"),
            std::string::npos)
      << c.text;
  ncclrr::testing::ExpectGolden(RealDir() / "jax-set-order-sketch.check.txt", c.text);
}

// DDP: rank 1 skips step 7 on a "non-finite loss" guard only it takes; its later steps pair with
// rank 0's earlier ones (same sizes, silently) until its validation meets rank 0's step 10 at
// seq 29, and the job hangs there (its trace ends with the validation calls). The ranks part
// at seq 29; the finding names both readings the trace allows: rank 1 left the loop, or it
// skipped a step somewhere in seq 21-28 (it issued its validation after 4 steps, where every
// earlier stretch held 5).
TEST(RealTraces, StepSkippedOnOneRankIsNamedAsAPossibleCause) {
  const Checked c = CheckReal("ddp-skip-step");
  ASSERT_TRUE(c.model.has_value());
  ASSERT_EQ(c.report.findings.size(), 1u) << c.text;
  const Finding& f = c.report.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kCountMismatch) << c.text;
  EXPECT_EQ(f.seq, 29u);
  EXPECT_NE(f.message.find("Or rank 1 skipped a step of the loop"), std::string::npos) << c.text;
  EXPECT_NE(f.message.find("after 4 steps where every earlier stretch between them held 5"),
            std::string::npos)
      << c.text;
  EXPECT_NE(f.message.find("somewhere in seq 21-28"), std::string::npos) << c.text;
  ncclrr::testing::ExpectGolden(RealDir() / "ddp-skip-step.check.txt", c.text);
}

// nccl-tests' alltoall_perf (32 MB to 256 MB, float) under `record --sketch`: its in-place runs
// receive into the buffer they send from, which NCCL does not support (nccl-tests prints N/A
// for them): the outputs really are not copies, and check must say why, never blame a race.
TEST(RealTraces, InPlaceAlltoAllIsNamedAsTheCause) {
  const Checked c = CheckReal("nccltests-alltoall-sketch");
  ASSERT_TRUE(c.model.has_value());
  const Report& r = c.report;
  const std::string& text = c.text;
  const TraceModel* model = &*c.model;
  ASSERT_FALSE(r.findings.empty()) << text;
  for (const Finding& f : r.findings) {
    EXPECT_EQ(f.kind, FindingKind::kWrongSum) << text;
    EXPECT_NE(f.message.find("received into the buffer it sent from"), std::string::npos) << text;
    EXPECT_EQ(f.message.find("Usual causes"), std::string::npos) << text;
    for (const InvolvedCall& call : f.calls)
      EXPECT_TRUE(model->call(call.call).flags & call_flags::kInPlace) << text;
  }
  ncclrr::testing::ExpectGolden(RealDir() / "nccltests-alltoall-sketch.check.txt", text);
}

// Ring attention whose blocks move with a blocking send, then a receive, on every rank: with 4
// ranks each is stuck in its Send to the next (in-flight records), with 2 NCCL failed both
// ranks' group ends. One finding names the cycle and the two ways out; the group ends' errors
// name the Sends of their groups and the cycle that may have caused them. The same ring with
// batch_isend_irecv, and pipeline stages with unmatched receives, give no cycle.
TEST(RealTraces, SendsBeforeReceivesInARingAreOneCycle) {
  const Checked four = CheckReal("ring4-send-first");
  ASSERT_EQ(four.report.findings.size(), 1u) << four.text;
  const Finding& f = four.report.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kP2pMismatch);
  EXPECT_EQ(f.pattern, "send cycle");
  EXPECT_EQ(f.ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(f.calls.size(), 4u);
  EXPECT_NE(f.message.find("(0 to 1, 1 to 2, 2 to 3, 3 to 0)"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("dist.batch_isend_irecv"), std::string::npos);
  EXPECT_NE(f.message.find("rank parity"), std::string::npos);
  ncclrr::testing::ExpectGolden(RealDir() / "ring4-send-first.check.txt", four.text);

  const Checked two = CheckReal("ring-send-first");
  ASSERT_EQ(two.report.findings.size(), 3u) << two.text;
  EXPECT_EQ(two.report.findings[0].pattern, "send cycle");
  EXPECT_EQ(two.report.findings[0].ranks, (std::vector<int>{0, 1}));
  for (size_t i = 1; i < 3; ++i) {
    const Finding& e = two.report.findings[i];
    EXPECT_EQ(e.kind, FindingKind::kNcclError);
    EXPECT_EQ(e.ranks, std::vector<int>{static_cast<int>(i) - 1});
    EXPECT_NE(e.message.find("ncclGroupEnd on rank"), std::string::npos) << e.message;
    EXPECT_NE(e.message.find("its group held Send(4194304 float32 to"), std::string::npos)
        << e.message;
    EXPECT_NE(e.message.find("which may have caused it"), std::string::npos) << e.message;
  }
  ncclrr::testing::ExpectGolden(RealDir() / "ring-send-first.check.txt", two.text);

  for (const char* name : {"ring-clean", "pptp-micro", "moe-splits"}) {
    const Checked c = CheckReal(name);
    for (const Finding& g : c.report.findings) EXPECT_NE(g.pattern, "send cycle") << name;
  }
}

// torchrun restarted a job after rank 1 failed. In one run the new rank 1 read the previous
// attempt's unique id and joined the dead communicator (its init returned ncclRemoteError a
// minute later) while the new rank 0 waited in the init of the id it had made: one
// lifecycle_error names the stale id and the process left waiting. In another run the restart
// went well: the first attempt's failure alone is reported, each finding saying it is about the
// first of the trace's two runs of the job.
TEST(RealTraces, ARestartedJobsRunsAreToldApart) {
  const Checked stale = CheckReal("elastic-stale-id");
  const Finding* f = nullptr;
  for (const Finding& g : stale.report.findings)
    if (g.kind == FindingKind::kLifecycleError) f = &g;
  ASSERT_NE(f, nullptr) << stale.text;
  EXPECT_EQ(f->pattern, "stale unique id");
  EXPECT_EQ(f->ranks, std::vector<int>{1});
  EXPECT_NE(f->message.find("returned ncclRemoteError"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("Meanwhile a process, in comm 0xe05111a01953393e"), std::string::npos)
      << f->message;
  EXPECT_NE(f->message.find("a rendezvous of its own"), std::string::npos);
  EXPECT_EQ(stale.report.findings[0].kind, FindingKind::kMissingCall) << stale.text;
  ncclrr::testing::ExpectGolden(RealDir() / "elastic-stale-id.check.txt", stale.text);

  const Checked restart = CheckReal("elastic-restart");
  ASSERT_EQ(restart.report.findings.size(), 2u) << restart.text;
  EXPECT_EQ(restart.report.findings[0].kind, FindingKind::kMissingCall);
  EXPECT_EQ(restart.report.findings[1].kind, FindingKind::kNcclError);
  // Both are about the first of the two runs torchrun started (the second finished its steps).
  for (const Finding& g : restart.report.findings)
    EXPECT_NE(g.message.find("This communicator belongs to run 1 of the 2 runs of the job in "
                             "this trace"),
              std::string::npos)
        << g.message;
  ncclrr::testing::ExpectGolden(RealDir() / "elastic-restart.check.txt", restart.text);
  // Runs that overlap (a process of the second joined the first's communicator) or a single
  // run are not parted.
  for (const char* name : {"elastic-stale-id", "elastic-clean", "side-crash", "moe-splits"}) {
    const Checked c = CheckReal(name);
    for (const Finding& g : c.report.findings)
      EXPECT_EQ(g.message.find("runs of the job"), std::string::npos) << name;
  }
}

// A hand-written trainer: evaluate() all-reduces its sums after every batch of the rank's shard,
// and the shards (129 samples over 2 ranks) differ by one batch, so rank 0's third per-batch
// all_reduce meets rank 1's next gradient bucket. The finding says the loop ran once more on
// rank 0 and names uneven shards, not the sizes. The same trainer with the barrier of its save
// inside `if rank == 0:`: rank 0's barrier is the first call from its line, which the finding
// says (hedged: with two ranks either may be the one that left the loop).
TEST(RealTraces, PerBatchReductionsOverUnevenShardsNameTheLoop) {
  const Checked eval = CheckReal("trainer-uneven-eval");
  ASSERT_FALSE(eval.report.findings.empty()) << eval.text;
  const Finding& f = eval.report.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kCountMismatch);
  EXPECT_EQ(f.seq, 15u);
  EXPECT_NE(f.message.find("ran once more on rank 0 than on rank 1"), std::string::npos)
      << f.message;
  EXPECT_NE(f.message.find("torch_trainer.py:50 in evaluate) 3 times in a row (seq 13-15)"),
            std::string::npos)
      << f.message;
  EXPECT_EQ(f.message.find("Pass the same count"), std::string::npos) << f.message;
  ncclrr::testing::ExpectGolden(RealDir() / "trainer-uneven-eval.check.txt", eval.text);

  const Checked barrier = CheckReal("trainer-rank0-barrier");
  ASSERT_EQ(barrier.report.findings.size(), 1u) << barrier.text;
  const Finding& b = barrier.report.findings[0];
  EXPECT_EQ(b.seq, 19u);
  EXPECT_NE(b.message.find("Rank 0's call at seq 19 is the first from torch_trainer.py:122"),
            std::string::npos)
      << b.message;
  EXPECT_NE(b.message.find("`if rank == 0:`"), std::string::npos);
  ncclrr::testing::ExpectGolden(RealDir() / "trainer-rank0-barrier.check.txt", barrier.text);

  // Uneven inputs where the lone rank went on with the loop keep their text; a per-position
  // size mismatch is no loop.
  for (const char* name : {"accum-uneven", "ddp-uneven-gather", "compress-mixed"}) {
    const Checked c = CheckReal(name);
    for (const Finding& g : c.report.findings) {
      EXPECT_EQ(g.message.find("is the first from"), std::string::npos) << name;
      EXPECT_EQ(g.message.find("loop's call again"), std::string::npos) << name;
    }
  }
}

// Rank 1 killed outright (SIGKILL) before a gradient all_reduce: its trace is cut where it was
// last flushed (its last two calls, which rank 0 completed with it, are not in it), so no
// missing_call is claimed; rank 0's remote error names rank 1 as the one peer last seen alive
// before it, killed (trace not closed). A remote error with no such peer keeps the plain advice.
TEST(RealTraces, ARemoteErrorNamesThePeerThatStoppedFirst) {
  const Checked killed = CheckReal("side-killed");
  ASSERT_EQ(killed.report.findings.size(), 1u) << killed.text;
  const Finding& f = killed.report.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kNcclError);
  EXPECT_NE(f.message.find("Rank 1 is the one peer last seen alive before it, and its trace "
                           "was not closed: the process was killed"),
            std::string::npos)
      << f.message;
  ncclrr::testing::ExpectGolden(RealDir() / "side-killed.check.txt", killed.text);
  // A peer alive after the error is not named: elastic-restart's rank 1 raised, and closed its
  // trace after rank 0 saw the error; moe-splits' ranks all lived on.
  for (const char* name : {"elastic-restart", "moe-splits"}) {
    const Checked c = CheckReal(name);
    for (const Finding& g : c.report.findings)
      EXPECT_EQ(g.message.find("last seen alive before it"), std::string::npos) << g.message;
  }
}

// DDP's PowerSGD hook: every rank all-reduces whole buckets for 4 iterations, then low-rank
// factors (the calls change size mid-run on every rank alike): clean. With rank 1's start
// iteration set to 8 by its node, rank 0 issues factors from iteration 4 where rank 1 still
// issues whole buckets: where they part, each side's calls named by the hook line that issued
// them.
TEST(RealTraces, PowerSgdStartingAtDifferentIterationsPartsThere) {
  const Checked mixed = CheckReal("compress-powersgd-mixed");
  ASSERT_EQ(mixed.report.findings.size(), 1u) << mixed.text;
  EXPECT_EQ(mixed.report.findings[0].kind, FindingKind::kCountMismatch);
  EXPECT_EQ(mixed.report.findings[0].seq, 26u);
  // The hook's calls are named by the hook's lines (no frame of the job is above them).
  EXPECT_NE(mixed.report.findings[0].call_sites.find("powerSGD_hook.py:569 in powerSGD_hook"),
            std::string::npos)
      << mixed.text;
  EXPECT_NE(mixed.report.findings[0].call_sites.find("default_hooks.py:29 in _allreduce_fut"),
            std::string::npos)
      << mixed.text;
  ncclrr::testing::ExpectGolden(RealDir() / "compress-powersgd-mixed.check.txt", mixed.text);
}

// A monitor thread all-reducing on the training loop's own process group: its calls and the
// loop's reach the communicator in the order of their timing, differently on each rank. Where
// the ranks part, the two calls come from different threads while each thread's own calls agree
// across the ranks (threads-shared-pg, threads-fast: the parting found past two monitor calls
// that differ only by their fresh buffers), or the two threads of a rank were inside NCCL at
// once (threads-at-once: a lifecycle_error, and the missing call says so). DDP's buckets, issued
// by autograd's thread while the main thread waits in backward(), are no such case
// (trainer-dcp-rank0: rank 0's dcp.save under `if rank == 0:` met rank 1's bucket).
TEST(RealTraces, TwoThreadsSharingACommunicatorAreNamed) {
  for (const auto& [name, seq] : {std::pair{"threads-shared-pg", 16}, {"threads-fast", 22}}) {
    const Checked c = CheckReal(name);
    ASSERT_EQ(c.report.findings.size(), 1u) << c.text;
    const Finding& f = c.report.findings[0];
    EXPECT_EQ(f.kind, FindingKind::kCountMismatch) << name;
    EXPECT_EQ(f.seq, static_cast<uint64_t>(seq)) << c.text;
    EXPECT_EQ(f.message.rfind(
                  "The calls at seq " + std::to_string(seq) + " came from different threads", 0),
              0u)
        << f.message;
    EXPECT_NE(f.message.find("(torch_threads.py:52 in Monitor.run)"), std::string::npos)
        << f.message;
    EXPECT_NE(f.message.find("each thread issued the same calls on both ranks"), std::string::npos);
    ncclrr::testing::ExpectGolden(RealDir() / (std::string(name) + ".check.txt"), c.text);
  }
  const Checked at_once = CheckReal("threads-at-once");
  ASSERT_EQ(at_once.report.findings.size(), 2u) << at_once.text;
  const Finding* life = nullptr;
  const Finding* missing = nullptr;
  for (const Finding& f : at_once.report.findings) {
    if (f.kind == FindingKind::kLifecycleError) life = &f;
    if (f.kind == FindingKind::kMissingCall) missing = &f;
  }
  ASSERT_TRUE(life && missing) << at_once.text;
  EXPECT_EQ(life->pattern, "two threads at once");
  EXPECT_EQ(life->ranks, std::vector<int>{0});
  EXPECT_NE(life->message.find("at torch_threads.py:52 in Monitor.run, from another, was still "
                               "inside NCCL: two threads used the communicator at once"),
            std::string::npos)
      << life->message;
  EXPECT_NE(missing->message.find("On rank 0 two threads used this communicator at once"),
            std::string::npos)
      << missing->message;
  ncclrr::testing::ExpectGolden(RealDir() / "threads-at-once.check.txt", at_once.text);

  const Checked dcp = CheckReal("trainer-dcp-rank0");
  ASSERT_EQ(dcp.report.findings.size(), 1u) << dcp.text;
  EXPECT_EQ(dcp.report.findings[0].seq, 19u);
  EXPECT_NE(dcp.report.findings[0].message.find("is the first from torch_trainer.py:131"),
            std::string::npos)
      << dcp.text;
  ncclrr::testing::ExpectGolden(RealDir() / "trainer-dcp-rank0.check.txt", dcp.text);
  // No other real trace shows either (DDP, FSDP, hooks on autograd's thread, JAX, MoE).
  for (const char* name : {"trainer-dcp-rank0", "threads-clean", "ddp-unused-param",
                           "fsdp2-skip-nonfinite", "hook-order-sketch", "pptp-micro"}) {
    const Checked c = CheckReal(name);
    for (const Finding& f : c.report.findings) {
      EXPECT_EQ(f.message.find("different threads"), std::string::npos) << name;
      EXPECT_EQ(f.message.find("two threads"), std::string::npos) << name;
    }
  }
}

// FSDP2 where rank 1 alone skips a step with a non-finite loss (backward and loss all-reduce):
// its next forward's all-gathers (issued by the job's forward) meet rank 0's backward ones
// (issued inside FSDP, same sizes): wrong parameters gathered, then an all-gather met a
// reduce-scatter. Reported where the calls mispair, in three findings; the skipped step itself
// is not named (the job hung two calls later, too soon for the steps after it to show).
// FSDP2, rank 1 alone skips a step with a non-finite loss: it begins the next step's forward
// all-gathers where rank 0 goes on with the backward's, whose gradients are fresh buffers every
// step. One finding, where the ranks part (seq 72), naming both readings of a repeat of the
// rank's own loop; before, three findings at the mispairs (a same-shape "swap" among them).
TEST(RealTraces, AStepOneRankSkippedUnderFsdpIsNamedWhereTheRanksPart) {
  const Checked c = CheckReal("fsdp2-skip-nonfinite");
  const Finding f = OnlyFinding(c, FindingKind::kMissingCall, 72u);
  ExpectPhrases(f.call_sites, {"rank 1 seq 72 at torch_fsdp2.py:83 in TinyLM.forward"});
  ExpectPhrases(f.message,
                {"the same calls, in the same order, at seq 70-71", "skipped the rest of a step"});
  EXPECT_EQ(f.message.find("usual cause"), std::string::npos) << f.message;
  ncclrr::testing::ExpectGolden(RealDir() / "fsdp2-skip-nonfinite.check.txt", c.text);
}

// An extra call that is code of its own (an all_reduce under a rank-dependent branch) keeps the
// branch's advice: the repeat reading is only for calls the rank's loop issued before.
TEST(RealTraces, AnExtraCallOfABranchIsNotTakenForARepeatOfTheLoop) {
  const Checked c = CheckReal("side-branch");
  ASSERT_FALSE(c.report.findings.empty()) << c.text;
  EXPECT_EQ(c.report.findings[0].kind, FindingKind::kMissingCall);
  EXPECT_EQ(c.report.findings[0].message.find("own loop"), std::string::npos) << c.text;
  EXPECT_NE(c.report.findings[0].message.find("rank-dependent branch is the usual cause"),
            std::string::npos)
      << c.text;
}

// FSDP2 evaluated on rank 0 only (under `if rank == 0:`): its evaluation forward all-gathers
// meet rank 1's next training step. With one rank on each side, "rank 1 skipped them" and
// "rank 0 issued them once more" read the same trace: the finding names both, the evaluation's
// calls being the training forward's statement reached by another path.
TEST(RealTraces, AnEvaluationOnOneRankUnderFsdpIsReadBothWays) {
  const Checked c = CheckReal("fsdp2-eval-rank0");
  const Finding f = OnlyFinding(c, FindingKind::kMissingCall, 57u);
  ExpectPhrases(f.message,
                {"Or the other way round: rank 0 issued these calls once more where rank 1 did not",
                 "`if rank == 0:`"});
  ncclrr::testing::ExpectGolden(RealDir() / "fsdp2-eval-rank0.check.txt", c.text);
}

// Rank 1's metrics all_reduce forgets `group=` from step 3 on (the default, world group) while
// rank 0's goes to the metrics group, as both had for three steps: one finding that says the
// call went to another communicator, not that the groups were created in different orders, and
// no "swap" on the gradient group, whose calls rank 1 issued from the same line by another path.
TEST(RealTraces, ACallSentToTheWrongProcessGroupIsNamed) {
  const Checked c = CheckReal("two-groups-wrong-group");
  const Finding f = OnlyFinding(c, FindingKind::kCrossCommOrder, std::nullopt);
  ExpectPhrases(f.message, {"here it sent that call to another communicator",
                            "`group=` left out sends a call to the default group"});
  EXPECT_EQ(f.message.find("which communicator is which"), std::string::npos) << f.message;
  // What the gradient group's calls cannot tell: rank 1 reached them from another caller.
  const auto other_path = std::find_if(c.report.notes.begin(), c.report.notes.end(),
                                       [](auto& n) { return n.kind == NoteKind::kDataUnchecked; });
  ASSERT_NE(other_path, c.report.notes.end()) << c.text;
  ExpectPhrases(
      other_path->message,
      {"rank 1 issued 7 calls, the first at seq 21",
       "but reached them another way: from torch_two_groups.py:91 in worker, where rank 0 "
       "came from torch_two_groups.py:99 in worker"});
  ncclrr::testing::ExpectGolden(RealDir() / "two-groups-wrong-group.check.txt", c.text);
  // Groups created in different orders are still told as such.
  for (const char* name : {"setup-group-order", "setup4-group-order"}) {
    const Checked g = CheckReal(name);
    ASSERT_FALSE(g.report.findings.empty()) << name;
    EXPECT_NE(g.text.find("which communicator is which"), std::string::npos) << g.text;
    EXPECT_EQ(g.text.find("sent that call to another communicator"), std::string::npos) << g.text;
  }
}

// Rank 1 all-reduces its accuracy before its loss through one helper, from the first step, in
// a branch of its own: the helper's statement reached from lines rank 0 never ran, the buffers
// fresh scalars. Neither can tell the tensors apart, so no finding claims a swap (the same code
// shape, with the same tensors, is what two-groups-wrong-group's gradient calls are): a note
// says which calls could not be told apart, and that their data (scalars) could not either:
// recorded with --sketch the job gives the same note.
TEST(RealTraces, CallsReachedByAnotherPathWithFreshBuffersAreANote) {
  const Checked c = CheckReal("two-groups-metrics-order");
  EXPECT_TRUE(c.report.findings.empty()) << c.text;
  ASSERT_EQ(c.report.notes.size(), 1u) << c.text;
  EXPECT_EQ(c.report.notes[0].kind, NoteKind::kDataUnchecked);
  ExpectPhrases(c.report.notes[0].message,
                {"rank 1 issued 60 calls, the first at seq 0",
                 "from torch_two_groups.py:104 in worker, where rank 0 came from "
                 "torch_two_groups.py:107 in worker",
                 "too few elements to correlate"});
  ncclrr::testing::ExpectGolden(RealDir() / "two-groups-metrics-order.check.txt", c.text);
}

// FSDP2 with one batch fewer on rank 1: rank 1 leaves the loop a step early, rank 0 issues its
// last step's all-gathers (FSDP issues several ahead) and hangs in the first. The waiter's calls
// repeat its own steps: the finding reads it as a loop run a different number of times first.
TEST(RealTraces, ALastStepOnOneRankUnderFsdpIsReadAsUnevenInputs) {
  const Checked c = CheckReal("fsdp2-uneven");
  const Finding f = OnlyFinding(c, FindingKind::kMissingCall, 183u);
  ExpectPhrases(f.message, {"From seq 183 rank 0 issued the calls of its own steps again",
                            "went on with the loop where rank 1 had left it",
                            "DistributedSampler with drop_last=True"});
  ncclrr::testing::ExpectGolden(RealDir() / "fsdp2-uneven.check.txt", c.text);
}

// Four ranks, rank 0 alone keeping diagnostics on the GPU every few steps: its caching
// allocator hands out other addresses than the others' (buffers agree with rank 0's at 14% of
// the positions, with each other's at 87-89%). Rank 2 all-reduced two same-size gradients in
// swapped order at steps 6 and 13: the buffers tell it once the reference is a rank that
// allocates like most ranks (rank 1), not rank 0.
TEST(RealTraces, ASwapIsToldByBuffersWhenRankZeroAllocatesUnlikeTheOthers) {
  const Checked c = CheckReal("busy-swap-same");
  const Finding f = OnlyFinding(c, FindingKind::kSuspectedSwap, 99u);
  EXPECT_EQ(f.ranks, std::vector<int>{2}) << c.text;
  EXPECT_EQ(f.repeats, 1u) << c.text;
  const LogicalIdentity id = LogicalIdentity::Compute(*c.model);
  size_t world = c.model->comms().size();
  for (size_t ci = 0; ci < c.model->comms().size(); ++ci)
    if (c.model->comms()[ci].ranks.size() == 4) world = ci;
  ASSERT_LT(world, c.model->comms().size());
  EXPECT_EQ(id.comm(world).reference_rank, 1);
  EXPECT_LT(id.comm(world).buffer_agreement[0], 0.5f);
  EXPECT_GT(id.comm(world).buffer_agreement[2], 0.8f);
  ExpectPhrases(f.message, {"rank 2's buffers hold these positions in 89% of the steps"});
  ncclrr::testing::ExpectGolden(RealDir() / "busy-swap-same.check.txt", c.text);
}

// Rank 1 ran its own number of all_to_all rounds (2) where the others agreed on 4: its
// gradient all-reduce met rank 0's third round. A loop within the step ran more times on rank 0,
// and the message says so rather than reading it as the training loop left early.
TEST(RealTraces, ALoopWithinAStepRunMoreTimesOnOneRankIsNamed) {
  const Checked c = CheckReal("dyn-local-rounds");
  const Finding f = OnlyFinding(c, FindingKind::kOpMismatch, 108u);
  ExpectPhrases(f.message, {"It is the loop's call again: rank 0 issued AlltoAll(8 float32)",
                            "rank 1 2 times (seq 106-107)",
                            "agree on the count first (all-reduce it with MAX)"});
  EXPECT_EQ(f.message.find("left the loop"), std::string::npos) << f.message;
  ncclrr::testing::ExpectGolden(RealDir() / "dyn-local-rounds.check.txt", c.text);
}

// Every rank decided early stopping alone; rank 1 stopped after step 11 and its process ended
// in order, after a call rank 0 had gone on from to the one it waits in: both readings, an
// exception there or a loop left early.
TEST(RealTraces, ARankThatExitedBetweenStepsIsReadAsEndedThereOrLeftTheLoop) {
  const Checked c = CheckReal("dyn-local-stop");
  ASSERT_FALSE(c.report.findings.empty()) << c.text;
  const Finding& f = c.report.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kMissingCall) << c.text;
  EXPECT_EQ(f.seq, 137u) << c.text;
  ExpectPhrases(f.message,
                {"Rank 1 exited without issuing it, right after seq 136",
                 "rank 0 went on from such a call to the one it waits in before",
                 "Either it raised there", "or it left a loop there while rank 0 went on",
                 "a stopping condition each rank decides alone"});
  ncclrr::testing::ExpectGolden(RealDir() / "dyn-local-stop.check.txt", c.text);
}

// Rank 1 named itself the destination of torch.distributed.gather: both ranks posted the root's
// Recv from the other, neither a Send. One finding names the cycle of receivers and the root.
TEST(RealTraces, AGatherWithDifferentRootsIsACycleOfReceives) {
  const Checked c = CheckReal("gs-gather-dst");
  const Finding f = OnlyFinding(c, FindingKind::kP2pMismatch, std::nullopt);
  EXPECT_EQ(f.ranks, (std::vector<int>{0, 1})) << c.text;
  EXPECT_EQ(f.pattern, "recv cycle");
  ExpectPhrases(f.message,
                {"every rank of the cycle receives and none sends",
                 "torch.distributed's gather or scatter", "Give every rank the same root"});
  ncclrr::testing::ExpectGolden(RealDir() / "gs-gather-dst.check.txt", c.text);
}

// broadcast_object_list from lists of different lengths (rank 1's one entry longer): the sizes'
// Bcast pairs 4 int64 with 3, rank 1 waits in it, and rank 0 goes on. The count_mismatch comes
// first; the missing call and the unmatched Send after it say rank 1 stopped where that
// mismatch is.
TEST(RealTraces, ACallAfterAMismatchTheRankHangsInPointsBackToIt) {
  const Checked c = CheckReal("gs-object-len");
  ASSERT_GE(c.report.findings.size(), 2u) << c.text;
  EXPECT_EQ(c.report.findings[0].kind, FindingKind::kCountMismatch) << c.text;
  EXPECT_EQ(c.report.findings[0].seq, 0u) << c.text;
  EXPECT_EQ(c.report.findings[1].kind, FindingKind::kMissingCall) << c.text;
  ExpectPhrases(c.report.findings[1].message,
                {"Rank 1 stopped in seq 0, where another finding of this communicator says the "
                 "ranks' calls did not match"});
  // Rank 0's scatter after it: the Send whose Recv rank 1, hung in seq 0, never posted.
  ASSERT_EQ(c.report.findings.size(), 3u) << c.text;
  EXPECT_EQ(c.report.findings[2].kind, FindingKind::kP2pMismatch) << c.text;
  ExpectPhrases(c.report.findings[2].message,
                {"Rank 1 stopped in seq 0 of this communicator's collectives, which another "
                 "finding explains",
                 "that is why the Recv was never posted"});
  ncclrr::testing::ExpectGolden(RealDir() / "gs-object-len.check.txt", c.text);
}

// ZeroRedundancyOptimizer with a flat bucket per owner on rank 1's node and per-parameter
// broadcasts on rank 0's: the first broadcast of the first step pairs 32,768 floats with 16,384.
// Rank 1 issued fewer broadcasts, so its loss all-reduce met rank 0's next one; the call rank 0
// waits in after that points back to the mismatch rank 1 stopped in.
TEST(RealTraces, ShardedOptimizerBroadcastsOfOtherCountsAreNamedFirst) {
  const Checked c = CheckReal("zero-bucket-view-mixed");
  ASSERT_GE(c.report.findings.size(), 2u) << c.text;
  const Finding& first = c.report.findings[0];
  EXPECT_EQ(first.kind, FindingKind::kCountMismatch) << c.text;
  EXPECT_EQ(first.seq, 4u) << c.text;
  ExpectPhrases(first.message, {"rank 1 sends 0 and receives 32,768 elements where rank 0 sends "
                                "16,384 and receives 16,384"});
  const Finding& last = c.report.findings.back();
  EXPECT_EQ(last.kind, FindingKind::kMissingCall) << c.text;
  ExpectPhrases(last.message, {"Rank 1 stopped in seq 6, where another finding of this "
                               "communicator says the ranks' calls did not match"});
  ncclrr::testing::ExpectGolden(RealDir() / "zero-bucket-view-mixed.check.txt", c.text);
}

// Sequence parallelism with the last rank padding to 16 where the others pad to 8: the first
// step's all-gathers and reduce-scatters differ in count, and the job hung in them. With two
// replicas (4 ranks), the other pair waits in its data-parallel all-reduces for ranks blocked in
// the mismatched pair: those missing calls point to where the hang starts.
TEST(RealTraces, PaddingThatDiffersPerRankIsACountMismatchAndTheReplicasWaitForIt) {
  const Checked two = CheckReal("sp-pad-mixed");
  ASSERT_EQ(two.report.findings.size(), 2u) << two.text;
  for (const Finding& f : two.report.findings) {
    EXPECT_EQ(f.kind, FindingKind::kCountMismatch) << two.text;
    EXPECT_EQ(f.repeats, 1u) << two.text;
    ExpectPhrases(f.message, {"pad every rank's tensor to one length"});
  }
  ncclrr::testing::ExpectGolden(RealDir() / "sp-pad-mixed.check.txt", two.text);

  const Checked four = CheckReal("sp4-pad-mixed");
  ASSERT_EQ(four.report.findings.size(), 3u) << four.text;
  EXPECT_EQ(four.report.findings[0].kind, FindingKind::kCountMismatch) << four.text;
  const std::string pair = Hex64(four.report.findings[0].comm);
  for (size_t i = 1; i < 3; ++i) {
    const Finding& f = four.report.findings[i];
    EXPECT_EQ(f.kind, FindingKind::kMissingCall) << four.text;
    ExpectPhrases(f.message, {"Rank 1 never got here because it was blocked on another "
                              "communicator: this hang follows from the one at comm " +
                              pair + " seq 0"});
    EXPECT_EQ(f.message.find("cross_comm_order"), std::string::npos) << f.message;
  }
  ncclrr::testing::ExpectGolden(RealDir() / "sp4-pad-mixed.check.txt", four.text);
}

// FSDP2 with the gradient norm clipped under `if rank == 0:`: rank 0's all-reduce of the norm
// met rank 1's next forward all-gather, and rank 0 waits in it. The call rank 1 waits in next
// points back to that mismatch rather than reading rank 1's next step as a loop run longer.
TEST(RealTraces, AClipOnOneRankIsAMismatchTheOtherRankWaitsBehind) {
  const Checked c = CheckReal("fsdp2-norm-rank0");
  ASSERT_EQ(c.report.findings.size(), 2u) << c.text;
  EXPECT_EQ(c.report.findings[0].kind, FindingKind::kOpMismatch) << c.text;
  EXPECT_EQ(c.report.findings[0].seq, 9u) << c.text;
  const Finding& f = c.report.findings[1];
  EXPECT_EQ(f.kind, FindingKind::kMissingCall) << c.text;
  ExpectPhrases(f.message, {"Rank 0 stopped in seq 9, where another finding of this "
                            "communicator says the ranks' calls did not match"});
  EXPECT_EQ(f.message.find("went on with the loop"), std::string::npos) << f.message;
  ncclrr::testing::ExpectGolden(RealDir() / "fsdp2-norm-rank0.check.txt", c.text);
}

// Gradient accumulation set per node: rank 1 accumulated 4 micro-batches where the others took 2,
// so it ran 5 steps where they ran 10. Its all_gather_object after the loop met their next
// step's buffer broadcast; it raised (garbage sizes: out of memory) and exited. The mismatch
// gives both readings of rank 1's call from a new statement; the missing call accuses rank 1
// alone (ranks 2 and 3 issued seq 37 and wait in it, their hosts stopped sooner than rank 0's).
TEST(RealTraces, ARankThatRanFewerStepsIsReadAsLeavingTheLoopAndAloneMissesTheCall) {
  const Checked c = CheckReal("accum-mixed");
  ASSERT_EQ(c.report.findings.size(), 2u) << c.text;
  const Finding& mismatch = c.report.findings[0];
  EXPECT_EQ(mismatch.kind, FindingKind::kOpMismatch) << c.text;
  EXPECT_EQ(mismatch.seq, 36u) << c.text;
  ExpectPhrases(mismatch.message,
                {"Rank 1's call at seq 36 is the first from torch_ddp_accum.py:131 in main",
                 "either rank 1 left the loop there", "or took a branch ranks 0, 2 and 3 did not"});
  const Finding& missing = c.report.findings[1];
  EXPECT_EQ(missing.kind, FindingKind::kMissingCall) << c.text;
  EXPECT_EQ(missing.seq, 37u) << c.text;
  EXPECT_EQ(missing.ranks, std::vector<int>{1}) << c.text;
  ExpectPhrases(missing.message, {"at seq 37 (rank 0 issued 2 more calls after it), but rank 1 "
                                  "never did",
                                  "Rank 1 exited without issuing it"});
  ncclrr::testing::ExpectGolden(RealDir() / "accum-mixed.check.txt", c.text);
}

// PyTorch's pipelining library with the last stage splitting batches into half as many
// micro-batches: it raised (its loss saw 16 rows against 32 targets) and exited, and the first
// stage waits in Sends and Recvs it never partnered. Both unmatched calls say the peer's process
// ended on its own, rather than asking for a matching call.
TEST(RealTraces, APipelineStageThatRaisedIsNamedAsEndedNotAsMissingACall) {
  const Checked c = CheckReal("pipe-micro-mixed");
  size_t p2p = 0;
  for (const Finding& f : c.report.findings) {
    if (f.kind != FindingKind::kP2pMismatch) continue;
    ++p2p;
    ExpectPhrases(f.message, {"Rank 1's process ended (its trace was closed in order)",
                              "while rank 0's was still waiting", "an uncaught exception"});
    EXPECT_EQ(f.message.find("Post every Send with a matching Recv"), std::string::npos)
        << f.message;
  }
  EXPECT_EQ(p2p, 2u) << c.text;
  ncclrr::testing::ExpectGolden(RealDir() / "pipe-micro-mixed.check.txt", c.text);
}

INSTANTIATE_TEST_SUITE_P(
    Real, RealTraceTest,
    ::testing::Values(
        // Clean training: no finding.
        RealTrace{"grad-clean", std::nullopt}, RealTrace{"ddp-clean", std::nullopt},
        RealTrace{"fsdp2-clean", std::nullopt}, RealTrace{"jax-clean", std::nullopt},
        // Autograd gradients (new tensors each step) of one shape swapped on rank 1 at steps
        // 5, 12 and 20: one finding with its repeats.
        RealTrace{"grad-swap-same", FindingKind::kSuspectedSwap, 56, 2},
        // Two gradients of different sizes swapped once: the job hung and was killed.
        RealTrace{"grad-swap-diff", FindingKind::kOrderSwap, 56},
        // Two process groups used in opposite orders, from the first collective (each rank
        // blocked inside it: in the trace as in-flight records) and from step 3.
        RealTrace{"two-groups-first", FindingKind::kCrossCommOrder, 0},
        RealTrace{"two-groups", FindingKind::kCrossCommOrder, 21},
        // A JAX process takes a rank-dependent branch with an extra psum.
        RealTrace{"jax-branch", FindingKind::kMissingCall, 8},
        // Four PyTorch processes sharing one GPU; rank 1 swaps two same-size allreduces on odd
        // steps: one finding, repeated twice.
        RealTrace{"torch4-swap", FindingKind::kSuspectedSwap, 2, 2},
        // Four ranks: 2 pipeline stages (activations sent with batch_isend_irecv) x 2
        // tensor-parallel groups split off the world; clean, then the second stage's rank 1
        // all-reducing two same-size LayerNorm gradients in swapped order at steps 4 and 9.
        RealTrace{"pptp-clean", std::nullopt},
        RealTrace{"pptp-swap-same", FindingKind::kSuspectedSwap, 96, 1},
        // DDP with gradient accumulation (no_sync), BatchNorm buffer broadcasts and object
        // collectives (accum-uneven, its buggy run, has a test of its own).
        RealTrace{"accum-clean", std::nullopt},
        // One flat gradient bucket per step and a side stream for the log line's norm, under
        // `record --sketch`: clean; then rank 1 all-reducing a debug scalar in a branch only it
        // takes (an extra call, then the hang). side-race has a test of its own.
        RealTrace{"side-clean", std::nullopt},
        // Clean jobs under `record --sketch`: the data checks, the swaps told by the data
        // among them, find nothing.
        RealTrace{"hook-clean-sketch", std::nullopt}, RealTrace{"ddp-clean-sketch", std::nullopt},
        RealTrace{"accum-clean-sketch", std::nullopt},
        // DDP around torch.compile'd blocks: one gradient bucket per step, whose data correlate
        // more with the peer's next step than with its own (the data detector once took two
        // steps' buckets for a swap); hybrid sharding over a 2-D mesh (5 communicators).
        RealTrace{"compile-clean-sketch", std::nullopt}, RealTrace{"compile-clean", std::nullopt},
        RealTrace{"hsdp-clean", std::nullopt},
        RealTrace{"side-branch", FindingKind::kMissingCall, 6},
        // C++ data-parallel SGD with NCCL linked statically (recorded through NCCL's profiler
        // plugin, which reports no reduction op): gradients in fresh cudaMallocAsync buffers,
        // rank 1 swaps two same-size gradients at steps 5, 12 and 20 ...
        RealTrace{"cpp-static-swap-same", FindingKind::kSuspectedSwap, 56, 2},
        // ... or two of different sizes once: both ranks hung inside the first of them, so each
        // rank's trace ends with one call in flight; the loop's earlier steps show the order.
        RealTrace{"cpp-static-swap-diff", FindingKind::kOrderSwap, 56},
        RealTrace{"cpp-dynamic-swap-diff", FindingKind::kOrderSwap, 56},
        // nccl-tests' sendrecv_perf under `record --sketch`: its in-place runs send from and
        // receive into one buffer in one group. No buffer_race (a note says why they were not
        // race-checked).
        RealTrace{"nccltests-sendrecv-sketch", std::nullopt},
        // Recorded with Python call sites (on by default): the same swap, named at the job's
        // line; DDP (its buckets, issued by autograd threads, carry no site) and JAX clean.
        RealTrace{"grad-swap-same-pysites", FindingKind::kSuspectedSwap, 56, 2},
        RealTrace{"ddp-clean-pysites", std::nullopt}, RealTrace{"jax-clean-pysites", std::nullopt},
        // Expert parallelism with all_to_all_single of uneven splits (4 ranks), DDP with and
        // without its bf16 compression hook, JAX psums one gradient at a time in sorted order:
        // clean.
        RealTrace{"moe-clean", std::nullopt}, RealTrace{"compress-clean", std::nullopt},
        RealTrace{"compress-both", std::nullopt}, RealTrace{"jax-set-clean", std::nullopt},
        // The same JAX job walking its gradients in each process's set order, recorded without
        // --sketch: the swapped calls have the same shapes, call site and buffers (allocated in
        // issue order) on both processes, so nothing in the trace tells (jax-set-order-sketch
        // does, from the data).
        RealTrace{"jax-set-order", std::nullopt},
        // Rank 1 alone compresses DDP's buckets to bf16 (its node's environment): every bucket
        // of the first backward is one finding with repeats, and says what differs.
        RealTrace{"compress-mixed", FindingKind::kDtypeMismatch, 3, 5},
        // A step captured in a CUDA graph, replayed twice by rank 1 at one step: where the
        // ranks' launches part, not the hang it led to three launches later.
        RealTrace{"graph-extra", FindingKind::kGraphCaptureMismatch, 11},
        // The same job deleting its graph before it leaves the process group, and tensor
        // parallelism (DTensor) with FSDP2 over a 2 x 2 mesh: clean.
        RealTrace{"graph-clean", std::nullopt}, RealTrace{"tp-clean", std::nullopt},
        // DDP with the predictions all-gathered at validation (the clean run of ddp-skip-step
        // and ddp-uneven-gather).
        RealTrace{"ddp-clean-gather", std::nullopt},
        // Rank 1 raises (out of memory) before a gradient all_reduce; rank 0 waits in it until
        // the launcher kills it. Rank 1's trace was closed in order, rank 0's was not: the
        // finding says rank 1 exited without issuing the call.
        RealTrace{"side-crash", FindingKind::kMissingCall, 6},
        // DDP: rank 1's validation shard is smaller and the predictions are all-gathered with
        // all_gather_into_tensor; the advice names uneven per-rank lengths.
        RealTrace{"ddp-uneven-gather", FindingKind::kCountMismatch, 6},
        // Hand-written data parallelism with its own process groups: clean; the initial weights
        // broadcast with src=rank (every parameter's broadcast one finding with repeats, saying
        // each rank named itself the root); the groups made by walking a set of names, whose
        // order differs per process: both ranks issue their first gradient all-reduce, each on
        // the group the other made for metrics, and wait.
        RealTrace{"setup-clean", std::nullopt},
        RealTrace{"setup-bcast-src", FindingKind::kRootMismatch, 0, 5},
        RealTrace{"setup-group-order", FindingKind::kCrossCommOrder, 0},
        // The same with 4 processes: every rank its own root (no majority); the last rank
        // walking the set the other way.
        RealTrace{"setup4-bcast-src", FindingKind::kRootMismatch, 0, 5},
        RealTrace{"setup4-group-order", FindingKind::kCrossCommOrder, 0},
        // DDP with an auxiliary head rank 1 leaves out of one step's forward: DDP on rank 1
        // waits for the head's gradient and launches no bucket; its loss all-reduce meets rank
        // 0's bucket. The skipped call has no Python site (autograd's hooks issued it).
        RealTrace{"ddp-unused-param", FindingKind::kMissingCall, 23},
        // Ring attention with batch_isend_irecv, DDP under torchrun's fault tolerance (no
        // failure), JAX's jit over a global mesh with a shard_map body: clean.
        RealTrace{"ring-clean", std::nullopt}, RealTrace{"elastic-clean", std::nullopt},
        RealTrace{"jaxsm-clean", std::nullopt}, RealTrace{"trainer-clean", std::nullopt},
        RealTrace{"compress-powersgd", std::nullopt},
        // ddp-unused-param's fix: find_unused_parameters=True, rank 1 leaving the head out of
        // one step's forward (DDP all-reduces which parameters were used, every step): clean.
        RealTrace{"ddp-find-unused", std::nullopt},
        // A throughput monitor thread all-reducing on its own process group beside the loop,
        // and a DDP trainer checkpointing with torch.distributed.checkpoint on every rank: clean.
        RealTrace{"threads-clean", std::nullopt}, RealTrace{"trainer-dcp", std::nullopt},
        // Training batches from a DataLoader whose two workers are forked from each rank after
        // its communicator exists (their processes record nothing), and rank 0 alone running a
        // validation batch through the DDP model in eval mode (no buffer broadcast): clean.
        RealTrace{"trainer-loader", std::nullopt}, RealTrace{"accum-eval-rank0", std::nullopt},
        // Four ranks, rank 0 alone keeping GPU diagnostics (its buffers unlike the others'),
        // async all_reduces waited in reverse, tokens all-gathered at each step's own length, a
        // broadcast from a rotating root, pair groups, all_gather_object: clean, also under
        // --sketch (where one bias's calls at consecutive steps once read as a swap: the steps'
        // varying shapes gave them different places). busy-swap-same has a test of its own.
        RealTrace{"busy-clean", std::nullopt}, RealTrace{"busy-clean-sketch", std::nullopt},
        // The same with two ranks, clean; then rank 1 swapping two same-size gradients at two
        // steps. Rank 0's buffers are unlike rank 1's (19%) and no third rank allocates like
        // rank 1, the calls share one statement and no data were sketched: nothing in the trace
        // tells them apart, so no finding (a known limit: record --sketch shows a reordering
        // only when it comes at most steps).
        RealTrace{"busy2-clean", std::nullopt}, RealTrace{"busy2-swap-same", std::nullopt},
        // Steps of varying length, their counts agreed across the ranks (micro-batches and
        // exchange rounds all-reduced with MAX, early stopping by an all-reduced flag), with 2
        // and 4 ranks and under --sketch; rooted collectives (scatter and gather, which PyTorch
        // issues as grouped Sends and Recvs, and reduce) with 2 and 4 ranks: clean.
        RealTrace{"dyn-clean", std::nullopt}, RealTrace{"dyn4-clean", std::nullopt},
        RealTrace{"dyn-clean-sketch", std::nullopt}, RealTrace{"gs-clean", std::nullopt},
        RealTrace{"gs4-clean", std::nullopt},
        // The pipeline job run 60 steps: the second stage's first loss broadcast used a buffer
        // that held another tensor's place in every later step (the allocator settling), which
        // buffer votes over 60 steps once took for a one-position swap.
        RealTrace{"pptp-clean-long", std::nullopt},
        // FSDP2 with reshard_after_forward off on rank 1's node: rank 1 skips the backward's
        // all-gathers (the calls carry FSDP's own call sites).
        RealTrace{"fsdp2-reshard", FindingKind::kMissingCall, 3},
        // grad-swap-same on nonblocking communicators (TORCH_NCCL_USE_COMM_NONBLOCKING=1): every
        // call may return ncclInProgress, and the asynchronous error flips as work completes
        // (571 AsyncErrorChange records per rank, recorded before those routine flips were
        // left out): the same finding.
        RealTrace{"grad-swap-same-nonblocking", FindingKind::kSuspectedSwap, 56, 2},
        // DDP with ZeroRedundancyOptimizer (each parameter broadcast from its owner after the
        // step: a rotating root), with 2 and 4 ranks and under --sketch; hand-written sequence
        // parallelism (all-gathers and reduce-scatters of a new length every step), alone and as
        // two data-parallel replicas: clean.
        RealTrace{"zero-clean", std::nullopt}, RealTrace{"zero4-clean", std::nullopt},
        RealTrace{"zero-clean-sketch", std::nullopt}, RealTrace{"sp-clean", std::nullopt},
        RealTrace{"sp4-clean", std::nullopt},
        // FSDP2 with activation checkpointing (its hooks run again around the recomputed
        // forward) and the gradient norm clipped every step; JAX passing blocks round the ring
        // with ppermute (XLA's grouped Sends and Recvs) and all_to_all: clean.
        RealTrace{"fsdp2-ckpt-clip", std::nullopt}, RealTrace{"jax-ring", std::nullopt},
        // PyTorch's pipelining library, Schedule1F1B over 2 and 4 stages (batched Sends and
        // Recvs, shapes sent at the first step): clean.
        RealTrace{"pipe-clean", std::nullopt}, RealTrace{"pipe4-clean", std::nullopt},
        // The swap bugs run 60-100 steps, swapped at 4-5 steps across the run: every swap is
        // found, one finding with its repeats.
        RealTrace{"grad-swap-same-long", FindingKind::kSuspectedSwap, 56, 4},
        RealTrace{"pptp-swap-same-long", FindingKind::kSuspectedSwap, 96, 3},
        RealTrace{"busy-swap-same-long", FindingKind::kSuspectedSwap, 99, 3}),
    [](const auto& param_info) {
      std::string n = param_info.param.name;
      for (char& c : n)
        if (c == '-') c = '_';
      return n;
    });

}  // namespace
}  // namespace ncclrr::analysis
