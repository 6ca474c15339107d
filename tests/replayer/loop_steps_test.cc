// The loop finder behind the replay's step numbers (replayer/src/loop_steps.h): what a user calls
// a step must come out of sequences shaped like real jobs' (setup calls first, a call only every
// few steps, a few steps that differ) and nothing must come out of sequences with no loop.
#include "loop_steps.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace ncclrr::replay {
namespace {

// A job: `setup` broadcasts, then `steps` steps of gradient all-reduces `grads`, a loss
// all-reduce, and every `every`-th step (from step 0) an accuracy gather.
std::vector<uint64_t> Job(int setup, int steps, std::vector<uint64_t> grads, int every) {
  std::vector<uint64_t> keys(static_cast<size_t>(setup), 1000);
  for (int s = 0; s < steps; ++s) {
    keys.insert(keys.end(), grads.begin(), grads.end());
    keys.push_back(2000);
    if (every > 0 && s % every == 0) keys.push_back(3000);
  }
  return keys;
}

TEST(LoopSteps, StepsOfALoopWithACallEveryFifthStep) {
  const std::vector<uint64_t> keys = Job(8, 30, {1, 2, 3, 3, 4, 5, 6, 7}, 5);
  const LoopSteps loop = FindLoop(keys);
  ASSERT_TRUE(loop.found());
  EXPECT_EQ(loop.period, 46u);  // five steps of 9 calls and the gather
  EXPECT_EQ(loop.start, 8u);
  EXPECT_EQ(loop.steps, 30u);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(loop.step_of[i], kNotInLoop) << i;
  EXPECT_EQ(loop.step_of[8], 0u);
  EXPECT_EQ(loop.call_of[8], 0u);
  EXPECT_EQ(loop.step_of[8 + 10], 1u);  // step 0 holds 10 calls (its gather)
  EXPECT_EQ(loop.call_of[8 + 10 + 3], 3u);
  EXPECT_EQ(loop.step_of[keys.size() - 1], 29u);
}

TEST(LoopSteps, ASwappedStepKeepsTheLoop) {
  std::vector<uint64_t> keys = Job(0, 12, {1, 2, 3}, 0);
  std::swap(keys[5 * 4 + 0], keys[5 * 4 + 2]);  // step 5 issues 3 before 1
  const LoopSteps loop = FindLoop(keys);
  ASSERT_TRUE(loop.found());
  EXPECT_EQ(loop.period, 4u);
  EXPECT_EQ(loop.steps, 12u);
  EXPECT_EQ(loop.step_of[5 * 4 + 1], 5u);
}

TEST(LoopSteps, TwoSameKeysPerStepAreOneStep) {
  // Persistent buffers: two tensors per step, told apart by their ids (the keys).
  std::vector<uint64_t> keys;
  for (int s = 0; s < 6; ++s) keys.insert(keys.end(), {10, 11});
  const LoopSteps loop = FindLoop(keys);
  ASSERT_TRUE(loop.found());
  EXPECT_EQ(loop.period, 2u);
  EXPECT_EQ(loop.steps, 6u);
}

TEST(LoopSteps, NoLoopInIrregularOrShortSequences) {
  std::vector<uint64_t> irregular;
  uint64_t x = 12345;
  for (int i = 0; i < 500; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    irregular.push_back(x >> 60);
  }
  EXPECT_FALSE(FindLoop(irregular).found());
  EXPECT_FALSE(FindLoop({1, 2, 3, 1, 2, 3}).found());  // two repeats are no loop yet
  EXPECT_FALSE(FindLoop({}).found());
  const LoopSteps none = FindLoop({4, 5});
  EXPECT_EQ(none.step_of.size(), 2u);
  EXPECT_EQ(none.step_of[0], kNotInLoop);
}

}  // namespace
}  // namespace ncclrr::replay
