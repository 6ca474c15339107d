#pragma once
// Logical identity (docs/design.md): what "the same tensor" means across ranks and steps, weighed
// from every piece of evidence the trace has:
// - the (buffer address, count, dtype) key of each call, mapped across ranks by the position it
//   holds in the majority of steps: rank r's key K is the logical tensor of the reference rank
//   that occupies K's positions most often (ties go to the reference key with the same address,
//   then the lowest id). Steps where a rank's key sits at a position its tensor does not usually
//   hold are how same-shape swaps show in jobs with persistent buffers;
// - crossed buffers: real jobs allocate gradients afresh each step, so a key may occur once, but
//   SPMD ranks allocate alike, so within a stretch of calls the same tensor has the same address
//   on every rank. Where a rank otherwise agrees with the reference buffer for buffer, calls
//   whose buffers the reference used at each other's positions (a closed cycle) are reordered;
// - call sites (--stacks), where they differ: different lines issue different tensors (the same
//   line in a loop tells nothing, so buffers still decide there).
// The replayer's `canonical` order is built from the same mapping.
#include <cstdint>
#include <vector>

#include "ncclrr/analysis/model.h"
#include "ncclrr/analysis/narrow_uints.h"

namespace ncclrr::analysis {

enum class IdentitySource : uint8_t { kNone, kBuffers, kCallSites };

// What decided a slot's logical id.
enum class IdentityEvidence : uint8_t {
  kVotes = 0,     // the buffer key's usual position across the trace (or the reference's own)
  kCrossed = 1,   // buffers crossed: where the ranks otherwise use the same buffer at the same
                  // position, this rank used buffers the reference used at each other's positions
  kCallSite = 2,  // the call site (--stacks) differs from the reference's at this position
};

inline constexpr uint32_t kNoLogicalId = ~uint32_t{0};
inline constexpr uint32_t kCertainSupport = ~uint32_t{0};

struct CommIdentity {
  IdentitySource source = IdentitySource::kNone;
  int reference_rank = 0;  // the rank whose keys name the logical tensors
  // ids[rank][slot index into RankView::collectives]: dense logical tensor id, or kNoLogicalId.
  // The per-call arrays here are NarrowUints: most of a check's memory beyond the model.
  std::vector<NarrowUints> ids;
  // How much the id of a call is to be believed.
  struct Weight {
    // Share of the key's occurrences that sit where its tensor does (1 = the key always
    // co-occurs with the same reference tensor).
    float confidence = 0;
    // How many occurrences of the key that share is taken over (kCertainSupport for call
    // sites and the reference rank's own keys).
    uint32_t support = 0;
    // The confidence's one-sided 95% lower bound given its support (Wilson).
    float LowerBound() const;
  };
  // weight[rank][slot]: index into weights[rank], the rank's distinct weights ([0] is {0, 0}).
  // A key's occurrences share one and fresh buffers give a handful, so a call costs a byte or
  // two rather than 8.
  std::vector<NarrowUints> weight;
  std::vector<std::vector<Weight>> weights;
  // evidence[rank][slot]: what decided ids[rank][slot].
  std::vector<SpillVector<IdentityEvidence>> evidence;
  // buffer_agreement[rank]: share of the rank's shape-aligned calls whose buffer equals the
  // reference's at the same position (SPMD programs allocate alike: close to 1), and over how
  // many calls. Crossed buffers are believed only where this is high.
  std::vector<float> buffer_agreement;
  std::vector<uint32_t> aligned_calls;
  uint32_t tensors = 0;  // number of logical tensors
  // shapes[rank][slot]: (op, count, dtype, reduction, root) numbered per communicator from 1
  // (equal shapes, equal numbers; 0 only for a rank without a file): what the alignment
  // compares besides the logical id.
  std::vector<NarrowUints> shapes;
  // A rank whose calls reached the reference's statements by a path the reference never took
  // (the same innermost frame of the call site, another caller) and whose buffers name no
  // tensor there with confidence: neither can tell whether these calls carry the tensors the
  // reference's carried (RefineWithCallSites). The first such call and how many.
  struct OtherPath {
    int rank = 0;
    size_t slot = 0;
    size_t ref_slot = 0;  // the reference's call at the same seq
    uint64_t calls = 0;
    uint64_t max_count = 0;  // the most elements any of them moves
  };
  std::vector<OtherPath> other_paths;
};

class LogicalIdentity {
 public:
  // `threads`: ranks of big communicators are mapped in parallel.
  // `only`: the communicators to map (by index; null: all), the others are left empty.
  static LogicalIdentity Compute(const TraceModel& model, int threads = 2,
                                 const std::vector<bool>* only = nullptr);
  const CommIdentity& comm(size_t comm_index) const { return comms_[comm_index]; }
  uint32_t Of(size_t comm_index, int rank, size_t slot) const;
  float Confidence(size_t comm_index, int rank, size_t slot) const;
  IdentityEvidence Evidence(size_t comm_index, int rank, size_t slot) const;
  // The confidence's one-sided 95% lower bound (Wilson score) given its support: a key seen 4
  // times, 3 of them beside its tensor, is 0.75 confident but only 0.36 at this bound; one seen
  // 1000 times, 800 beside it, stays near 0.78.
  float ConfidenceLowerBound(size_t comm_index, int rank, size_t slot) const;

 private:
  std::vector<CommIdentity> comms_;
};

}  // namespace ncclrr::analysis
