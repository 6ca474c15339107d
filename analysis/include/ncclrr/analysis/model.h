#pragma once
// TraceModel: a trace directory organised the way NCCL pairs calls. Per communicator (keyed by
// commHash and ncclrr's lineage ordinal), per communicator rank: the collectives ordered by
// their per-communicator sequence number (graph launches expanded into the positions they
// take), the point-to-point calls, the lifecycle calls and the CUDA-graph templates. Every call
// is referenced as (file, index) into the TraceDir the model owns, so the viewer can highlight
// exactly the records a finding names.
//
// Times: each file's CLOCK_MONOTONIC nanoseconds map onto one common timeline (CLOCK_REALTIME
// nanoseconds) through the file's ClockPair records; across hosts the offset is refined from
// matched collectives, because NTP error (ms) dwarfs a collective (us).
//
// The model is immutable once built and safe to share between threads (viewer: build it off the
// GUI thread, hand the value over).
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ncclrr/base/parallel_for.h"
#include "ncclrr/base/spill.h"
#include "ncclrr/base/status.h"
#include "ncclrr/trace/records.h"
#include "ncclrr/trace/trace_data.h"
#include "ncclrr/trace/trace_reader.h"

namespace ncclrr::analysis {

// A call of the trace: TraceDir::files[file].calls[index].
struct CallRef {
  uint32_t file = 0;
  uint32_t index = 0;
  friend bool operator==(const CallRef&, const CallRef&) = default;
  friend auto operator<=>(const CallRef&, const CallRef&) = default;
};

// One position of a rank's per-communicator collective sequence (what NCCL pairs across ranks).
// 16 bytes: one is held per collective call of the trace, so seq and launch share a word and
// the time is read from the call when asked for (TraceModel::SlotTime).
struct CollectiveSlot {
  static constexpr uint64_t kMaxSeq = (uint64_t{1} << 40) - 1;
  static constexpr uint64_t kMaxLaunch = (uint64_t{1} << 24) - 1;
  uint64_t seq : 40 = 0;     // 0-based per-communicator collective index (a damaged record's
                             // larger seq is clamped, and its rank renumbered)
  uint64_t launch : 24 = 0;  // 0: issued eagerly; k > 0: from the k-th launch of the call's graph
  CallRef call;              // the call; for a graph launch, the captured template
};
static_assert(sizeof(CollectiveSlot) == 16);

// A Send or Recv. `pair_seq` is its index among calls of the same direction to the same peer.
struct P2pCall {
  CallRef call;
  int peer = -1;
  bool send = false;
  uint64_t pair_seq = 0;
  int64_t time_ns = 0;
};

// A CUDA graph captured by one rank that holds calls on this communicator.
struct GraphTemplate {
  uint64_t graph_id = 0;
  std::vector<CallRef> calls;            // captured calls on this communicator, in capture order
  std::vector<int64_t> launch_times_ns;  // common timeline
};

// What one communicator rank did on one communicator.
struct RankView {
  int rank = -1;
  int32_t file = -1;  // index into TraceDir::files; -1 when no file holds this rank
  int device = -1;
  // Sorted by seq (gaps: records not in the trace); spilled to disk where a check holds more
  // calls than fit (ncclrr/base/spill.h).
  SpillVector<CollectiveSlot> collectives;
  std::vector<P2pCall> p2p;           // issue order
  std::vector<CallRef> lifecycle;     // init/split/shrink/finalize/destroy/abort/revoke/async-error
  std::vector<CallRef> other;         // registration, memory, PreMulSum ops...
  std::vector<GraphTemplate> graphs;  // capture order
  std::vector<uint32_t> comm_records;  // indices into the file's TraceFile::comms for this rank

  bool has_file() const { return file >= 0; }
  // Number of collectives the rank issued as far as the trace knows (last seq + 1, or 0).
  uint64_t issued() const { return collectives.empty() ? 0 : collectives.back().seq + 1; }
  uint64_t first_seq() const { return collectives.empty() ? 0 : collectives.front().seq; }
  const CollectiveSlot* AtSeq(uint64_t seq) const;  // nullptr when the trace has no such call
};

struct CommModel {
  uint64_t id = 0;  // NCCL-compatible commHash
  uint32_t lineage = 0;
  std::string name;  // commName from ncclConfig_t, "" if none
  int nranks = 0;
  uint64_t parent_id = 0;
  int color = 0;
  CommOrigin origin = CommOrigin::kUnknown;
  std::vector<RankView> ranks;  // index = communicator rank, size nranks
  // Inconsistencies between the ranks' CommRecords (nranks disagree, two files claim one rank,
  // calls on a comm no CommRecord announced): evidence for lifecycle_error.
  std::vector<std::string> problems;
  // A rank that issued calls from a second process (lifecycle_error): calls of `call.file` name
  // rank `rank`, which the process of `first_file` held; `call` is the first of them.
  struct Rejoin {
    int rank = -1;
    int32_t first_file = -1;
    CallRef call;
  };
  std::vector<Rejoin> rejoins;

