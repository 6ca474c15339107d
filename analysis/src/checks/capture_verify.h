#pragma once
// Exact verification of a collective (or a Send/Recv pair) from its captured buffers
// (`ncclrr record --capture`): every output element is recomputed from the ranks' captured
// inputs and compared with the captured output.
//
//   data movement (Broadcast, AllGather, AlltoAll, Gather, Scatter, Send/Recv): bit for bit;
//   max, min, and every op on integers (sum, prod, avg, PreMulSum in the type's wrapping width,
//     integer avg truncated as NCCL divides): exactly;
//   floating sum, avg and PreMulSum: within the rounding any summation order can make,
//     (m + 1)·u·Σ_r |s_r x_r| + m·h per element (m = N−1 additions, plus one multiplication for
//     avg/PreMulSum; u the datatype's unit roundoff, at least fp64's for the fp64 reference; h
//     half its smallest subnormal): the per-element form of docs/design.md's σ_red, a bound no
//     correct reduction exceeds, so it has no false positives;
//   floating prod: within N·u·|Π| (+ h).
// NaN in an input of max/min may or may not win (NCCL's comparison keeps whichever came first):
// both are accepted.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ncclrr/trace/records.h"

namespace ncclrr::analysis {

struct CapturedCall {
  Api api = Api::kUnknown;
  int nranks = 0;
  int root = -1;
  int32_t op = 0;
  uint8_t flags = 0;
  uint8_t dtype = 0;
  uint64_t count = 0;  // as nccl.h defines it for the API
  // Per communicator rank: captured send (before) and recv (after) bytes; empty views where the
  // plan has none (non-root sends of Broadcast, non-root recvs of Reduce). `scalars`: PreMulSum
  // multipliers per rank (unused otherwise).
  std::vector<std::string_view> send, recv;
  std::vector<double> scalars;
};

// One output rank's verdict.
struct OutputCheck {
  int rank = -1;
  uint64_t checked = 0;            // elements compared
  uint64_t wrong = 0;              // elements that differ
  uint64_t first = 0;              // index of the first that differs, in the rank's recv buffer
  std::string expected, observed;  // its values, as the datatype prints them
  double tolerance = 0;            // 0: exact
  bool copy = false;               // data movement (bitwise)
};

// Checks every output rank's recv against the inputs. The caller made sure each buffer the plan
// needs is there and large enough (CapturedBytesNeeded).
std::vector<OutputCheck> VerifyCaptured(const CapturedCall& c);

// How many bytes of send and recv rank `rank` must have captured for VerifyCaptured; 0 where the
// call has no such buffer on that rank.
struct NeededBytes {
  uint64_t send = 0, recv = 0;
};
NeededBytes CapturedBytesNeeded(Api api, uint8_t dtype, uint64_t count, int nranks, int rank,
                                int root);

// A datatype's element as text: exact for integers, 9 (fp32) or 17 (fp64) digits for floats.
std::string FormatElement(uint8_t dtype, const void* p);

}  // namespace ncclrr::analysis
