#pragma once
// Coverage: which positions of a communicator's collective sequence every rank's file holds.
// NCCL pairs the k-th collective of every rank, and a rank's seq is its own counter, so a
// position a rank's file lacks is never a call the rank skipped: its record is missing (before
// a flight-recorder window, in dropped or corrupt records, after a tail cut off by a kill).
// Only where a rank's record ends can the trace show a real stop, and only when the file shows
// the rank lived on (closed in order, or seen alive well after the others' next call).
//
// check uses TailMayBeCut to decide whether a short rank is accused of missing_call; replay
// uses CommCoverage to replay only what every rank's file holds instead of inventing hangs.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ncclrr/analysis/model.h"

namespace ncclrr::analysis {

// A file without footer may lack its last flush (about 50 ms of calls); a rank whose process
// was alive this long after the others' call is believed to have skipped it.
inline constexpr int64_t kUnflushedSlackNs = 250'000'000;

// Whether rank `r`'s record of a communicator may end before the rank stopped issuing, given
// that other ranks issued `missing` more calls, the first of them `waited` (nullptr: unknown).
// True when its file is torn, dropped at least that many records, or was not closed in order and
// its process was not seen alive kUnflushedSlackNs after `waited`.
bool TailMayBeCut(const TraceModel& m, const RankView& r, const CollectiveSlot* waited,
                  uint64_t missing);

// Whether a file may lack calls its process made: a flight-recorder window, torn, not closed,
// with dropped records or corrupt frames.
bool FileMayLackCalls(const FileView& f);

struct CommCoverage {
  uint64_t first = 0;     // the first position every rank's file holds
  uint64_t end = kNoSeq;  // from here on some rank's record may have been cut off
  // Sorted, disjoint [from, to) ranges of positions in [first, end) some rank's file lacks.
  std::vector<std::pair<uint64_t, uint64_t>> holes;
  bool nothing = false;  // a rank's flight-recorder window holds none of its calls
  // Why positions are left out, one phrase each: "rank 1's file starts at seq 12 (a
  // flight-recorder window)", "rank 0's record may be cut off after seq 97 (its file was not
  // closed)", "2 position(s) rank 1's file lacks (dropped or corrupt records)".
  std::vector<std::string> reasons;

  bool Holds(uint64_t seq) const;
  bool complete() const { return reasons.empty(); }
};

// The coverage of communicator `ci`. Ranks without a file are not looked at (callers refuse or
// note those).
CommCoverage CoverageOf(const TraceModel& m, size_t ci);

}  // namespace ncclrr::analysis
