#pragma once
// DiffTraces(A, B): two traces of the same program (a good and a bad run, before and after a
// change) compared call by call. Communicator ids, pids, hosts, buffer addresses and times differ
// between any two runs, so nothing is keyed on them: communicators are matched by structure
// (origin, nranks, name, matched parent, split color, creation order), ranks by communicator
// rank, and each matched (communicator, rank)'s call sequences are aligned with the same
// alignment `check` uses across ranks. Per communicator, the first divergence of each kind is
// reported (with how many later positions show the same kind), not every mispaired call.
// docs/diff.md describes every kind, the rules behind `data` and `timing`, and the JSON shape.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ncclrr/analysis/model.h"

namespace ncclrr::analysis {

enum class DiffKind : uint8_t {
  kUnmatchedComm,  // a communicator of one run has no counterpart in the other
  kOrder,          // a run of calls issued in another order (from signatures, or from data)
  kArguments,      // one call differs in api, count, dtype, reduction op or root/peer
  kMissingCall,    // calls of run A that run B never issued
  kExtraCall,      // calls of run B that run A never issued
  kCallSite,       // the same call issued from another call site (`record --stacks`)
  kData,           // inputs agree, outputs do not (`record --sketch` in both runs)
  kTiming,         // a call's GPU time differs grossly (`record --gpu-timing` in both runs)
};
std::string_view DiffKindName(DiffKind k);  // "unmatched_comm", "order", ...

struct DiffOptions {
  bool stable = false;         // no pids, file names or times of day in messages
  size_t reorder_window = 64;  // longest run of calls an `order` divergence may permute
  // Sketch agreement: per dot product |a - b| <= tol * sqrt(max sumsq), tol = max(floor,
  // 16 unit roundoffs of the dtype); integers compare exactly.
  double data_tolerance_floor = 1e-4;
  // Timing: a position's cost in a run is the shortest GPU duration over its ranks (the rank
  // that arrived last waited for nobody). Reported when the slower run's cost is at least
  // `timing_ratio` times the faster run's cost and the faster run's median for that call
  // signature, and at least `timing_floor_ns` longer.
  double timing_ratio = 4.0;
  int64_t timing_floor_ns = 500'000;
};

// One rank's view of a divergence: what each run issued there.
struct DiffRow {
  int rank = -1;
  std::string a, b;  // "seq 56 AllReduce(16384 float32, sum)", "" where the run has nothing
  bool differs = false;
};

struct Divergence {
  DiffKind kind = DiffKind::kOrder;
  int comm_a = -1, comm_b = -1;          // indices into each model's comms(); -1: none in that run
  std::optional<uint64_t> seq_a, seq_b;  // where it starts in each run (p2p: the rank's p2p index)
  bool p2p = false;                      // the positions count Send/Recv calls, not collectives
  std::vector<int> ranks;                // communicator ranks that show it at this position
  uint64_t more = 0;                     // later positions on this communicator with the same kind
  std::string short_text, message;
  std::vector<DiffRow> table;
  std::vector<CallRef> calls_a, calls_b;  // the calls involved (JSON, viewer)
};

// A communicator and its counterpart; one side is -1 when it has none.
struct CommPair {
  int a = -1, b = -1;
  bool loose = false;  // matched on (origin, nranks, name) only: parent or color differed
};

struct DiffSummary {
  size_t comms_a = 0, comms_b = 0, matched = 0;
  uint64_t calls_a = 0, calls_b = 0;  // collectives and Send/Recv on matched communicators
  uint64_t paired = 0;                // calls of A paired with a call of B
  bool data_compared = false;         // both runs have sketches
  bool timing_compared = false;       // both runs have GPU times
  bool call_sites_compared = false;   // both runs have call sites
};

struct DiffReport {
  std::vector<CommPair> comms;  // matched pairs in run A's creation order, then unmatched ones
  std::vector<Divergence> divergences;  // by communicator (as `comms`), then position
  std::vector<std::string> notes;       // what could not be compared, and why
  DiffSummary summary;
  int ExitCode() const { return divergences.empty() ? 0 : 1; }
};

DiffReport DiffTraces(const TraceModel& a, const TraceModel& b, const DiffOptions& options = {});

struct DiffFormatOptions {
  bool stable = false;         // also leaves out the paths below
  std::string path_a, path_b;  // the trace directories, named in the header
};
std::string FormatDiffText(const DiffReport& r, const TraceModel& a, const TraceModel& b,
                           const DiffFormatOptions& o);
std::string FormatDiffJson(const DiffReport& r, const TraceModel& a, const TraceModel& b,
                           const DiffFormatOptions& o);

}  // namespace ncclrr::analysis