  uint64_t max_issued() const;  // max over ranks of issued()
};

// What the model knows about one process file.
struct FileView {
  std::string name;  // basename, e.g. "host-1234.ncclrr"
  std::string host;
  int pid = 0;
  int64_t clock_offset_ns = 0;  // common = monotonic + clock_offset_ns
  bool offset_refined = false;  // corrected from matched collectives (cross-host)
  bool clean = false;           // closed in order (footer with clean = true)
  bool has_footer = false;
  bool torn = false;       // ends inside a frame
  bool ring_mode = false;  // flight recorder: holds only the last calls
  uint64_t bad_frames = 0;
  uint64_t dropped = 0;
  // Why writing the file failed, from its footer ("No space left on device"); empty when it
  // did not.
  std::string write_error;
  // Calls the model cannot place and leaves out (a damaged or crafted trace): a negative rank, a
  // collective without a communicator, an unknown operation, more data than any GPU holds.
  uint64_t unplaceable_calls = 0;
  int64_t first_alive_ns = 0;  // common time of its first call (0: none)
  int64_t last_alive_ns = 0;   // common time of the last sign of life (call, clock pair, footer)
  std::vector<std::pair<size_t, int>> ranks;  // (comm index, comm rank) held by this file
  // In a model of part of the trace, the collective or point-to-point call the file's process
  // entered last, on whichever communicator, from all of its calls (FileTotals); unset in a
  // whole model (TraceModel::LastCommCall finds it there).
  std::optional<CallRecord> last_comm_call;
  // In a model of part of the trace, FileTotals::tail_from_ns; unset in a whole model
  // (TraceModel::TailFromNs finds it there).
  std::optional<int64_t> tail_from_ns;
  // In a model of part of the trace, whether FileTotals::aborts is nonzero; unset in a whole
  // model (TraceModel::MayHaveHung finds it there).
  std::optional<bool> aborted;
};

// A call worth a second look without scanning every record: it returned an error (other than
// ncclInProgress) or was issued on a stream whose graph capture was invalidated.
struct FlaggedCall {
  CallRef call;
  size_t comm_index = 0;
  int rank = -1;
};

// What the process that read a file found in all of it, for a process that holds only some of
// its calls (a check spread over processes, check_group.h).
struct FileTotals {
  uint64_t calls = 0;                  // every call record of the file
  uint64_t unplaceable = 0;            // of which no rank or communicator can hold
  int64_t first_enter_ns = INT64_MAX;  // monotonic, over every call
  int64_t last_ns = INT64_MIN;         // monotonic: the latest enter or exit of a call
  // The collective or point-to-point call entered last, on whichever communicator: where a
  // process that stopped was blocked. (A 64-bit flag: the struct travels as raw bytes, and a
  // bool would leave padding unwritten.)
  uint64_t has_last_comm_call = 0;
  CallRecord last_comm_call{};
  // The earliest enter time of the file's last kTailCollectives collectives in file order
  // (TailCollective; INT64_MIN when it holds fewer, or launches CUDA graphs, whose launches its
  // seqs count): a cycle of waits across communicators is looked for among its collectives
  // entered since.
  int64_t tail_from_ns = INT64_MIN;
  // Placeable ncclCommAbort calls: a process that aborted a communicator (a watchdog) may have
  // hung even where it then exited in order.
  uint64_t aborts = 0;
};

// How many of a process's last collectives a cycle of waits across communicators is looked for
// among (checks/wait_cycle.cc): a deadlocked process issues no more than a step's calls past the
// one it waits in.
inline constexpr size_t kTailCollectives = 1024;

// A collective a file's tail counts (a placeable one): the one rule that cuts a file's tail, for
// FileTotals and the model alike, so that a check spread over processes looks at the same calls.
bool TailCollective(const CallRecord& c);

// Whether `c` is a collective or point-to-point call entered after `last` (nullptr: none yet):
// the one rule that picks a process's last call on any communicator, for FileTotals and
// FileView alike, so that a check spread over processes names the same call.
bool LaterCommCall(const CallRecord& c, const CallRecord* last);

// Differences of matched collectives' completion times between the first host and host h (by
// order of first appearance among the files), in ns: what aligns clocks across hosts.
using ClockSamples = std::map<int, std::vector<int64_t>>;

// A model built from part of a trace (a check spread over processes, check_group.h): what the
// processes that read the files found in all of them, and how this one learns from the others.
struct PartOfTrace {
  std::vector<FileTotals> totals;  // one per file
  // Per comm index: the communicators whose calls are all here (empty: every one).
  std::vector<bool> whole_comms;
  // Pools this process's clock samples with every other's (null: this process's alone).
  std::function<ClockSamples(ClockSamples)> pool_clock_samples;
};

// A call no analysis can use: it names no rank or no communicator where its operation needs one,
// its operation is unknown, or it moves more data than any GPU holds.
bool UnplaceableCall(const CallRecord& c);

// An ncclGroupEnd that returned an error (ncclInProgress is none). It names no communicator:
// the model flags it on the communicators of its group's calls (FlaggedCall).
bool FailedGroupEnd(const CallRecord& c);

struct LoadOptions {
  int threads = CoreCount();  // files, and frames within files, decoded in parallel
  // Progress for long traces ("read 12 of 64 files"); called from the loading thread.
  std::function<void(std::string_view)> progress;
};

class TraceModel {
 public:
  // Reads every *.ncclrr file of `path` (directory or single file) and builds the model.
  static StatusOr<TraceModel> Load(const std::string& path, const LoadOptions& options = {});
  // Builds the model from an already loaded trace (tests, viewer), placing files' calls on up
  // to `threads` threads.
  static TraceModel Build(TraceDir dir, int threads = CoreCount());
  // The same, where the files hold only some of their calls and `totals` (one per file) say
  // what all of them were.
  static TraceModel BuildPart(TraceDir dir, PartOfTrace part, int threads = CoreCount());

