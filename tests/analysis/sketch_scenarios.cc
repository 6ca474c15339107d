#include "sketch_scenarios.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ncclrr/sketch/plan.h"
#include "ncclrr/sketch/sketch.h"

namespace ncclrr::testing {
namespace {

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in [-1, 1), the same on every platform (golden outputs print errors and cosines).
float Uniform(uint64_t seed, uint64_t i) {
  return float(double(SplitMix(seed * 0x100000001b3ull + i) >> 11) * 0x1.0p-52 - 1.0);
}

void AddSketches(std::vector<SketchData>* out, const std::vector<float>& data,
                 const sketch::BlockLayout& layout, sketch::SketchMode mode, SketchWhich which) {
  sketch::SketchRequest req;
  req.layout = layout;
  req.mode = mode;
  sketch::SketchResult res = sketch::SketchHost(data.data(), req).value();
  for (SketchData& s : res.blocks) {
    s.which = which;
    out->push_back(std::move(s));
  }
  if (res.race) {
    // The before-call race sample is the twin of the one re-read after the call.
    res.race->which = which == SketchWhich::kSendBefore ? SketchWhich::kSendBeforeSample
                                                        : SketchWhich::kSendAfterSample;
    out->push_back(std::move(*res.race));
  }
}

// Sum and max in rank order; avg and PreMulSum scale each input first (by the float 1/N, or
// by the rank's scalar), as NCCL does.
std::vector<float> Reduce(std::vector<std::vector<float>> in, int32_t op,
                          const std::vector<double>& scalars) {
  for (size_t r = 0; r < in.size(); ++r) {
    const float s = op == int32_t(RedOp::kAvg) ? 1.0f / float(in.size())
                    : op >= kNumBuiltinOps     ? float(scalars[r])
                                               : 1.0f;
    if (s != 1.0f)
      for (float& x : in[r]) x *= s;
  }
  std::vector<float> out = in[0];
  for (size_t r = 1; r < in.size(); ++r)
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = op == int32_t(RedOp::kMax) ? std::max(out[i], in[r][i]) : out[i] + in[r][i];
  return out;
}

}  // namespace

std::vector<SketchData> SketchCallBuffers(Api api, int nranks, int rank, bool in_place,
                                          const std::vector<float>& send,
                                          const std::vector<float>& send_after,
                                          const std::vector<float>& recv) {
  const uint64_t count = std::max(send.size(), recv.size());
  const auto plan =
      sketch::PlanCall(api, uint8_t(Dtype::kFloat32), count, nranks, rank, 0, in_place).value();
  std::vector<SketchData> out;
  if (plan.send && !send.empty())
    AddSketches(&out, send, *plan.send,
                plan.send_race ? sketch::SketchMode::kFullAndRace : sketch::SketchMode::kFull,
                SketchWhich::kSendBefore);
  if (plan.send_race && !send_after.empty())
    AddSketches(&out, send_after, *plan.send, sketch::SketchMode::kRaceOnly,
                SketchWhich::kSendAfterSample);
  if (plan.recv && !recv.empty())
    AddSketches(&out, recv, *plan.recv, sketch::SketchMode::kFull, SketchWhich::kRecvAfter);
  return out;
}

std::vector<float> Gradient(int tensor, int step, int rank, size_t n, double noise) {
  const uint64_t shared = SplitMix(uint64_t(tensor) << 20 | uint64_t(step));
  const uint64_t own = SplitMix(shared ^ (uint64_t(rank) + 1) * 0x51ed27);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = Uniform(shared, i) + float(noise) * Uniform(own, i);
  return v;
}

void AddDataStep(ScriptBuilder& b, int comm, int step, const DataStep& d) {
  const std::vector<int>& members = b.s.comms[comm].members;
  const int n = static_cast<int>(members.size());
  const int positions = d.positions ? d.positions : static_cast<int>(d.counts.size());
  for (int pos = 0; pos < positions; ++pos) {
    std::vector<int> tensor(n);
    std::vector<std::vector<float>> send(n), read(n), after(n);
    for (int r = 0; r < n; ++r) {
      const int p = members[r];
      tensor[r] = d.tensor_at ? d.tensor_at(p, pos) : pos + 1;
      const int data = d.data_at ? d.data_at(p, pos) : tensor[r];
      const uint64_t count = d.counts[tensor[r] - 1];
      send[r] = Gradient(data + (d.independent ? 1000 * (r + 1) : 0), step, r, count, d.noise);
      if (d.input) d.input(p, pos, send[r]);
      read[r] = after[r] = send[r];
      if (d.race) d.race(p, pos, read[r], after[r]);
    }
    const int32_t op = d.op ? d.op(pos) : int32_t(RedOp::kSum);
    std::vector<double> scalars(n, 1.0);
    for (int r = 0; r < n; ++r)
      if (d.scalar) scalars[r] = d.scalar(members[r]);
    const std::vector<float> sum = Reduce(read, op, scalars);
    for (int r = 0; r < n; ++r) {
      std::vector<float> recv = sum;
      if (d.corrupt) d.corrupt(members[r], pos, recv);
      ScriptCall c = AllReduce(sum.size(), tensor[r]);
      c.comm = comm;
      c.op = op;
      c.scalar = d.recorded_scalar ? d.recorded_scalar(members[r]) : scalars[r];
      c.out_of_place = true;
      if (d.sketched)
        c.sketches = SketchCallBuffers(Api::kAllReduce, n, r, false, send[r], after[r], recv);
      b.On(members[r], c);
    }
  }
}

namespace {

const std::vector<uint64_t> kCounts = {3000, 5000, 5000, 1000};

std::vector<int> Range(int n) {
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i) v[i] = i;
  return v;
}

SyntheticScript Steps(int ranks, int steps, const std::function<void(int step, DataStep&)>& edit) {
  ScriptBuilder b(ranks);
  const int dp = b.Comm(0xda7a000000000001ull, "dp", Range(ranks));
  for (int step = 0; step < steps; ++step) {
    DataStep d;
    d.counts = kCounts;
    if (edit) edit(step, d);
    AddDataStep(b, dp, step, d);
  }
  return b.s;
}

SyntheticScript Clean() { return Steps(2, 4, nullptr); }

// Rank 1's output of the second allreduce of step 2 (seq 9) has one element off by 0.25.
SyntheticScript WrongSum() {
  return Steps(2, 4, [](int step, DataStep& d) {
    if (step != 2) return;
    d.corrupt = [](int p, int pos, std::vector<float>& recv) {
      if (p == 1 && pos == 1) recv[100] += 0.25f;
    };
  });
}

// Every rank's output of the first allreduce of step 1 (seq 4) has one element off by 0.25,
// alike: the ranks agree with each other, not with their inputs (a wrong_sum of ranks 0 and 1).
SyntheticScript WrongSumEverywhere() {
  return Steps(2, 3, [](int step, DataStep& d) {
    if (step != 1) return;
    d.corrupt = [](int, int pos, std::vector<float>& recv) {
      if (pos == 0) recv[100] += 0.25f;
    };
  });
}

// Four ranks; rank 2 receives different outputs from the others (a faulty link): at seq 5
// (step 1) one element off by 0.25, which the identity check sees too; at seq 8 (step 2) one
// element off in a low mantissa bit, within the rounding tolerance of the sum, seen only as a
// difference between the ranks; at seq 15 (step 3), the max reduction (which the identity
// cannot check) of rank 3 off in one element. Rank 1's output of seq 13 differs only in an
// element's NaN payload: not a difference the sketches see (NaN is NaN).
SyntheticScript OutputDivergence() {
  return Steps(4, 4, [](int step, DataStep& d) {
    d.op = [](int pos) { return pos == 3 ? int32_t(RedOp::kMax) : int32_t(RedOp::kSum); };
    if (step == 3)
      d.input = [](int, int pos, std::vector<float>& send) {
        if (pos == 1) send[50] = NAN;
      };
    d.corrupt = [step](int p, int pos, std::vector<float>& recv) {
      if (step == 1 && p == 2 && pos == 1) recv[100] += 0.25f;
      if (step == 2 && p == 2 && pos == 0) {
        uint32_t bits;
        std::memcpy(&bits, &recv[7], 4);
        bits ^= 1u << 8;
        std::memcpy(&recv[7], &bits, 4);
      }
      if (step == 3 && p == 3 && pos == 3) recv[3] = 42.0f;
      if (step == 3 && p == 1 && pos == 1) recv[50] = -NAN;
    };
  });
}

// Step 1 (seq 6): rank 1 overwrites its send buffer with 1000s (like ncclrr-example send-race)
// before NCCL reads it: wrong sums on both ranks, explained by the race. Step 3 (seq 12): the
// write lands after NCCL read the buffer: a race, the outputs still right.
SyntheticScript BufferRace() {
  return Steps(2, 4, [](int step, DataStep& d) {
    if (step == 1)
      d.race = [](int p, int pos, std::vector<float>& read, std::vector<float>& after) {
        if (p != 1 || pos != 2) return false;
        std::fill(read.begin(), read.end(), 1000.0f);
        after = read;
        return true;
      };
    if (step == 3)
      d.race = [](int p, int pos, std::vector<float>&, std::vector<float>& after) {
        if (p != 1 || pos != 0) return false;
        std::fill(after.begin(), after.end(), 1000.0f);
        return true;
      };
  });
}

// Rank 3 issues the two same-size tensors swapped in step 2, as in the metadata-only
// suspected_swap scenario; `buffers_only`: the buffers swap but the data stay in order (an
// allocator rotating buffers), `independent`: the ranks' data do not correlate.
SyntheticScript Swap(bool buffers_only, bool independent) {
  return Steps(4, 8, [=](int step, DataStep& d) {
    d.independent = independent;
    if (step != 2) return;
    d.tensor_at = [](int p, int pos) {
      if (p == 3 && (pos == 1 || pos == 2)) return 3 - pos + 1;
      return pos + 1;
    };
    if (buffers_only) d.data_at = [](int, int pos) { return pos + 1; };
  });
}

// Rank 1 reduces its second same-size tensor's buffer twice in step 3 (seq 14): the buffer it
// always passes at seq 4k+1 stands at 4k+2 once, and its data are that tensor's.
SyntheticScript DuplicateTensor() {
  return Steps(2, 8, [](int step, DataStep& d) {
    if (step != 3) return;
    d.tensor_at = [](int p, int pos) { return p == 1 && pos == 2 ? 2 : pos + 1; };
  });
}

// A buffer allocated afresh every step, as a compressing comm hook's (fp16_compress_hook): the
// second call of each step takes one of five same-size buffers, chosen differently on each rank,
// so a rank's buffer sits beside the other's buffers at random. The data do not correlate across
// ranks (nothing to weigh): only the buffers' identity could, wrongly, suggest swaps.
SyntheticScript FreshBuffers() {
  return Steps(2, 24, [](int step, DataStep& d) {
    d.counts = {3000, 2000, 2000, 2000, 2000, 2000};
    d.positions = 2;
    d.independent = true;
    d.tensor_at = [step](int p, int pos) {
      if (pos == 0) return 1;
      return 2 + int(SplitMix(uint64_t(step) * 7 + uint64_t(p) * 1000003) % 5);
    };
    d.data_at = [](int, int pos) { return pos + 1; };
  });
}

// A caching allocator handing out six same-size buffers in turn, the way a compressing comm
// hook's fresh buffers come back: each buffer sits at position 1 every sixth step, on both ranks
// alike, except that rank 1 takes step 8's buffer early, in step 7. That buffer is then seen 5
// times, 4 of them beside one tensor of rank 0 (0.8): too few sightings to call step 7 a swap
// when the data (unrelated across ranks) cannot tell.
SyntheticScript ReusedBuffers() {
  return Steps(2, 24, [](int step, DataStep& d) {
    d.counts = {3000, 2000, 2000, 2000, 2000, 2000, 2000};
    d.positions = 2;
    d.independent = true;
    d.tensor_at = [step](int p, int pos) {
      if (pos == 0) return 1;
      return 2 + (p == 1 && step == 7 ? 8 : step) % 6;
    };
    d.data_at = [](int, int pos) { return pos + 1; };
  });
}

// Persistent buffers over 40 steps with data unrelated across ranks; in step 20 rank 1 passes
// its position-1 buffer again at position 2. That buffer sat at position 1 in 40 of its 41
// sightings: the buffers alone make the suspicion, which the data cannot settle.
SyntheticScript DuplicateTensorUncorrelated() {
  return Steps(2, 40, [](int step, DataStep& d) {
    d.independent = true;
    if (step != 20) return;
    d.tensor_at = [](int p, int pos) { return p == 1 && pos == 2 ? 2 : pos + 1; };
  });
}

// Recorded without --sketch: rank 1 passes its position-1 buffer again at position 2 in step
// `at` of `steps`. Over 40 steps that buffer sat at position 1 in 40 of 41 sightings, enough for
// the buffers alone; over 8 steps, 8 of 9 are too few (the bound is 0.62).
SyntheticScript UnsketchedDuplicate(int steps, int at) {
  return Steps(2, steps, [at](int step, DataStep& d) {
    d.sketched = false;
    if (step != at) return;
    d.tensor_at = [](int p, int pos) { return p == 1 && pos == 2 ? 2 : pos + 1; };
  });
}

// AMP-style overflow: an Inf gradient on rank 0 and a NaN on rank 1 in step 1.
SyntheticScript NonFinite() {
  return Steps(2, 3, [](int step, DataStep& d) {
    if (step != 1) return;
    d.input = [](int p, int pos, std::vector<float>& send) {
      if (pos == 0 && p == 0) send[10] = INFINITY;
      if (pos == 0 && p == 1) send[20] = NAN;
      if (pos == 2 && p == 1) send[7] = -INFINITY;
    };
  });
}

// The third allreduce of every step is a max (e.g. a global grad-norm bound).
SyntheticScript MaxOp() {
  return Steps(2, 3, [](int, DataStep& d) {
    d.op = [](int pos) { return pos == 2 ? int32_t(RedOp::kMax) : int32_t(RedOp::kSum); };
  });
}

// Step 0: an avg and a PreMulSum (rank p scales by 1 / 2^(p+1)) per step; `misrecorded`: in
// step 2 rank 1's op was made with another scalar than the one its record states (0.3 for 0.25),
// so every output of that call differs from what the recorded scalars combine to.
SyntheticScript ScaledReductions(bool misrecorded) {
  return Steps(2, 3, [=](int step, DataStep& d) {
    d.op = [](int pos) { return pos == 0 ? int32_t(RedOp::kAvg) : pos == 1 ? 5 : 0; };
    d.scalar = [](int p) { return 1.0 / double(2 << p); };
    if (misrecorded && step == 2)
      d.recorded_scalar = [](int p) { return p == 1 ? 0.3 : 1.0 / double(2 << p); };
  });
}

// Pipeline-style Send/Recv from rank 0 to rank 1; the 2nd transfer arrives with one element
// changed.
SyntheticScript P2pWrongCopy() {
  ScriptBuilder b(2);
  const int pp = b.Comm(0xda7a000000000002ull, "pp", {0, 1});
  for (int step = 0; step < 3; ++step) {
    const std::vector<float> act = Gradient(7, step, 0, 2048);
    std::vector<float> got = act;
    if (step == 1) got[5] = -got[5];
    ScriptCall s;
    s.api = Api::kSend;
    s.comm = pp;
    s.count = act.size();
    s.root_peer = 1;
    s.tensor = 1;
    s.sketches = SketchCallBuffers(Api::kSend, 2, 0, false, act, act, {});
    b.On(0, s);
    ScriptCall r = s;
    r.api = Api::kRecv;
    r.root_peer = 0;
    r.sketches = SketchCallBuffers(Api::kRecv, 2, 1, false, {}, {}, got);
    b.On(1, r);
  }
  return b.s;
}

// Gradients of very few directions (the samples of one tensor move together): each rank's data
// at each step a random mix of two patterns every tensor shares, unrelated across ranks and
// steps. One step's cosines are large either way, so summed over the steps as if the 256
// samples were independent they reach a "z" of any size by chance; against the variance the
// steps themselves show they do not. No finding. (Summed as if independent, 21 of the first
// 40 seeds gave a suspected_swap; this is one of them.)
SyntheticScript LowRankData() {
  constexpr uint64_t kSalt = uint64_t{1} << 40;
  return Steps(2, 60, [](int step, DataStep& d) {
    d.counts = {3000, 2000, 2000, 1000, 2000, 2000, 4000, 2000};
    d.input = [step](int p, int pos, std::vector<float>& v) {
      const uint64_t seed =
          SplitMix((uint64_t(step) << 32 | uint64_t(p) << 8 | uint64_t(pos)) ^ kSalt);
      const float a = Uniform(seed, 0), b = Uniform(seed, 1);
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = 0.05f * Uniform(100 + pos, i) + a * Uniform(11, i) + b * Uniform(12, i);
    };
  });
}

}  // namespace

