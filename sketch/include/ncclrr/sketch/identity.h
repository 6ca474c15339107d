#pragma once
// The identity algebra: does each output rank's recv sketch equal what its inputs combine to?
//
// Per output rank j and recv block b at global index g (plan.h):
//   reductions (AllReduce, Reduce, ReduceScatter):
//       sketch(recv_j[b]) = Σ_r s_r · sketch(send_r at g)
//     with s_r = 1 (sum), NCCL's dtype-rounded 1/N (float avg) or the PreMulSum scalar.
//     Integers: exact modulo the type's width. Floats: within the tolerance of tolerance.h.
//   data movement (AllGather, Broadcast, AlltoAll, Gather, Scatter, Send/Recv):
//       sketch(recv_j[b]) == sketch(send_src at g), bit for bit (same data, same global indices,
//       same arithmetic), samples included.
//   max / min / prod and integer avg are not linear: "unchecked without captured data".
//   NaN/±Inf are left out of the dots. For sum-like ops every input position that is non-finite
//   stays non-finite, so the output must hold at least as many NaN as any input and at least as
//   many non-finite values as any input; when that holds the dots are not comparable and the
//   block is unchecked (AMP overflow steps are not wrong sums).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ncclrr/sketch/tolerance.h"
#include "ncclrr/trace/records.h"
#include "ncclrr/trace/trace_data.h"

namespace ncclrr::sketch {

// One rank's sketches of one call, as recorded (SendBefore blocks and RecvAfter blocks).
struct RankSketches {
  std::vector<SketchData> send;
  std::vector<SketchData> recv;
  std::optional<double> scalar;  // this rank's PreMulSum scalar (already in the datatype)
};

struct CollectiveSketches {
  Api api = Api::kAllReduce;
  int nranks = 0;
  int root = -1;
  int32_t op = 0;     // ncclRedOp_t as recorded (>= 5: a PreMulSum handle)
  uint8_t flags = 0;  // CallRecord flags (call_flags::kPreMulSum)
  uint8_t dtype = 7;
  uint64_t count = 0;               // the count argument as nccl.h defines it
  std::vector<RankSketches> ranks;  // index: communicator rank
};

enum class Verdict : uint8_t {
  kOk = 0,              // identity holds (exactly, or within the tolerance)
  kWrongSum,            // a reduction's output is off by more than the tolerance
  kWrongCopy,           // a data-movement output differs from its source (exact check)
  kNonFiniteLost,       // an output holds fewer NaN/Inf than an input: no sum can do that
  kUncheckedOp,         // max/min/prod, integer avg: checkable from captured data only
  kUncheckedNonFinite,  // NaN/Inf present and consistent: dots are not comparable
  kUncheckedOverflow,   // a sketch overflowed (Inf/NaN in its dots or Σx²)
  kMissingSketch,       // a sketch (or a PreMulSum scalar) the check needs is absent
  kNotAnOutput,         // this rank receives nothing (non-root of Reduce / Gather)
};
const char* VerdictName(Verdict v);
// The verdicts that are findings (wrong_sum): kWrongSum, kWrongCopy, kNonFiniteLost.
bool IsFailure(Verdict v);

struct BlockVerdict {
  uint64_t first = 0;
  uint64_t count = 0;
  Verdict verdict = Verdict::kOk;
  double error = 0;      // max_k |Δ_k| (integers: |Δ| of the worst dot modulo 2^w)
  double tolerance = 0;  // of that dot (0 for exact checks)
  int worst_dot = -1;
  std::string detail;
};

struct RankVerdict {
  int rank = -1;
  Verdict verdict = Verdict::kOk;   // the most severe over the rank's blocks
  double error = 0, tolerance = 0;  // of the block with the largest error / tolerance
  uint64_t first = 0;               // that block's global index
  std::vector<BlockVerdict> blocks;
  std::string message;  // one sentence a user can act on
};

// One verdict per communicator rank (kNotAnOutput for ranks without output).
std::vector<RankVerdict> CheckCollective(const CollectiveSketches& call,
                                         const ToleranceModel& model = {});

// Send/Recv pair: the receiver's sketch must equal the sender's bit for bit.
RankVerdict CheckSendRecv(const SketchData& send, const SketchData& recv, int recv_rank);

}  // namespace ncclrr::sketch