  TraceModel(TraceModel&&) noexcept;
  TraceModel& operator=(TraceModel&&) noexcept;
  ~TraceModel();

  const TraceDir& dir() const { return *dir_; }
  const std::vector<CommModel>& comms() const { return comms_; }
  const std::vector<FileView>& files() const { return files_; }
  CallRecord call(CallRef r) const { return dir_->files[r.file].calls[r.index]; }
  const TraceFile& file(uint32_t f) const { return dir_->files[f]; }
  // Index into comms() of (id, lineage), or -1.
  int FindComm(uint64_t id, uint32_t lineage = 0) const;

  // Common timeline (CLOCK_REALTIME ns) of a monotonic time recorded in file `f`.
  int64_t CommonTime(uint32_t f, int64_t mono_ns) const {
    return mono_ns + files_[f].clock_offset_ns;
  }
  int64_t CallTime(CallRef r) const {
    return CommonTime(r.file, dir_->files[r.file].calls.EnterNs(r.index));
  }
  // A collective's time on the common timeline: its call's enter time, or for a graph launch
  // the launch's time (0 when the trace lost that launch).
  int64_t SlotTime(const CollectiveSlot& s) const;
  // The collective or point-to-point call file `f`'s process entered last, on any communicator
  // (LaterCommCall): FileView::last_comm_call in a model of part of the trace, else a pass over
  // the file's calls (callers that ask often keep the answer).
  std::optional<CallRecord> LastCommCall(uint32_t f) const;
  // FileTotals::tail_from_ns of file `f`: FileView::tail_from_ns in a model of part of the
  // trace, else read back from the file's last call.
  int64_t TailFromNs(uint32_t f) const;
  // Whether file `f`'s process may have hung: its file was not closed in order, or it aborted a
  // communicator (FileTotals::aborts). Cycles of waits are looked for in such files' tails.
  bool MayHaveHung(uint32_t f) const;
  int64_t start_ns() const { return start_ns_; }  // earliest call on the common timeline
  int64_t end_ns() const { return end_ns_; }
  uint64_t total_calls() const { return total_calls_; }

  const std::vector<FlaggedCall>& flagged_calls() const { return flagged_; }

  // Sketches recorded for a call (data checks); empty when none.
  std::vector<const SketchData*> Sketches(CallRef r) const;

  // Messages from reading (torn tails, unreadable files) for notes.
  const std::vector<std::string>& load_warnings() const { return dir_->warnings; }

 private:
  TraceModel();
  friend class ModelBuilder;
  std::unique_ptr<TraceDir> dir_;
  std::vector<CommModel> comms_;
  std::vector<FileView> files_;
  int64_t start_ns_ = 0, end_ns_ = 0;
  uint64_t total_calls_ = 0;
  std::vector<FlaggedCall> flagged_;
  std::vector<std::unordered_multimap<uint64_t, uint32_t>> sketch_index_;  // per file: uid -> i
};

// "AllReduce(36864 float32, sum)" -- the short form used in findings (no addresses or times).
std::string ShortCall(const CallRecord& c);

}  // namespace ncclrr::analysis
