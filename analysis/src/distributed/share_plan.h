#pragma once
// Which member of a check group checks what: whole communicators go to members (balanced by
// their calls; every lineage of a commHash to one member, since a reader routes calls by
// commHash), and each pair of communicators whose cross-communicator order must be checked goes
// to the owner of the larger one, which then also receives the smaller one's calls on the views
// (process file, device) the two share.
#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "ncclrr/analysis/model.h"

namespace ncclrr::analysis {

struct SharePlan {
  std::map<uint64_t, int> owner_of_id;  // commHash -> member (absent: member 0)
  std::vector<int> owner;               // per comm index of the model
  std::map<std::pair<uint32_t, uint32_t>, int> pair_host;
  // (file, commHash) -> members besides the owner that need the file's calls on that comm.
  std::map<std::pair<uint32_t, uint64_t>, std::set<int>> extra;
  // File -> enter time from which its collectives also go to member 0 (FileTotals::tail_from_ns
  // of a file not closed in order).
  std::map<uint32_t, int64_t> tail_from;

  int OwnerOfId(uint64_t id) const {
    auto it = owner_of_id.find(id);
    return it == owner_of_id.end() ? 0 : it->second;
  }
};

// `skeleton`: the model built from every file's records but its calls (its comms and RankViews
// are those of the full model); `calls_per_id`: call records per commHash in the whole trace.
// `whole`: every communicator to member 0.
SharePlan PlanShares(const TraceModel& skeleton, const std::map<uint64_t, uint64_t>& calls_per_id,
                     int members, bool whole);

}  // namespace ncclrr::analysis
