#pragma once
// Findings and notes: what `ncclrr check` reports, the viewer lists and the replayer verifies.
// Field meanings are docs/design.md's "Findings" contract; JSON is produced by report_format.h.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ncclrr/analysis/model.h"

namespace ncclrr::analysis {

// Append only: the names are part of the JSON contract.
enum class FindingKind : uint8_t {
  kOpMismatch,
  kCountMismatch,
  kDtypeMismatch,
  kRedopMismatch,
  kRootMismatch,
  kP2pMismatch,
  kOrderSwap,
  kCrossCommOrder,
  kMissingCall,
  kWrongSum,
  kBufferRace,
  kSuspectedSwap,
  kGraphCaptureMismatch,
  kLifecycleError,
  kNcclError,
  kOutputDivergence,  // AllReduce/Broadcast/AllGather outputs not bit-identical across ranks
};
inline constexpr int kNumFindingKinds = 16;
std::string_view FindingKindName(FindingKind k);  // "op_mismatch", ...
bool FindingKindFromName(std::string_view name, FindingKind* out);

// kStragglers: informational (GPU times show ranks waiting for the slowest one); it never
// counts as a finding, not even under --strict.
// kDataUnchecked: informational too (calls with sketches the data checks could not verify, per
// reason: non-linear ops, NaN/Inf steps, missing sketches).
enum class NoteKind : uint8_t {
  kTraceIncomplete,
  kRecordsDropped,
  kStragglers,
  kDataUnchecked,
  kInferred,  // imported evidence: how communicators and ranks were inferred
};
// "trace_incomplete", "records_dropped", "stragglers", "data_unchecked", "inferred"
std::string_view NoteKindName(NoteKind k);
// Notes about the trace itself (incomplete, dropped records): what --strict counts as findings.
bool IsIncompleteness(NoteKind k);

// A call a finding is about, so the viewer can highlight it.
struct InvolvedCall {
  CallRef call;
  int rank = -1;          // communicator rank
  uint64_t seq = kNoSeq;  // collective seq, or per-pair index for p2p
};

// One row of the short per-rank table printed under a finding.
struct TableRow {
  std::string rank;  // "0", "1-3", "peer 2"...
  std::string seq;   // "41", "41-42", "-"
  std::string what;  // "AllReduce(1728 float32, sum)"
  bool differs = false;
};

struct Finding {
  FindingKind kind = FindingKind::kOpMismatch;
  size_t comm_index = 0;  // into TraceModel::comms(); meaningless when comm == 0
  uint64_t comm = 0;      // commHash, 0 when the finding is not about one communicator
  std::string comm_name;
  std::optional<uint64_t> seq;  // collective seq; per-pair index for p2p (with peer)
  std::optional<int> peer;
  std::vector<int> ranks;            // ranks that differ from the majority (both on a tie)
  int64_t first_time = 0;            // common timeline ns of the first occurrence
  uint64_t repeats = 0;              // later occurrences of the same pattern
  std::optional<uint64_t> last_seq;  // seq of the last repeat
  std::optional<double> confidence;  // suspected_swap: 0..1
  std::string short_text;            // one line, no addresses or times
  std::string message;  // a paragraph a user can act on (no addresses/times under --stable)
  std::vector<TableRow> table;
  std::vector<InvolvedCall> calls;
  // Occurrences with equal (kind, comm, ranks, pattern) are grouped: the first is reported with
  // `repeats` counting the others. Checkers put what makes two occurrences "the same mistake"
  // here (e.g. the two signatures that differ), never the seq.
  std::string pattern;
  // Where the calls were issued, when the trace knows (`record --stacks`, Flight Recorder
  // frames): "rank 0 seq 4 at train.py:12; ...", "" otherwise.
  std::string call_sites;
};

struct Note {
  NoteKind kind = NoteKind::kTraceIncomplete;
  int32_t file = -1;  // file index, -1 when about a file that could not be read at all
  std::string file_name;
  std::vector<std::pair<uint64_t, int>> ranks;  // (comm, rank) affected
  uint64_t count = 0;                           // records_dropped: how many
  std::string message;
  // The communicator (index into TraceModel::comms()) a note is about, -1 when about the trace as
  // a whole: a check spread over processes puts its notes back in order by it.
  int64_t comm_index = -1;
};

struct Summary {
  uint64_t files = 0;
  uint64_t comms = 0;
  uint64_t ranks = 0;  // distinct (comm, rank) pairs
  uint64_t calls = 0;
  uint64_t findings = 0;     // grouped findings
  uint64_t occurrences = 0;  // findings including repeats
  uint64_t notes = 0;
  std::map<std::string, uint64_t> by_kind;
  double seconds = 0;  // analysis time (left out under --stable)
};

struct Report {
  std::vector<Finding> findings;  // sorted by first occurrence
  std::vector<Note> notes;
  Summary summary;
  bool usable = true;    // false: no trace file could be read (exit 2)
  int64_t start_ns = 0;  // the trace's first call on the common timeline ("first at +1.2 s")

  // docs/design.md: 0 no findings, 1 findings (or notes under --strict), 2 no usable trace.
  int ExitCode(bool strict) const;
};

}  // namespace ncclrr::analysis
