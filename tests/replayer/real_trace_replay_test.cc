// Replay of a trace recorded from a real PyTorch job on real NCCL (tests/data/real/
// grad-swap-same: autograd gradients, new tensors every step, rank 1 swapped two same-shape
// gradients at steps 5, 12 and 20; the job counted 12 wrong results): the recorded order is wrong
// at exactly the swapped calls, and the canonical order, built from the same logical identity
// that `check` uses, is right.
#include <gtest/gtest.h>

#include <string>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "replay_scripts.h"

namespace ncclrr::testing {
namespace {

TEST(RealTraceReplay, SameShapeSwapOfFreshGradientsIsWrongOnlyWhereSwapped) {
  const char* src = std::getenv("NCCLRR_SOURCE_DIR");
  const std::filesystem::path dir =
      std::filesystem::path(src ? src : ".") / "tests/data/real/grad-swap-same";
  auto model = analysis::TraceModel::Load(dir.string());
  ASSERT_TRUE(model.ok()) << model.status().message();
  const replay::ReplayReport r = MustReplay(*model, TestOptions("recorded,canonical", 20.0));
  ASSERT_EQ(r.results.size(), 2u);
  const replay::OrderResult& recorded = r.results[0];
  const replay::OrderResult& canonical = r.results[1];
  EXPECT_EQ(recorded.outcome, replay::Outcome::kWrong);
  std::set<std::pair<uint64_t, int>> wrong;  // (seq, rank)
  for (const replay::WrongCall& w : recorded.wrong) wrong.insert({w.seq, w.rank});
  std::set<std::pair<uint64_t, int>> swapped;
  for (uint64_t seq : {56, 58, 121, 123, 194, 196})
    for (int rank : {0, 1}) swapped.insert({seq, rank});
  EXPECT_EQ(wrong, swapped);  // the job's own count: 12 wrong results
  EXPECT_EQ(recorded.wrong_calls, 12u);
  // The steps are the job's loop iterations (steps are not marked in the trace, and buffers are
  // new every step): 30 steps, swapped at 5, 12 and 20.
  EXPECT_EQ(recorded.steps, 30u);
  EXPECT_EQ(recorded.wrong_step_list, (std::vector<uint64_t>{5, 12, 20}));
  EXPECT_EQ(recorded.explanation.front(),
            "seq 56 and 58, 121 and 123, 194 and 196 swapped on rank 1");
  EXPECT_EQ(canonical.outcome, replay::Outcome::kRight);
  EXPECT_EQ(canonical.wrong_calls, 0u);
}

std::unique_ptr<analysis::TraceModel> LoadReal(const std::string& name) {
  const char* src = std::getenv("NCCLRR_SOURCE_DIR");
  auto model = analysis::TraceModel::Load(
      (std::filesystem::path(src ? src : ".") / "tests/data/real" / name).string());
  EXPECT_TRUE(model.ok()) << name << ": " << model.status().message();
  return model.ok() ? std::make_unique<analysis::TraceModel>(std::move(*model)) : nullptr;
}

// Clean real jobs replay right in every order. Their fresh buffers reuse addresses (a DDP loss
// tensor, a JAX output, a pipeline's loss broadcast), so a buffer key's occurrences can land on
// calls of different steps; the identity then names another tensor for a rank's call than for
// the others' at that position. `check` weighs that and reports nothing, and the replay follows
// it (a call means what NCCL paired it with unless the check explained a difference there):
// before, DDP replayed 46 of 144 calls "wrong" (canonical: 80), JAX 4 of 30 steps, and the
// pipeline's canonical order hung. tp-clean (DTensor tensor parallel with FSDP2) sends its
// initial shards with Send/Recv on the tensor-parallel group: its canonical order hung (each rank
// kept its Sends/Recvs at its own times while the collectives took shared ones, so a rank's Send
// went after a collective its peer's Recv came before) until a Send and its Recv shared one key.
TEST(RealTraceReplay, CleanJobsReplayRightInEveryOrder) {
  for (const char* name :
       {"ddp-clean", "ddp-clean-pysites", "jax-clean", "fsdp2-clean", "pptp-clean", "accum-clean",
        "side-clean", "hsdp-clean", "compile-clean", "moe-clean", "compress-clean", "jax-set-clean",
        "tp-clean", "graph-clean"}) {
    auto model = LoadReal(name);
    ASSERT_NE(model, nullptr);
    const replay::ReplayReport r = MustReplay(*model, TestOptions("recorded,canonical", 20.0));
    ASSERT_EQ(r.results.size(), 2u) << name;
    for (const replay::OrderResult& o : r.results) {
      EXPECT_EQ(o.outcome, replay::Outcome::kRight) << name << "\n" << replay::FormatText(r);
      EXPECT_EQ(o.wrong_calls, 0u) << name;
    }
  }
}

// tests/data/real/pptp-swap-same: pipeline and tensor-parallel groups; the second stage's rank 1
// all-reduces two LayerNorm gradients in another order at two steps. Only those calls come out
// wrong (the world communicator's loss broadcasts, whose buffers recur, stay right), and the
// canonical order, which interleaves the stages' sends and receives with two communicators'
// collectives, completes right.
TEST(RealTraceReplay, PipelineJobIsWrongOnlyAtTheSwappedGradients) {
  auto model = LoadReal("pptp-swap-same");
  ASSERT_NE(model, nullptr);
  const replay::ReplayReport r = MustReplay(*model, TestOptions("recorded,canonical", 20.0));
  ASSERT_EQ(r.results.size(), 2u);
  std::set<std::pair<uint64_t, int>> wrong;  // (seq, rank)
  for (const replay::WrongCall& w : r.results[0].wrong) wrong.insert({w.seq, w.rank});
  std::set<std::pair<uint64_t, int>> swapped;
  for (uint64_t seq : {96, 98, 196, 198})
    for (int rank : {0, 1}) swapped.insert({seq, rank});
  EXPECT_EQ(r.results[0].outcome, replay::Outcome::kWrong) << replay::FormatText(r);
  EXPECT_EQ(wrong, swapped) << replay::FormatText(r);
  EXPECT_EQ(r.results[1].outcome, replay::Outcome::kRight) << replay::FormatText(r);
}

// tests/data/real/hook-order-sketch: gradients all-reduced from per-parameter hooks, rank 1
// producing two same-shape pairs in the other order at every step. Only the sketched data tell
// (`check`: two suspected_swap from the data); the replay takes those swaps, so the recorded
// order is wrong at the swapped calls of the steps the data told and the canonical order right.
TEST(RealTraceReplay, SwapToldByTheDataReplaysWrongAndCanonicalRight) {
  auto model = LoadReal("hook-order-sketch");
  ASSERT_NE(model, nullptr);
  const replay::ReplayReport r = MustReplay(*model, TestOptions("recorded,canonical", 20.0));
  ASSERT_EQ(r.results.size(), 2u);
  EXPECT_EQ(r.results[0].outcome, replay::Outcome::kWrong) << replay::FormatText(r);
  EXPECT_EQ(r.results[0].wrong_step_list.size(), 20u) << replay::FormatText(r);
  for (const replay::WrongCall& w : r.results[0].wrong)
    EXPECT_TRUE(w.call.find("AllReduce(128 float32") != std::string::npos ||
                w.call.find("AllReduce(16384 float32") != std::string::npos)
        << w.call;  // only the swapped biases and weights
  EXPECT_EQ(r.results[1].outcome, replay::Outcome::kRight) << replay::FormatText(r);
}

// A JAX job psums its gradients one at a time in each process's set order (its hash seed): two
// same-shape weights swapped and four same-shape biases rotated, at every step (`record
// --sketch`; only the data tell). The recorded order replays wrong at every step, and only at
// those calls; the canonical order is right.
TEST(RealTraceReplay, ReorderingToldByTheDataReplaysWrongAndCanonicalRight) {
  auto model = LoadReal("jax-set-order-sketch");
  ASSERT_NE(model, nullptr);
  const replay::ReplayReport r = MustReplay(*model, TestOptions("recorded,canonical", 20.0));
  ASSERT_EQ(r.results.size(), 2u);
  EXPECT_EQ(r.results[0].outcome, replay::Outcome::kWrong) << replay::FormatText(r);
  EXPECT_EQ(r.results[0].wrong_step_list.size(), 20u) << replay::FormatText(r);
  for (const replay::WrongCall& w : r.results[0].wrong)
    EXPECT_TRUE(w.call.find("AllReduce(128 float32") != std::string::npos ||
                w.call.find("AllReduce(16384 float32") != std::string::npos)
        << w.call;
  EXPECT_EQ(r.results[1].outcome, replay::Outcome::kRight) << replay::FormatText(r);
}

// An expert-parallel job where rank 2 took its receive splits from its send splits: the
// all_to_all's group of Sends and Recvs hangs. The stuck calls listed are the three pairs whose
// sizes differ (every peer's Send to rank 2 and rank 2's Recv), not every call of the group: the
// others matched their peers and only waited for the rest of the group.
TEST(RealTraceReplay, StuckAllToAllListsOnlyTheMismatchedPairs) {
  auto model = LoadReal("moe-splits");
  ASSERT_NE(model, nullptr);
  const replay::ReplayReport r = MustReplay(*model, TestOptions("recorded", 5.0));
  ASSERT_EQ(r.results.size(), 1u);
  EXPECT_EQ(r.results[0].outcome, replay::Outcome::kHang) << replay::FormatText(r);
  ASSERT_EQ(r.results[0].stuck.size(), 6u) << replay::FormatText(r);
  for (const replay::StuckCall& s : r.results[0].stuck) {
    EXPECT_NE(s.why.find("sizes or datatypes differ"), std::string::npos) << s.why;
    const bool involves_rank_2 = s.rank == 2 || s.call.find(" 2)") != std::string::npos;
    EXPECT_TRUE(involves_rank_2) << s.call;
  }
}

// Ring attention with every rank sending before it receives (4 ranks, killed while each was
// blocked in its Send): no file was closed, but every process was seen alive long after its
// peer's Send, so the missing Recvs were never issued. The replay runs the four Sends and
// hangs with them, each stuck with no partner, rather than refusing a trace that may lack calls.
TEST(RealTraceReplay, SendsOfARingThatNeverReceivedHangAgain) {
  auto model = LoadReal("ring4-send-first");
  ASSERT_NE(model, nullptr);
  const replay::ReplayReport r = MustReplay(*model, TestOptions("recorded", 3.0));
  ASSERT_EQ(r.results.size(), 1u);
  EXPECT_EQ(r.results[0].outcome, replay::Outcome::kHang) << replay::FormatText(r);
  EXPECT_EQ(r.results[0].stuck.size(), 4u) << replay::FormatText(r);
  // A rank killed outright: its file ends at its last flush, so its peer's calls after it are
  // still left out (no hang is made up).
  auto killed = LoadReal("side-killed");
  ASSERT_NE(killed, nullptr);
  const replay::ReplayReport k = MustReplay(*killed, TestOptions("recorded", 3.0));
  ASSERT_EQ(k.results.size(), 1u);
  EXPECT_EQ(k.results[0].outcome, replay::Outcome::kRight) << replay::FormatText(k);
}

// tests/data/real/torch4-swap: four PyTorch processes on one GPU (real NCCL), rank 1 swapping two
// same-size allreduces on odd steps. The replay as one process and as one process per rank (as
// the nccl backend runs it on one GPU) gives the same report: 3 of 6 steps wrong, canonical right.
TEST(RealTraceReplay, FourProcessJobReplaysAlikeInOneProcessAndAsProcesses) {
  const char* src = std::getenv("NCCLRR_SOURCE_DIR");
  const std::string dir =
      (std::filesystem::path(src ? src : ".") / "tests/data/real/torch4-swap").string();
  const std::string args = "replay " + dir + " --order recorded,canonical";
  const CommandResult one = RunNcclrr(args);
  const CommandResult many = RunNcclrr(args + " --processes");
  EXPECT_EQ(one.code, 1);
  EXPECT_EQ(many.code, 1);
  const std::string summary =
      "summary: recorded order: 3 of 6 steps wrong: 1, 3, 5 (seq 2\u20133, 6\u20137, 10\u201311 "
      "swapped on "
      "rank 1); canonical order: 0 wrong\n";
  EXPECT_NE(one.out.find(summary), std::string::npos) << one.out;
  EXPECT_NE(many.out.find(summary), std::string::npos) << many.out;
  EXPECT_NE(many.out.find("mode: one process per rank: 4 process(es)"), std::string::npos);
}

// tests/data/real/cpp-static-swap-same: a C++ job with NCCL linked statically, recorded through
// NCCL's profiler plugin (no reduction op in the trace), gradients in fresh cudaMallocAsync
// buffers, rank 1 swapping two same-size gradients at steps 5, 12 and 20: the replay says which
// steps, replays the unknown op as sum and says so, and the canonical order is right.
TEST(RealTraceReplay, StaticNcclJobThroughTheProfilerPlugin) {
  const char* src = std::getenv("NCCLRR_SOURCE_DIR");
  const std::string dir =
      (std::filesystem::path(src ? src : ".") / "tests/data/real/cpp-static-swap-same").string();
  const CommandResult r = RunNcclrr("replay " + dir + " --order recorded,canonical");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("note: 540 reducing call(s) have no recorded reduction op"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("summary: recorded order: 3 of 30 steps wrong: 5, 12, 20 (seq 56 and 58, "
                       "121 and 123, 194 and 196 swapped on rank 1); canonical order: 0 wrong"),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace ncclrr::testing
