// Replay of a trace recorded from a real PyTorch job on real NCCL (tests/data/real/
// grad-swap-same: autograd gradients, new tensors every step, rank 1 swapped two same-shape
// gradients at steps 5, 12 and 20; the job counted 12 wrong results): the recorded order is wrong
// at exactly the swapped calls, and the canonical order, built from the same logical identity
// that `check` uses, is right.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <utility>

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
  EXPECT_EQ(canonical.outcome, replay::Outcome::kRight);
  EXPECT_EQ(canonical.wrong_calls, 0u);
}

}  // namespace
}  // namespace ncclrr::testing
