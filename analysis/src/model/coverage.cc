#include "ncclrr/analysis/coverage.h"

#include <algorithm>
#include <iterator>

namespace ncclrr::analysis {
namespace {

std::string RankText(int rank) { return "rank " + std::to_string(rank); }

// Why rank `r`'s record may end early (TailMayBeCut was true).
std::string CutReason(const FileView& f) {
  if (f.torn) return "its file ends inside a frame";
  if (f.dropped > 0) return "its process dropped records";
  if (f.bad_frames > 0) return "its file has corrupt frames that were skipped";
  return "its file was not closed, and its process was not seen alive after the other ranks' "
         "next call";
}

}  // namespace

bool TailMayBeCut(const TraceModel& m, const RankView& r, const CollectiveSlot* waited,
                  uint64_t missing) {
  const FileView& f = m.files()[static_cast<size_t>(r.file)];
  if (f.torn) return true;
  if (f.dropped >= missing) return true;  // the dropped records may be the calls that look missing
  if (f.bad_frames > 0) return true;      // so may the calls of a corrupt frame that was skipped
  return !f.clean &&
         (waited == nullptr || f.last_alive_ns - m.SlotTime(*waited) < kUnflushedSlackNs);
}

bool FileMayLackCalls(const FileView& f) {
  return f.ring_mode || f.torn || !f.clean || f.bad_frames > 0 || f.dropped > 0 ||
         !f.write_error.empty() || f.unplaceable_calls > 0;
}

bool CommCoverage::Holds(uint64_t seq) const {
  if (nothing || seq < first || seq >= end) return false;
  // The last hole starting at or before seq.
  auto it = std::upper_bound(
      holes.begin(), holes.end(), seq,
      [](uint64_t v, const std::pair<uint64_t, uint64_t>& h) { return v < h.first; });
  return it == holes.begin() || std::prev(it)->second <= seq;
}

CommCoverage CoverageOf(const TraceModel& m, size_t ci) {
  const CommModel& c = m.comms()[ci];
  CommCoverage cov;
  uint64_t most = 0;
  for (const RankView& r : c.ranks)
    if (r.has_file()) most = std::max(most, r.issued());
  if (most == 0) return cov;
  // Head: positions before a rank's first recorded call are not in its file.
  int head_rank = -1;
  for (const RankView& r : c.ranks) {
    if (!r.has_file()) continue;
    if (r.collectives.empty()) {
      if (m.files()[static_cast<size_t>(r.file)].ring_mode && !cov.nothing) {
        cov.nothing = true;
        cov.reasons.push_back(RankText(r.rank) +
                              "'s flight-recorder window holds none of this communicator's calls");
      }
      continue;
    }
    if (r.first_seq() > cov.first) {
      cov.first = r.first_seq();
      head_rank = r.rank;
    }
  }
  if (head_rank >= 0)
    cov.reasons.push_back(RankText(head_rank) + "'s file starts at seq " +
                          std::to_string(cov.first) +
                          (m.files()[static_cast<size_t>(c.ranks[head_rank].file)].ring_mode
                               ? " (a flight-recorder window)"
                               : " (its earlier records are missing)"));
  // Tail: a rank whose record ends before the others' may have been cut off there.
  int tail_rank = -1;
  size_t cut_ranks = 0;
  for (const RankView& r : c.ranks) {
    if (!r.has_file() || r.issued() >= most) continue;
    const CollectiveSlot* waited = nullptr;
    for (const RankView& l : c.ranks)
      if (l.has_file() && l.issued() == most)
        if (const CollectiveSlot* s = l.AtSeq(r.issued());
            s && (!waited || m.SlotTime(*s) < m.SlotTime(*waited)))
          waited = s;
    if (!TailMayBeCut(m, r, waited, most - r.issued())) continue;
    ++cut_ranks;
    if (r.issued() < cov.end) {
      cov.end = r.issued();
      tail_rank = r.rank;
    }
  }
  if (tail_rank >= 0) {
    const FileView& f = m.files()[static_cast<size_t>(c.ranks[tail_rank].file)];
    cov.reasons.push_back(
        RankText(tail_rank) + "'s record may be cut off " +
        (cov.end > 0 ? "after seq " + std::to_string(cov.end - 1) : "before its first call") +
        " (" + CutReason(f) + ")" +
        (cut_ranks > 1 ? "; " + std::to_string(cut_ranks - 1) + " other rank(s) likewise" : ""));
  }
  // Holes: positions inside a rank's record that its file lacks, as [from, to) ranges.
  const uint64_t hi = std::min(cov.end, most);
  int hole_rank = -1;
  for (const RankView& r : c.ranks) {
    if (!r.has_file() || r.collectives.empty()) continue;
    const size_t before = cov.holes.size();
    uint64_t next = std::max(cov.first, r.first_seq());
    for (const CollectiveSlot& s : r.collectives) {
      if (next < std::min(s.seq, hi)) cov.holes.push_back({next, std::min(s.seq, hi)});
      next = std::max(next, s.seq + 1);
    }
    if (cov.holes.size() > before && hole_rank < 0) hole_rank = r.rank;
  }
  std::sort(cov.holes.begin(), cov.holes.end());
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  uint64_t positions = 0;
  for (const auto& h : cov.holes) {
    if (!merged.empty() && h.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, h.second);
    else
      merged.push_back(h);
  }
  for (const auto& [from, to] : merged) positions += to - from;
  cov.holes = std::move(merged);
  if (!cov.holes.empty())
    cov.reasons.push_back(std::to_string(positions) + " position(s) " + RankText(hole_rank) +
                          "'s file lacks (dropped or corrupt records), the first at seq " +
                          std::to_string(cov.holes.front().first));
  return cov;
}

}  // namespace ncclrr::analysis
