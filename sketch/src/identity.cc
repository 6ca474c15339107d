#include "ncclrr/sketch/identity.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "finish.h"
#include "identity_blocks.h"
#include "ncclrr/sketch/numeric.h"
#include "ncclrr/sketch/plan.h"

namespace ncclrr::sketch {
namespace {

bool IsReduction(Api api) {
  return api == Api::kAllReduce || api == Api::kReduce || api == Api::kReduceScatter;
}

// Higher is more severe; a rank's verdict is its most severe block's.
int Severity(Verdict v) {
  switch (v) {
    case Verdict::kNotAnOutput:
      return 0;
    case Verdict::kOk:
      return 1;
    case Verdict::kUncheckedOp:
      return 2;
    case Verdict::kUncheckedNonFinite:
      return 3;
    case Verdict::kUncheckedOverflow:
      return 4;
    case Verdict::kMissingSketch:
      return 5;
    case Verdict::kNonFiniteLost:
      return 6;
    case Verdict::kWrongCopy:
      return 7;
    case Verdict::kWrongSum:
      return 8;
  }
  return 0;
}

const SketchData* FindBlock(const std::vector<SketchData>& v, uint64_t first, uint64_t count,
                            uint8_t dtype) {
  for (const SketchData& s : v)
    if (s.first == first && s.count == count && s.dtype == dtype) return &s;
  return nullptr;
}

// How the inputs of a reduction are scaled; nullopt with a reason when it is not linear.
struct Scaling {
  bool linear = true;
  bool premul = false;
  std::string why_not;
};
Scaling ScalingOf(const CollectiveSketches& c) {
  Scaling s;
  const bool avg = c.op == int32_t(RedOp::kAvg) || (c.flags & call_flags::kAvgDerived);
  const bool premul = !avg && (c.op >= kNumBuiltinOps || (c.flags & call_flags::kPreMulSum));
  if (avg && !IsFloatDtype(c.dtype)) {
    s.linear = false;
    s.why_not = "integer avg (a rounded division) is checked from captured data only";
  } else if (!avg && !premul && c.op != int32_t(RedOp::kSum)) {
    s.linear = false;
    s.why_not = std::string(RedOpName(c.op, c.flags)) +
                " is not linear; it is checked from captured data only (record --capture)";
  }
  s.premul = avg || premul;
  return s;
}

std::string BlockText(const CollectiveSketches& c, uint64_t first, uint64_t count) {
  return std::string(ApiName(c.api)) + " " + std::string(DtypeName(c.dtype)) + " elements [" +
         std::to_string(first) + ", " + std::to_string(first + count) + ")";
}

}  // namespace

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kOk:
      return "ok";
    case Verdict::kWrongSum:
      return "wrong_sum";
    case Verdict::kWrongCopy:
      return "wrong_copy";
    case Verdict::kNonFiniteLost:
      return "nonfinite_lost";
    case Verdict::kUncheckedOp:
      return "unchecked_op";
    case Verdict::kUncheckedNonFinite:
      return "unchecked_nonfinite";
    case Verdict::kUncheckedOverflow:
      return "unchecked_overflow";
    case Verdict::kMissingSketch:
      return "missing_sketch";
    case Verdict::kNotAnOutput:
      return "not_an_output";
  }
  return "unknown";
}

bool IsFailure(Verdict v) {
  return v == Verdict::kWrongSum || v == Verdict::kWrongCopy || v == Verdict::kNonFiniteLost;
}

