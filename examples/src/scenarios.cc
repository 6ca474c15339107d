#include "scenarios.h"

#include <utility>

namespace ncclrr::example {
namespace {

// Which rank carries the bug, and on which steps: odd steps, like an intermittent reorder.
constexpr int kBuggy = 1;
bool Odd(int step) { return step % 2 == 1; }

Call AllReduce(int t, size_t count) { return Call{Call::kAllReduce, t, count}; }
Call Bcast(int t, size_t count, int root) {
  Call c{Call::kBroadcast, t, count};
  c.root = root;
  return c;
}

// The loop every scenario starts from: three gradient allreduces, then a parameter broadcast.
std::vector<Call> Base() {
  return {AllReduce(0, 1024), AllReduce(1, 1024), AllReduce(2, 256), Bcast(3, 512, 0)};
}
const std::vector<TensorSpec> kBaseTensors = {
    {Role::kReduce, 1024}, {Role::kReduce, 1024}, {Role::kReduce, 256}, {Role::kBcast, 512}};

std::vector<Call> Clean(int, int, int) { return Base(); }

std::vector<Call> SwapSameSize(int step, int rank, int) {
  auto calls = Base();
  if (rank == kBuggy && Odd(step)) std::swap(calls[0], calls[1]);
  return calls;
}

std::vector<Call> SwapDiffSize(int step, int rank, int) {
  std::vector<Call> calls = {AllReduce(0, 1024), AllReduce(1, 512), AllReduce(2, 256),
                             Bcast(3, 512, 0)};
  if (rank == kBuggy && Odd(step)) std::swap(calls[0], calls[1]);
  return calls;
}

std::vector<Call> CountMismatch(int, int rank, int) {
  auto calls = Base();
  if (rank == kBuggy) calls[0].count -= 2;  // NCCL issue 1417: off by two elements
  return calls;
}

std::vector<Call> MissingCollective(int step, int rank, int) {
  auto calls = Base();
  if (rank == kBuggy && step == 1) calls.erase(calls.begin() + 1);
  return calls;
}

std::vector<Call> DtypeMismatch(int, int rank, int) {
  auto calls = Base();
  if (rank == kBuggy) calls[0].dtype = ncclInt32;  // same size, other meaning
  return calls;
}

std::vector<Call> RootMismatch(int step, int rank, int) {
  auto calls = Base();
  if (rank == kBuggy && Odd(step)) calls[3].root = kBuggy;
  return calls;
}

// Pipeline-style: activations go around a ring; the buggy rank expects one element less.
std::vector<Call> P2pMismatch(int step, int rank, int nranks) {
  std::vector<Call> calls = {AllReduce(0, 1024)};
  Call send{Call::kSend, 1, 256};
  send.root = (rank + 1) % nranks;
  Call recv{Call::kRecv, 1, 256};
  recv.root = (rank + nranks - 1) % nranks;
  if (rank == kBuggy && step >= 1) recv.count -= 1;
  calls.push_back(send);
  calls.push_back(recv);
  return calls;
}

// Two communicators over the same ranks (e.g. data- and tensor-parallel groups), used in
// opposite orders on one rank: each stream waits for a peer that waits behind it.
std::vector<Call> CrossCommOrder(int step, int rank, int) {
  Call a = AllReduce(0, 1024), b = AllReduce(1, 1024);
  b.comm = 1;
  if (rank == kBuggy && step >= 1) return {b, a};
  return {a, b};
}

const std::vector<Scenario>& All() {
  static const std::vector<Scenario> all = {
      {"clean", "no bug", kBaseTensors, 1, -1, Clean},
      {"swap-same-size", "rank 1 swaps two same-size allreduces on odd steps", kBaseTensors, 1, -1,
       SwapSameSize},
      {"swap-diff-size",
       "rank 1 swaps a 1024- and a 512-element allreduce on odd steps",
       {{Role::kReduce, 1024}, {Role::kReduce, 512}, {Role::kReduce, 256}, {Role::kBcast, 512}},
       1,
       -1,
       SwapDiffSize},
      {"count-mismatch", "rank 1 reduces two elements fewer", kBaseTensors, 1, -1, CountMismatch},
      {"missing-collective", "rank 1 skips one allreduce on step 1", kBaseTensors, 1, -1,
       MissingCollective},
      {"send-race", "rank 1 overwrites a send buffer from a second stream during the allreduce",
       kBaseTensors, 1, 1, Clean},
      // A faulty link: rank 1 receives the first allreduce of step 1 (seq 4) with one bit of
      // element 0 flipped, after NCCL wrote it.
      {"output-flip", "rank 1's output of one allreduce gets a bit flipped (host NCCL only)",
       kBaseTensors, 1, -1, Clean, nullptr, "1:4"},
      {"dtype-mismatch", "rank 1 reduces a float tensor as int32", kBaseTensors, 1, -1,
       DtypeMismatch},
      {"root-mismatch", "rank 1 names itself the broadcast root on odd steps", kBaseTensors, 1, -1,
       RootMismatch},
      {"p2p-mismatch",
       "rank 1 receives one element fewer than its peer sends",
       {{Role::kReduce, 1024}, {Role::kRing, 256}},
       1,
       -1,
       P2pMismatch},
      {"cross-comm-order",
       "rank 1 uses two communicators in the opposite order",
       {{Role::kReduce, 1024}, {Role::kReduce, 1024}},
       2,
       -1,
       CrossCommOrder},
  };
  return all;
}

}  // namespace

const Scenario* FindScenario(const std::string& name) {
  for (const Scenario& s : All()) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

std::string ScenarioNames() {
  std::string names;
  for (const Scenario& s : All()) names += std::string(names.empty() ? "" : ", ") + s.name;
  return names;
}

float InputValue(int tensor, int step, int rank, size_t i) {
  const float signal = float((size_t(tensor) * 31 + size_t(step) * 7 + i) % 17);
  const float noise =
      float((size_t(rank + 1) * 13 + size_t(tensor) * 5 + size_t(step) * 3 + i * 11) % 7) - 3;
  return signal + noise;
}

float ExpectedValue(const TensorSpec& t, int tensor, int step, int rank, int nranks, size_t i) {
  switch (t.role) {
    case Role::kBcast:
      return InputValue(tensor, step, 0, i);
    case Role::kRing:
      return InputValue(tensor, step, (rank + nranks - 1) % nranks, i);
    case Role::kReduce:
      break;
  }
  float sum = 0;
  for (int r = 0; r < nranks; ++r) sum += InputValue(tensor, step, r, i);
  return sum;
}

}  // namespace ncclrr::example
