#pragma once
// Collectives of one communicator issued from several threads of a process: NCCL pairs calls in
// the order they reach the communicator, whichever thread issued them, so threads that run
// independently (a monitoring or logging thread beside the training loop) mispair the ranks'
// calls by timing alone, and NCCL requires a communicator to be used by one thread at a time.
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ncclrr/analysis/check.h"

namespace ncclrr::analysis {

struct SequenceContext;

// Two calls of one rank on one communicator, from different threads, the second issued while
// the first was still inside NCCL (or never returned).
struct ThreadOverlap {
  CallRef first, second;
};

// The first such pair of `rv`'s eager collectives and sends/receives. Only for traces whose
// call times are the host's (recorded by the interposer; an imported Flight Recorder dump's
// end times are when the GPU finished). One pass over the thread column when the rank used one
// thread; ranks of more than 2^20 calls are not looked at.
std::optional<ThreadOverlap> FirstThreadOverlap(const TraceModel& m, const RankView& rv);

// One rank's collectives on a communicator by thread, kept per communicator while its findings
// are written (SequenceContext::threads).
struct RankThreads {
  bool ok = false;              // looked at
  std::vector<uint32_t> tids;   // numbered in the order of their first call
  std::vector<uint8_t> number;  // per slot (0xff: a graph launch, its thread unknown)
  std::optional<bool> agrees;   // each thread's shapes agree with the reference's so far
  std::optional<bool> at_once;  // FirstThreadOverlap found a pair
};
using ThreadCache = std::unordered_map<int, RankThreads>;

// A paragraph saying so when, where the ranks part (rank `rank` at `seq`, the reference at
// `ref_seq`), the two calls come from different threads, both processes issue the
// communicator's calls from the same few threads, the parting calls have call sites, and either
// each thread's own calls agree across the two ranks so far (the threads' interleaving differs,
// not what any thread issued) or a rank's threads used the communicator at once. "" otherwise.
std::string ThreadsInterleaved(const SequenceContext& sc, int rank, uint64_t seq, uint64_t ref_seq);

}  // namespace ncclrr::analysis