const std::vector<Scenario>& SketchScenarios() {
  static const std::vector<Scenario> kAll = {
      {"sketch_clean", Clean},
      {"sketch_wrong_sum", WrongSum},
      {"sketch_wrong_sum_everywhere", WrongSumEverywhere},
      {"sketch_output_divergence", OutputDivergence},
      {"sketch_buffer_race", BufferRace},
      {"sketch_suspected_swap", [] { return Swap(false, false); }},
      {"sketch_swap_buffers_only", [] { return Swap(true, false); }},
      {"sketch_swap_uncorrelated", [] { return Swap(false, true); }},
      {"sketch_nonfinite", NonFinite},
      {"sketch_fresh_buffers", FreshBuffers},
      {"sketch_duplicate_tensor", DuplicateTensor},
      {"sketch_reused_buffers", ReusedBuffers},
      {"sketch_duplicate_uncorrelated", DuplicateTensorUncorrelated},
      {"unsketched_duplicate_long", [] { return UnsketchedDuplicate(40, 20); }},
      {"unsketched_duplicate_short", [] { return UnsketchedDuplicate(8, 3); }},
      {"sketch_max_op", MaxOp},
      {"sketch_p2p_wrong_copy", P2pWrongCopy},
      {"sketch_scaled_reductions", [] { return ScaledReductions(false); }},
      {"sketch_premulsum_misrecorded", [] { return ScaledReductions(true); }},
      {"sketch_low_rank_data", LowRankData},
  };
  return kAll;
}

}  // namespace ncclrr::testing