std::vector<RankVerdict> CheckCollective(const CollectiveSketches& c, const ToleranceModel& model) {
  std::vector<RankVerdict> out;
  const Scaling scaling = ScalingOf(c);
  std::vector<double> scalars(size_t(std::max(c.nranks, 0)), 1.0);
  bool scalars_known = true;
  for (int r = 0; r < c.nranks; ++r) {
    if (!scaling.premul) break;
    if (c.op == int32_t(RedOp::kAvg) || (c.flags & call_flags::kAvgDerived))
      scalars[r] = AvgScalar(c.dtype, c.nranks);
    else if (size_t(r) < c.ranks.size() && c.ranks[r].scalar)
      scalars[r] = *c.ranks[r].scalar;
    else
      scalars_known = false;
  }
  for (int j = 0; j < c.nranks; ++j) {
    RankVerdict rv;
    rv.rank = j;
    auto plan = PlanCall(c.api, c.dtype, c.count, c.nranks, j, c.root, false);
    if (!plan.ok() || !plan->recv) {
      rv.verdict = plan.ok() ? Verdict::kNotAnOutput : Verdict::kMissingSketch;
      rv.message = plan.ok() ? "" : plan.status().message();
      out.push_back(std::move(rv));
      continue;
    }
    const BlockLayout& layout = *plan->recv;
    const std::vector<SketchData> none;
    const auto& recvs = size_t(j) < c.ranks.size() ? c.ranks[j].recv : none;
    for (uint32_t b = 0; b < layout.nblocks; ++b) {
      const uint64_t g = layout.first(b);
      BlockVerdict bv;
      bv.first = g;
      bv.count = layout.block_count;
      const SketchData* recv = FindBlock(recvs, g, layout.block_count, c.dtype);
      if (!recv) {
        bv.verdict = Verdict::kMissingSketch;
        bv.detail = "rank " + std::to_string(j) + " has no recv sketch of " +
                    BlockText(c, g, layout.block_count);
      } else if (!IsReduction(c.api)) {
        const int src = CopySourceRank(c.api, c.count, c.nranks, c.root, g);
        const SketchData* send = src >= 0 && size_t(src) < c.ranks.size()
                                     ? FindBlock(c.ranks[src].send, g, layout.block_count, c.dtype)
                                     : nullptr;
        bv = send ? CheckCopyBlock(*recv, *send, src)
                  : MissingBlock(g, layout.block_count,
                                 "rank " + std::to_string(src) + " has no send sketch of " +
                                     BlockText(c, g, layout.block_count));
      } else if (!scaling.linear) {
        bv.verdict = Verdict::kUncheckedOp;
        bv.detail = scaling.why_not;
      } else if (!scalars_known) {
        bv.verdict = Verdict::kMissingSketch;
        bv.detail = "the PreMulSum scalar of some rank was not recorded";
      } else {
        std::vector<const SketchData*> sends;
        for (int r = 0; r < c.nranks && bv.verdict == Verdict::kOk; ++r) {
          const SketchData* s = size_t(r) < c.ranks.size()
                                    ? FindBlock(c.ranks[r].send, g, layout.block_count, c.dtype)
                                    : nullptr;
          if (!s)
            bv = MissingBlock(g, layout.block_count,
                              "rank " + std::to_string(r) + " has no send sketch of " +
                                  BlockText(c, g, layout.block_count));
          sends.push_back(s);
        }
        if (bv.verdict == Verdict::kOk)
          bv = CheckReductionBlock(*recv, sends, scalars, scaling.premul, c.dtype, model);
      }
      bv.first = g;
      bv.count = layout.block_count;
      const bool worse = Severity(bv.verdict) > Severity(rv.verdict) ||
                         (Severity(bv.verdict) == Severity(rv.verdict) &&
                          bv.error * rv.tolerance > rv.error * bv.tolerance);
      if (rv.blocks.empty() || worse) {
        rv.verdict = bv.verdict;
        rv.error = bv.error;
        rv.tolerance = bv.tolerance;
        rv.first = g;
        rv.message = bv.detail;
      }
      rv.blocks.push_back(std::move(bv));
    }
    if (IsFailure(rv.verdict))
      rv.message = "rank " + std::to_string(j) + ": " + BlockText(c, rv.first, layout.block_count) +
                   ": " + rv.message;
    out.push_back(std::move(rv));
  }
  return out;
}

RankVerdict CheckSendRecv(const SketchData& send, const SketchData& recv, int recv_rank) {
  RankVerdict rv;
  rv.rank = recv_rank;
  BlockVerdict bv;
  if (send.count != recv.count || send.dtype != recv.dtype) {
    bv = MissingBlock(recv.first, recv.count,
                      "send and recv sketches describe different shapes (" +
                          std::to_string(send.count) + " vs " + std::to_string(recv.count) +
                          " elements): a p2p mismatch, not a data check");
  } else {
    bv = CheckCopyBlock(recv, send, -1);
  }
  rv.verdict = bv.verdict;
  rv.error = bv.error;
  rv.tolerance = bv.tolerance;
  rv.first = bv.first;
  rv.message = bv.detail;
  rv.blocks.push_back(std::move(bv));
  return rv;
}

}  // namespace ncclrr::sketch
