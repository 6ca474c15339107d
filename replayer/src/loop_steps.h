#pragma once
// The steps of a training loop, found from one rank's sequence of calls on a communicator.
// Jobs do not mark their steps, and real ones allocate buffers afresh every step, so "the n-th
// occurrence of a tensor" is no step number a user would recognise. A loop issues the same
// pattern of calls again and again: the smallest period over which the sequence repeats (with
// room for the few places that a bug makes differ) is found first, and the first place where two
// whole periods agree is where the loop starts (calls before it are setup). One period may hold
// several steps when some calls come only every few steps (an accuracy gather every fifth step):
// the calls that occur as often as most in a period occur once per step, and the first of them
// marks where each step begins.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ncclrr::replay {

inline constexpr uint32_t kNotInLoop = ~uint32_t{0};

struct LoopSteps {
  size_t period = 0;   // calls after which the pattern repeats; 0 when no loop was found
  size_t start = 0;    // index of the first call of the loop
  uint32_t steps = 0;  // steps from the first to the last call
  // Per call: its step and its place in the step, or kNotInLoop (setup, or no loop).
  std::vector<uint32_t> step_of, call_of;
  bool found() const { return period > 0; }
};

// `keys`: one value per call, equal for calls a loop would issue at the same place of every step.
// A period must hold at 90% of the compared positions and repeat at least three times.
LoopSteps FindLoop(const std::vector<uint64_t>& keys);

}  // namespace ncclrr::replay
