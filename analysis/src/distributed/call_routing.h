#pragma once
// How the calls a member read reach the members that need them (check_spread.cc): per file a part
// [u32 file, u32 0, u64 n, n u32 rows (the calls' indices in the whole file), the calls as a
// packed CallTable (CallTable::Save)], each part padded to whole 8-byte words, so that the calls
// stay packed on the way and the blobs go through MPI as words.
#include <cstdint>
#include <string>
#include <vector>

#include "distributed/share_plan.h"
#include "ncclrr/trace/trace_reader.h"

namespace ncclrr::analysis {

// Per file, the rows in the whole file of the calls a member holds (4 bytes a call: spilled to
// disk with the calls where a check holds more than fit, ncclrr/base/spill.h).
using FileRows = std::vector<SpillVector<uint32_t>>;

class CallRouter {
 public:
  CallRouter(const SharePlan& plan, int members) : plan_(plan), members_(members) {}

  // The calls of `files` (read here; their calls are dropped) for every member, end to end in
  // member order in `out`, sizes[m] bytes for member m. Files are encoded on `threads` threads.
  void Encode(TraceDir& d, const std::vector<uint32_t>& files, int threads, std::string* out,
              std::vector<uint64_t>* sizes) const;
  // Keeps in `d` only the calls of `files` that `member` needs, of the first limit[f] of file f
  // (what an earlier pass counted, should a file have grown since), and sets rows[f] to their
  // rows in the whole file: a check in passes holds one member's share at a time.
  void Keep(TraceDir& d, const std::vector<uint32_t>& files, int member,
            const std::vector<uint64_t>& limit, int threads, FileRows* rows) const;

 private:
  std::vector<int> Dests(uint32_t f, uint64_t id) const;
  // File f's calls (rows below `limit`) per member that needs them, or for member `only` alone
  // (>= 0); the file's table is emptied.
  void Split(uint32_t f, CallTable* calls, int only, uint64_t limit, FileRows* rows,
             std::vector<CallTable>* tables) const;

  const SharePlan& plan_;
  int members_;
};

// Calls without a communicator are never placed, nor are damaged ones (the files' totals count
// them): they are not sent.
bool RoutedCall(const CallRecord& c);

// Takes the calls the members sent (`in`, parts end to end): each part becomes its file's
// calls, with their rows; `*held` counts them. False when `in` is not such parts.
bool DecodeCalls(const std::string& in, TraceDir* d, FileRows* rows, uint64_t* held);

}  // namespace ncclrr::analysis
