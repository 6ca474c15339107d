#include "loop_steps.h"

#include <algorithm>
#include <map>

namespace ncclrr::replay {
namespace {

constexpr size_t kMaxPeriod = 4096;  // calls per period; larger loops are reported by occurrence
constexpr size_t kWindow = 16384;    // positions compared per candidate period
constexpr size_t kMinRepeats = 3;

// Whether keys[i] == keys[i + p] for at least 90% of the positions of the last window; stops as
// soon as the misses rule it out, so wrong periods cost little.
bool Holds(const std::vector<uint64_t>& keys, size_t p) {
  const size_t n = keys.size();
  const size_t compared = std::min(n - p, kWindow);
  const size_t allowed = compared / 10;
  size_t misses = 0;
  for (size_t i = n - p - compared; i + p < n; ++i)
    if (keys[i] != keys[i + p] && ++misses > allowed) return false;
  return true;
}

// The first index from which one whole period equals the next.
size_t FirstRepeat(const std::vector<uint64_t>& keys, size_t p) {
  size_t run = 0;
  for (size_t i = 0; i + p < keys.size(); ++i) {
    run = keys[i] == keys[i + p] ? run + 1 : 0;
    if (run == p) return i + 1 - p;
  }
  return keys.size();
}

// How calls mark the steps of the period keys[start, start + p): the calls that occur as often as
// most keys of the period do occur once per step (ties: the higher count, so that with one extra
// call per period the steps are not taken to be whole periods), and the first of them in the
// period begins each step. The marker is the one of them that most often recurs one period
// later (a swap on this rank moves a few, and a moved marker would misplace the steps around
// it); `offsets` is where it sits in each step of the period.
struct StepMarker {
  uint64_t key = 0;
  std::vector<size_t> offsets;  // per step of the period
};

StepMarker FindMarker(const std::vector<uint64_t>& keys, size_t start, size_t p) {
  std::map<uint64_t, uint32_t> count;
  for (size_t i = start; i < start + p; ++i) ++count[keys[i]];
  std::map<uint32_t, uint32_t> keys_with;  // occurrences -> how many keys occur that often
  for (const auto& [key, n] : count) ++keys_with[n];
  uint32_t usual = 0, most = 0;
  for (const auto& [n, k] : keys_with)
    if (k >= most) {
      usual = n;
      most = k;
    }
  std::vector<size_t> step_starts;  // in the period, where the first usual key occurs
  uint64_t anchor = 0;
  for (size_t i = start; i < start + p; ++i)
    if (count[keys[i]] == usual) {
      if (step_starts.empty()) anchor = keys[i];
      if (keys[i] == anchor) step_starts.push_back(i);
    }
  StepMarker best;
  size_t best_score = 0;
  for (size_t i = start; i < start + p; ++i) {
    const uint64_t key = keys[i];
    if (count[key] != usual || (best_score > 0 && key == best.key)) continue;
    size_t score = 1;
    const size_t end = std::min(keys.size(), start + p + kWindow);
    for (size_t j = start + p; j < end; ++j) score += keys[j] == key && keys[j - p] == key;
    if (score <= best_score) continue;
    std::vector<size_t> offsets;
    for (size_t j = start; j < start + p; ++j) {
      if (keys[j] != key) continue;
      size_t s = 0;  // the step of the period that j is in
      while (s + 1 < step_starts.size() && step_starts[s + 1] <= j) ++s;
      offsets.push_back(j - step_starts[s]);
    }
    if (offsets.size() != step_starts.size()) continue;  // not once per step
    best = {key, std::move(offsets)};
    best_score = score;
  }
  if (best_score == 0) best = {keys[start], {0}};
  return best;
}

}  // namespace

LoopSteps FindLoop(const std::vector<uint64_t>& keys) {
  LoopSteps loop;
  const size_t n = keys.size();
  for (size_t p = 1; p <= kMaxPeriod && p * kMinRepeats <= n; ++p) {
    if (!Holds(keys, p)) continue;
    const size_t start = FirstRepeat(keys, p);
    if (start >= n || (n - start) < p * kMinRepeats) continue;
    loop.period = p;
    loop.start = start;
    break;
  }
  loop.step_of.assign(n, kNotInLoop);
  loop.call_of.assign(n, kNotInLoop);
  if (!loop.found()) return loop;
  const StepMarker marker = FindMarker(keys, loop.start, loop.period);
  // Each occurrence of the marker, minus its place in the step, is where a step begins.
  std::vector<size_t> begins;
  size_t occurrence = 0;
  for (size_t i = loop.start; i < n; ++i)
    if (keys[i] == marker.key) {
      const size_t off = marker.offsets[occurrence++ % marker.offsets.size()];
      const size_t b = i >= off ? i - off : 0;
      if (b >= loop.start && (begins.empty() || b > begins.back())) begins.push_back(b);
    }
  uint32_t step = kNotInLoop, call = 0;
  size_t next = 0;
  for (size_t i = loop.start; i < n; ++i) {
    if (next < begins.size() && begins[next] == i) {
      step = step == kNotInLoop ? 0 : step + 1;
      call = 0;
      ++next;
    }
    if (step == kNotInLoop) continue;  // before the first step begins: setup
    loop.step_of[i] = step;
    loop.call_of[i] = call++;
  }
  loop.steps = step == kNotInLoop ? 0 : step + 1;
  return loop;
}

}  // namespace ncclrr::replay
