#pragma once
// Collectives of one communicator issued from several threads of a process: NCCL pairs calls in
// the order they reach the communicator, whichever thread issued them, so threads that run
// independently (a monitoring or logging thread beside the training loop) mispair the ranks'
// calls by timing alone, and NCCL requires a communicator to be used by one thread at a time.
#include <cstdint>
#include <optional>
#include <string>

#include "findings/sequence_findings.h"

namespace ncclrr::analysis {

// Two calls of one rank on one communicator, from different threads, the second issued while
// the first was still inside NCCL (or never returned).
struct ThreadOverlap {
  CallRef first, second;
};

// The first such pair of `rv`'s collectives and sends/receives (eager calls only; at most
// 2^20 calls are looked at).
std::optional<ThreadOverlap> FirstThreadOverlap(const TraceModel& m, const RankView& rv);

// A paragraph saying so when, where the ranks part (rank `rank` at `seq`, the reference at
// `ref_seq`), the two calls come from different threads, both processes issue the
// communicator's calls from the same few threads, the parting calls have call sites, and either
// each thread's own calls agree across the two ranks so far (the threads' interleaving differs,
// not what any thread issued) or a rank's threads used the communicator at once. "" otherwise.
std::string ThreadsInterleaved(const SequenceContext& sc, int rank, uint64_t seq, uint64_t ref_seq);

}  // namespace ncclrr::analysis
