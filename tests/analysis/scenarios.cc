#include "scenarios.h"

#include <algorithm>

namespace ncclrr::testing {

ScriptCall AllReduce(uint64_t count, int tensor, Dtype dtype) {
  ScriptCall c;
  c.api = Api::kAllReduce;
  c.count = count;
  c.tensor = tensor;
  c.dtype = dtype;
  return c;
}

ScriptCall Collective(Api api, uint64_t count, int tensor, int root) {
  ScriptCall c;
  c.api = api;
  c.count = count;
  c.tensor = tensor;
  c.root_peer = root;
  return c;
}

namespace {

ScriptCall Lifecycle(Api api) {
  ScriptCall c;
  c.api = api;
  c.count = 0;
  return c;
}

ScriptCall P2p(Api api, uint64_t count, int peer, int tensor, uint64_t group = 0) {
  ScriptCall c;
  c.api = api;
  c.count = count;
  c.root_peer = peer;
  c.tensor = tensor;
  c.group = group;
  return c;
}

std::vector<int> Range(int n) {
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i) v[i] = i;
  return v;
}

// A training-like step: one allreduce per tensor, counts[i] for tensor i + 1. `order` (tensor
// indices) changes the issue order on the processes it is given for.
void Step(ScriptBuilder& b, int comm, const std::vector<uint64_t>& counts,
          const std::function<void(int process, std::vector<int>& order)>& reorder = nullptr) {
  for (int p : b.s.comms[comm].members) {
    std::vector<int> order = Range(static_cast<int>(counts.size()));
    if (reorder) reorder(p, order);
    for (int i : order) {
      ScriptCall c = AllReduce(counts[i], i + 1);
      c.comm = comm;
      b.On(p, c);
    }
  }
}

const std::vector<uint64_t> kBuckets = {1728, 36864, 512};
const std::vector<uint64_t> kSameShape = {1728, 36864, 36864, 512};

SyntheticScript CleanTwoRanks() {
  ScriptBuilder b(2);
  const int dp = b.Comm(0x11, "dp", {0, 1});
  for (int step = 0; step < 6; ++step) Step(b, dp, kSameShape);
  return b.s;
}

SyntheticScript CleanManyComms() {
  ScriptBuilder b(8);
  const int world = b.Comm(0x100, "world", Range(8));
  std::vector<int> tp, dp;
  for (int k = 0; k < 4; ++k)
    tp.push_back(b.Comm(0x200 + k, "tp" + std::to_string(k), {2 * k, 2 * k + 1}));
  dp.push_back(b.Comm(0x300, "dp.even", {0, 2, 4, 6}));
  dp.push_back(b.Comm(0x301, "dp.odd", {1, 3, 5, 7}));
  for (ScriptComm& c : b.s.comms)
    if (c.id != 0x100) {
      c.parent = 0x100;
      c.origin = CommOrigin::kSplit;
    }
  b.All(world, Lifecycle(Api::kCommSplit));
  b.All(world, Lifecycle(Api::kCommSplit));
  b.All(world, Collective(Api::kBroadcast, 16, 9, 0));
  for (int step = 0; step < 3; ++step) {
    for (int c : tp) {
      b.All(c, Collective(Api::kAllGather, 256, 1));
      b.All(c, Collective(Api::kReduceScatter, 128, 2));
    }
    for (int c : dp) b.All(c, AllReduce(4096, 3));
    for (int p = 0; p < 8; ++p) {  // a ring exchange in one group
      ScriptCall s = P2p(Api::kSend, 64, (p + 1) % 8, 4, step + 1);
      ScriptCall r = P2p(Api::kRecv, 64, (p + 7) % 8, 5, step + 1);
      s.comm = r.comm = world;
      b.On(p, s);
      b.On(p, r);
    }
    b.All(world, Collective(Api::kReduce, 32, 6, 2));
    b.All(world, Collective(Api::kAlltoAll, 8, 7));
  }
  for (size_t c = 0; c < b.s.comms.size(); ++c)
    b.All(static_cast<int>(c), Lifecycle(Api::kCommDestroy));
  return b.s;
}

SyntheticScript CountMismatch() {
  ScriptBuilder b(4);
  const int dp = b.Comm(0x5a17c0de00000001ull, "dp", Range(4));
  for (int step = 0; step < 5; ++step) {
    b.All(dp, AllReduce(1728, 1));
    b.All(dp, AllReduce(36864, 2), [&](int p, ScriptCall& c) {
      if (p == 2 && step >= 2) c.count = 36928;
    });
    b.All(dp, AllReduce(512, 3));
  }
  return b.s;
}

SyntheticScript AllGatherCount() {
  ScriptBuilder b(4);
  const int w = b.Comm(0x21, "world", Range(4));
  for (int step = 0; step < 2; ++step) {
    b.All(w, Collective(Api::kAllGather, 1000, 1), [&](int p, ScriptCall& c) {
      if (p == 3 && step == 1) c.count = 1024;
    });
    b.All(w, AllReduce(10, 2));
  }
  return b.s;
}

SyntheticScript DtypeMismatch() {
  ScriptBuilder b(2);
  const int w = b.Comm(0x22, "world", {0, 1});
  for (int step = 0; step < 3; ++step)
    b.All(w, AllReduce(4096, 1), [&](int p, ScriptCall& c) {
      if (p == 1 && step == 1) c.dtype = Dtype::kFloat16;
    });
  return b.s;
}

SyntheticScript OpMismatch() {
  ScriptBuilder b(3);
  const int w = b.Comm(0x23, "world", Range(3));
  for (int step = 0; step < 2; ++step) {
    b.All(w, AllReduce(100, 1));
    b.All(w, Collective(Api::kBroadcast, 100, 2, 0), [&](int p, ScriptCall& c) {
      if (p == 2 && step == 1) c = AllReduce(100, 2);
    });
  }
  return b.s;
}

// Every step all-reduces two tensors, each from its own statement (call sites 1 and 2); at step 2
// rank 2 broadcasts from a statement none of its calls came from before (site 3: a branch only it
// took) where the others all-reduce tensor 2, then goes on like them.
SyntheticScript BranchFirstSite() {
  ScriptBuilder b(3);
  const int w = b.Comm(0x25, "world", Range(3));
  for (int step = 0; step < 4; ++step) {
    b.All(w, AllReduce(100, 1), [](int, ScriptCall& c) { c.callsite = 1; });
    b.All(w, AllReduce(200, 2), [&](int p, ScriptCall& c) {
      c.callsite = 2;
      if (p == 2 && step == 2) {
        c = Collective(Api::kBroadcast, 50, 3, 0);
        c.callsite = 3;
      }
    });
  }
  return b.s;
}

SyntheticScript RedopMismatch() {
  ScriptBuilder b(3);
  const int w = b.Comm(0x24, "world", Range(3));
  for (int step = 0; step < 3; ++step)
    b.All(w, AllReduce(64, 1), [&](int p, ScriptCall& c) {
      if (p == 1 && step == 2) c.op = 2;  // max
    });
  return b.s;
}

SyntheticScript RootMismatch() {
  ScriptBuilder b(4);
  const int w = b.Comm(0x25, "world", Range(4));
  for (int step = 0; step < 3; ++step)
    b.All(w, Collective(Api::kBroadcast, 256, 1, 0), [&](int p, ScriptCall& c) {
      if (p == 3 && step == 0) c.root_peer = 1;
    });
  return b.s;
}

SyntheticScript OrderSwap() {
  ScriptBuilder b(2);
  const int dp = b.Comm(0x5a17c0de00000001ull, "synthetic.dp", {0, 1});
  for (int step = 0; step < 8; ++step)
    Step(b, dp, kBuckets, [&](int p, std::vector<int>& o) {
      if (p == 1 && step >= 5) std::swap(o[0], o[1]);
    });
  return b.s;
}

SyntheticScript SuspectedSwap(bool call_sites) {
  ScriptBuilder b(4);
  const int dp = b.Comm(0x31, "dp", Range(4));
  for (int step = 0; step < 8; ++step)
    Step(b, dp, kSameShape, [&](int p, std::vector<int>& o) {
      if (p == 3 && step == 2) std::swap(o[1], o[2]);
    });
  if (call_sites)
    for (ScriptProcess& p : b.s.processes)
      for (ScriptCall& c : p.calls) c.callsite = static_cast<uint32_t>(c.tensor);
  return b.s;
}

// A training loop as real jobs run it: the ranks allocate alike, so a tensor has the same address
// on every rank within a step, but every step's gradients are new tensors (new addresses); a
// broadcast at the start, a loss allreduce per step and an allgather every third step interleave.
// `swap_steps`: steps at which the last rank all-reduces its two same-size gradients in the
// opposite order (different sizes with `diff_size`, after which the trace ends: a hang). With
// `call_site`, every call carries one call site (a loop, as --stacks records it).
SyntheticScript FreshBuffers(std::vector<int> swap_steps, bool diff_size, bool call_site) {
  ScriptBuilder b(2);
  b.s.same_addresses = true;
  const int dp = b.Comm(0x81, "default_pg", {0, 1});
  const uint64_t last = diff_size ? 2048 : 128;
  const std::vector<uint64_t> grads = {4096, 16384, 16384, 128, last};
  const int steps = 10;
  int next_tensor = 1;
  b.All(dp, Collective(Api::kBroadcast, 20000, next_tensor++, 0));
  for (int step = 0; step < steps; ++step) {
    const int first = next_tensor;
    next_tensor += static_cast<int>(grads.size());
    const bool swap = std::count(swap_steps.begin(), swap_steps.end(), step) > 0;
    for (int p = 0; p < 2; ++p) {
      std::vector<int> order = Range(static_cast<int>(grads.size()));
      if (p == 1 && swap) std::swap(order[diff_size ? 3 : 1], order[diff_size ? 4 : 2]);
      for (int i : order) {
        ScriptCall c = AllReduce(grads[i], first + i);
        c.comm = dp;
        b.On(p, c);
      }
    }
    if (diff_size && swap) {  // NCCL pairs 128 with 2048 elements: every rank hangs in the next
      ScriptCall loss = AllReduce(1, next_tensor++);
      loss.in_flight = true;
      b.All(dp, loss);
      break;
    }
    b.All(dp, AllReduce(1, next_tensor++));  // the loss, for logging
    if (step % 3 == 2) b.All(dp, Collective(Api::kAllGather, 64, next_tensor++));
  }
  if (call_site)
    for (ScriptProcess& p : b.s.processes)
      for (ScriptCall& c : p.calls) c.callsite = 1;
  return b.s;
}

// Four ranks whose buffers stay put from step to step (a caching allocator in its steady
// state), rank 0's in a layout of its own (it keeps diagnostics on the GPU): its buffers sit
// where no other rank's do. Every 9th step rank 0's allocator hands the buffer it holds at
// position 6 to position 4, and position 6 gets a new one: a buffer seen beside one tensor in 53
// of 60 steps and beside another in the rest, which is rank 0's allocator, not a swap. Rank 2
// really swaps two same-size gradients at steps 5 and 12. Ranks 1-3 allocate alike, so the
// reference is rank 1: one suspected_swap (rank 2), nothing on rank 0.
SyntheticScript OddAllocator() {
  ScriptBuilder b(4);
  b.s.same_addresses = true;
  const int dp = b.Comm(0x0dd, "default_pg", {0, 1, 2, 3});
  constexpr int kPositions = 12, kSteps = 60;
  for (int step = 0; step < kSteps; ++step) {
    for (int p = 0; p < 4; ++p) {
      std::vector<int> order = Range(kPositions);
      if (p == 2 && (step == 5 || step == 12)) std::swap(order[4], order[6]);
      for (int i : order) {
        int tensor = 1 + i;
        if (p == 0) {
          tensor = 200 + (i * 37) % 101;
          if (step % 9 == 4 && i == 4) tensor = 200 + (6 * 37) % 101;
          if (step % 9 == 4 && i == 6) tensor = 500 + step;
        }
        ScriptCall c = AllReduce(i % 2 == 0 ? 16384 : 128, tensor);
        c.comm = dp;
        b.On(p, c);
      }
    }
    b.All(dp, AllReduce(1, 1000));  // the loss, for logging
  }
  return b.s;
}

// Two process groups over the same two ranks used in opposite orders: each rank blocks in its
// first collective (NCCL connects lazily, in the calling thread), which is in the trace only as
// an in-flight record; the job was then killed.
SyntheticScript CrossCommInFlight() {
  ScriptBuilder b(2);
  b.s.same_addresses = true;
  const int a = b.Comm(0xa3, "", {0, 1});
  const int c = b.Comm(0xb3, "", {0, 1});
  ScriptCall x = AllReduce(4096, 1), y = AllReduce(4096, 2);
  x.comm = a;
  y.comm = c;
  x.in_flight = y.in_flight = true;
  b.On(0, x);
  b.On(1, y);
  for (ScriptProcess& p : b.s.processes) p.close = false;
  return b.s;
}

SyntheticScript MissingCallEnd() {
  ScriptBuilder b(4);
  const int dp = b.Comm(0x41, "dp", Range(4));
  for (int step = 0; step < 5; ++step) Step(b, dp, kBuckets);
  b.s.processes[1].calls.resize(10);  // rank 1 stops after seq 9
  return b.s;
}

SyntheticScript MissingCallSkip() {
  ScriptBuilder b(3);
  const int dp = b.Comm(0x42, "dp", Range(3));
  for (int step = 0; step < 6; ++step)
    Step(b, dp, kBuckets, [&](int p, std::vector<int>& o) {
      if (p == 2 && step == 2) o.pop_back();  // rank 2 skips AllReduce(512) once
    });
  return b.s;
}

// As the host NCCL runs ncclrr-example missing-collective: every call blocks until its peers
// arrive, so after rank 1 skips an allreduce both ranks stop in the mispaired call and the
// trace holds the same number of calls for both.
SyntheticScript MissingCallBlocked() {
  ScriptBuilder b(2);
  const int w = b.Comm(0x44, "world", {0, 1});
  for (int step = 0; step < 2; ++step) {
    for (int p = 0; p < 2; ++p) {
      std::vector<ScriptCall> calls = {AllReduce(1024, 1), AllReduce(1024, 2), AllReduce(256, 3),
                                       Collective(Api::kBroadcast, 512, 4, 0)};
      if (step == 1) calls.resize(p == 1 ? 3 : 2);
      if (step == 1 && p == 1) calls.erase(calls.begin() + 1);
      for (ScriptCall c : calls) {
        c.comm = w;
        b.On(p, c);
      }
    }
  }
  return b.s;
}

// Uneven inputs: rank 0's share of the data holds one more step than the others'. Each step
// broadcasts the model's buffers, all-reduces two gradient buckets and the loss, and every third
// step gathers metrics (an all_gather_object: sizes, then bytes). Rank 0 begins a seventh step
// while ranks 1-3 go on to the gather after the loop: NCCL pairs rank 0's broadcast with their
// gather, and rank 0's next call hangs.
SyntheticScript UnevenSteps() {
  ScriptBuilder b(4);
  const int dp = b.Comm(0x45, "dp", Range(4));
  auto on = [&](int p, ScriptCall c, Dtype dtype = Dtype::kFloat32) {
    c.comm = dp;
    c.dtype = dtype;
    b.On(p, c);
  };
  for (int p = 0; p < 4; ++p) {
    const int steps = p == 0 ? 7 : 6;
    for (int step = 0; step < steps; ++step) {
      on(p, Collective(Api::kBroadcast, 384, 1, 0));
      on(p, AllReduce(1728, 2));
      if (step == 6) break;  // the extra step: hung in its first all-reduce
      on(p, AllReduce(36864, 3));
      on(p, AllReduce(1, 4));
      if (step % 3 == 0) {
        on(p, Collective(Api::kAllGather, 1, 5, -1), Dtype::kInt64);
        on(p, Collective(Api::kAllGather, 40 + static_cast<uint64_t>(step), 6, -1), Dtype::kUint8);
      }
    }
    if (p != 0) on(p, Collective(Api::kAllGather, 1, 5, -1), Dtype::kInt64);
  }
  b.s.processes[0].calls.back().in_flight = true;
  for (int p = 1; p < 4; ++p) b.s.processes[p].calls.back().in_flight = true;
  return b.s;
}

// A step skipped on one rank: each step all-reduces a gradient bucket and the loss, every
// fourth step adds a validation sum. Rank 1 skips step 6 (a guard only it took) and goes on, so
// its validation after step 8 meets rank 0's step 8 bucket, and rank 1's later steps carry on
// after it (this rank issues asynchronously: its trace goes on).
SyntheticScript SkippedStep() {
  ScriptBuilder b(2);
  const int dp = b.Comm(0x46, "dp", Range(2));
  auto on = [&](int p, ScriptCall c) {
    c.comm = dp;
    b.On(p, c);
  };
  for (int p = 0; p < 2; ++p)
    for (int step = 0; step < 11; ++step) {
      if (p == 1 && step == 6) continue;
      on(p, AllReduce(65536, 2));
      on(p, AllReduce(1, 3));
      if (step % 4 == 0) on(p, AllReduce(3, 4));
    }
  return b.s;
}

SyntheticScript ExtraCall() {
  ScriptBuilder b(3);
  const int dp = b.Comm(0x43, "dp", Range(3));
  for (int step = 0; step < 6; ++step) {
    Step(b, dp, kBuckets);
    if (step == 3)
      b.On(0, [&] {
        ScriptCall c = AllReduce(4, 9);
        c.comm = dp;
        return c;
      }());
  }
  return b.s;
}

SyntheticScript P2pMismatch() {
  ScriptBuilder b(2);
  const int pp = b.Comm(0x51, "pp", {0, 1});
  for (int step = 0; step < 4; ++step) {
    ScriptCall s = P2p(Api::kSend, 1024, 1, 1);
    ScriptCall r = P2p(Api::kRecv, step == 2 ? 512 : 1024, 0, 2);
    s.comm = r.comm = pp;
    b.On(0, s);
    b.On(1, r);
  }
  ScriptCall extra = P2p(Api::kSend, 8, 1, 3);
  extra.comm = pp;
  b.On(0, extra);
  return b.s;
}

// Three ranks exchange around a ring with blocking calls, each sending to the next and then
// receiving from the previous, in matched grouped pairs for 3 steps; in step 3 every rank
// receives first (ungrouped), so each waits in a Recv whose Send its peer never reaches: one
// recv-cycle finding, with the advice for ranks that receive before they send (not the
// rooted-operation reading: the Recvs are not a root's grouped ones).
SyntheticScript RecvFirstRing() {
  ScriptBuilder b(3);
  const int ring = b.Comm(0x71, "ring", {0, 1, 2});
  for (int step = 0; step < 3; ++step)
    for (int p = 0; p < 3; ++p) {
      ScriptCall s = P2p(Api::kSend, 1024, (p + 1) % 3, 1, 100 + step * 3 + p);
      ScriptCall r = P2p(Api::kRecv, 1024, (p + 2) % 3, 2, 100 + step * 3 + p);
      s.comm = r.comm = ring;
      b.On(p, s);
      b.On(p, r);
    }
  for (int p = 0; p < 3; ++p) {
    ScriptCall r = P2p(Api::kRecv, 1024, (p + 2) % 3, 2);
    r.comm = ring;
    r.in_flight = true;
    b.On(p, r);
    b.s.processes[p].close = false;
  }
  return b.s;
}

SyntheticScript CrossCommOrder() {
  ScriptBuilder b(2);
  const int a = b.Comm(0xa1, "A", {0, 1});
  const int c = b.Comm(0xb1, "B", {0, 1});
  for (int step = 0; step < 2; ++step) {
    ScriptCall x = AllReduce(1024, 1), y = AllReduce(2048, 2);
    x.comm = a;
    y.comm = c;
    b.On(0, x);
    b.On(0, y);
    b.On(1, step == 1 ? y : x);
    b.On(1, step == 1 ? x : y);
  }
  return b.s;
}

SyntheticScript CrossCommBlocked() {
  ScriptBuilder b(2);
  const int a = b.Comm(0xa2, "A", {0, 1});
  const int c = b.Comm(0xb2, "B", {0, 1});
  ScriptCall x = AllReduce(1024, 1), y = AllReduce(2048, 2);
  x.comm = a;
  y.comm = c;
  b.On(0, x);  // each rank blocks in its first call: neither issues the second
  b.On(1, y);
  return b.s;
}

// Two groups over the same ranks, neither split from the other: "world" all-reduces the loss
// (one float) and the gradients every step; at step 5 rank 0 evaluates first (its first call on
// "eval", one float too) while rank 1 all-reduces its loss: each blocks in its call. The call
// new on "eval" was routine on "world", but "eval" is no default group: an order of two
// communicators or a wrong group, both readings.
SyntheticScript CrossCommFirstUse() {
  ScriptBuilder b(2);
  const int world = b.Comm(0xc1, "world", {0, 1});
  const int eval = b.Comm(0xc2, "eval", {0, 1});
  int tensor = 1;
  for (int step = 0; step < 5; ++step) {
    ScriptCall loss = AllReduce(1, tensor++), grad = AllReduce(4096, tensor++);
    loss.comm = grad.comm = world;
    b.All(world, loss);
    b.All(world, grad);
  }
  ScriptCall metric = AllReduce(1, tensor++), loss = AllReduce(1, tensor++);
  metric.comm = eval;
  loss.comm = world;
  metric.in_flight = loss.in_flight = true;
  b.On(0, metric);
  b.On(1, loss);
  return b.s;
}

// Four ranks: "metrics" split from "world", both over every rank. Each step all-reduces the
// gradients on "world" and three metrics on "metrics"; at step 4 rank 3's metrics call leaves
// out its group and goes to "world" (its first metrics call there), while the others issue it
// on "metrics": each side blocks. A call sent to the default group, named as such.
SyntheticScript WrongGroup() {
  ScriptBuilder b(4);
  const int world = b.Comm(0xd1, "world", Range(4));
  const int metrics = b.Comm(0xd2, "metrics", Range(4));
  b.s.comms[metrics].parent = 0xd1;
  b.s.comms[metrics].origin = CommOrigin::kSplit;
  int tensor = 1;
  for (int step = 0; step < 5; ++step) {
    ScriptCall grad = AllReduce(4096, tensor++), stats = AllReduce(3, tensor++);
    grad.comm = world;
    stats.comm = metrics;
    b.All(world, grad);
    if (step < 4) {
      b.All(metrics, stats);
      continue;
    }
    stats.in_flight = true;
    for (int p = 0; p < 4; ++p) {
      ScriptCall c = stats;
      c.comm = p == 3 ? world : metrics;
      b.On(p, c);
    }
  }
  return b.s;
}

// Each process captures two allreduces into a graph (ids differ per process) and launches it.
SyntheticScript Graphs(bool template_differs, bool launches_differ, int warmup = 1,
                       bool killed = false) {
  ScriptBuilder b(2);
  const int w = b.Comm(0x61, "graphs", {0, 1});
  for (int p = 0; p < 2; ++p) {
    const uint64_t graph = 0x6000 + p;
    ScriptCall eager = AllReduce(16, 1);
    eager.comm = w;
    for (int k = 0; k < warmup; ++k) b.On(p, eager);
    b.s.processes[p].close = !killed;
    for (int k = 0; k < 2; ++k) {
      ScriptCall t = AllReduce(k == 0 ? 1024 : 2048, 2 + k);
      t.comm = w;
      t.capture = 1;
      t.graph = graph;
      if (template_differs && p == 1 && k == 1) t.count = 4096;
      b.On(p, t);
    }
    const int launches = launches_differ && p == 1 ? 2 : 3;
    for (int l = 0; l < launches; ++l) {
      ScriptCall launch;
      launch.launch_graph = graph;
      b.On(p, launch);
    }
    b.On(p, eager);
  }
  return b.s;
}

SyntheticScript LifecycleErrors() {
  ScriptBuilder b(3);
  const int c = b.Comm(0x71, "lifecycle", Range(3));
  b.All(c, AllReduce(8, 1));
  b.All(c, AllReduce(8, 1));
  b.On(1, [&] {
    ScriptCall d = Lifecycle(Api::kCommDestroy);
    d.comm = c;
    return d;
  }());
  b.All(c, AllReduce(8, 1));  // rank 1 issues it after destroying the comm
  for (int p : {0, 2}) {
    ScriptCall f = Lifecycle(Api::kCommFinalize);
    f.comm = c;
    b.On(p, f);
  }
  return b.s;
}

SyntheticScript SplitMismatch() {
  ScriptBuilder b(4);
  const int world = b.Comm(0x81, "world", Range(4));
  const int sub = b.Comm(0x82, "sub", {0, 1, 2});
  b.s.comms[sub].parent = 0x81;
  b.s.comms[sub].origin = CommOrigin::kSplit;
  b.All(world, AllReduce(8, 1));
  for (int p : {0, 1, 2}) {
    ScriptCall s = Lifecycle(Api::kCommSplit);
    s.comm = world;
    b.On(p, s);
  }
  b.All(sub, AllReduce(8, 2));
  return b.s;
}

SyntheticScript NcclErrors() {
  ScriptBuilder b(2);
  const int w = b.Comm(0x91, "world", {0, 1});
  for (int step = 0; step < 3; ++step)
    b.All(w, AllReduce(128, 1), [&](int p, ScriptCall& c) {
      if (p == 1 && step == 1) c.result = 6;  // ncclRemoteError
    });
  ScriptCall async = Lifecycle(Api::kAsyncErrorChange);
  async.comm = w;
  async.result = 6;
  b.On(0, async);
  return b.s;
}

SyntheticScript RingModeClean() {
  ScriptBuilder b(4);
  const int dp = b.Comm(0xd1, "dp", Range(4));
  for (int step = 0; step < 20; ++step) Step(b, dp, kBuckets);
  for (int p = 0; p < 4; ++p) b.s.processes[p].ring_keep = 10 + 3 * p;
  return b.s;
}

SyntheticScript RingModeSwap() {
  ScriptBuilder b(2);
  const int dp = b.Comm(0xd2, "dp", {0, 1});
  for (int step = 0; step < 20; ++step)
    Step(b, dp, kBuckets, [&](int p, std::vector<int>& o) {
      if (p == 1 && step == 19) std::swap(o[1], o[2]);
    });
  for (ScriptProcess& p : b.s.processes) p.ring_keep = 12;
  return b.s;
}

SyntheticScript TornFile() {
  ScriptBuilder b(3);
  const int dp = b.Comm(0xe1, "dp", Range(3));
  for (int step = 0; step < 10; ++step) Step(b, dp, kBuckets);
  for (ScriptProcess& p : b.s.processes) p.flush_every = 6;
  b.s.processes[2].close = false;
  b.s.processes[2].truncate_bytes = 40;  // the last frame is cut: where rank 2 stopped is lost
  b.s.processes[2].calls.resize(20);
  return b.s;
}

SyntheticScript UnclosedAlive() {
  ScriptBuilder b(3);
  const int dp = b.Comm(0xe2, "dp", Range(3));
  for (int step = 0; step < 10; ++step) Step(b, dp, kBuckets);
  b.s.processes[1].close = false;  // killed after a long wait: its file has no footer ...
  b.s.processes[1].calls.resize(20);
  b.s.processes[1].alive_until_ns = 30'000'000'000;  // ... but it was alive 30 s later
  return b.s;
}

SyntheticScript MissingRankFile() {
  ScriptBuilder b(3);
  const int dp = b.Comm(0xe3, "dp", Range(3));
  b.s.comms[dp].nranks_override = 4;  // rank 3's process was not recorded
  for (int step = 0; step < 3; ++step) Step(b, dp, kBuckets);
  return b.s;
}

// Call sites are stacks: one statement (site 1: the gradient loop, site 2: a helper), reached from
// callers. Every step all-reduces three gradients from the loop (caller 1), then the loss and the
// accuracy through the helper (callers 10 and 11). `swap`: rank 1 reduces the accuracy first at
// every step, from the first (a set of metric names iterated per process): the buffers cannot tell,
// the callers can. Otherwise rank 1 reaches the gradient loop from caller 2 from step 3 on, a path
// rank 0 never took, with the same buffers: the same tensors, nothing to report.
SyntheticScript HelperPaths(bool swap) {
  ScriptBuilder b(2);
  b.s.same_addresses = true;
  const int dp = b.Comm(0x91, "default_pg", {0, 1});
  const std::vector<uint64_t> grads = {4096, 16384, 16384};
  for (int step = 0; step < 10; ++step) {
    for (int p = 0; p < 2; ++p) {
      for (size_t i = 0; i < grads.size(); ++i) {
        ScriptCall c = AllReduce(grads[i], static_cast<int>(i) + 1);
        c.comm = dp;
        c.callsite = 1;
        c.caller = !swap && p == 1 && step >= 3 ? 2 : 1;
        b.On(p, c);
      }
      std::vector<int> metrics = {10, 11};
      if (swap && p == 1) std::swap(metrics[0], metrics[1]);
      for (int m : metrics) {
        ScriptCall c = AllReduce(1, m);
        c.comm = dp;
        c.callsite = 2;
        c.caller = static_cast<uint32_t>(m);
        b.On(p, c);
      }
    }
  }
  return b.s;
}

SyntheticScript ManyRanks() {
  ScriptBuilder b(64);
  const int w = b.Comm(0xf1, "world", Range(64));
  for (int step = 0; step < 10; ++step) {
    b.All(w, AllReduce(1000, 1));
    b.All(w, Collective(Api::kAllGather, 64, 2), [&](int p, ScriptCall& c) {
      if (p == 37 && step == 4) c.count = 65;
    });
    b.All(w, Collective(Api::kReduceScatter, 32, 3));
  }
  return b.s;
}

// An MPI C++ job on a 2 x 2 grid of ranks (tests/gpu/realjobs/cpp_grid.cu): "world" split into
// rows (tensor parallel) and columns (data parallel), persistent buffers. Per step: the row
// all-reduces the activations, the column two same-shape gradients; every 3rd step a halo
// Send/Recv along the row (a group), every 4th an all-to-all on world; the loss on world. The
// communicators are nonblocking and the host waits for the GPU after each step, so a hang leaves
// every call of the step issued; a watchdog then aborts every communicator and MPI ends the job.
SyntheticScript Grid(const std::string& bug, int steps = 12, int bug_step = 5) {
  ScriptBuilder b(4);
  const int world = b.Comm(0xd0, "world", Range(4));
  const int rows[2] = {b.Comm(0xd1, "row0", {0, 1}), b.Comm(0xd2, "row1", {2, 3})};
  const int cols[2] = {b.Comm(0xd3, "col0", {0, 2}), b.Comm(0xd4, "col1", {1, 3})};
  for (int c = 1; c < 5; ++c) {
    b.s.comms[c].parent = 0xd0;
    b.s.comms[c].origin = CommOrigin::kSplit;
  }
  constexpr int kAct = 1, kGradA = 2, kGradB = 3, kHalo = 4, kBlocks = 5, kLoss = 6;
  constexpr int8_t kInProgress = 7;  // a nonblocking communicator's answer until it is done
  for (int p = 0; p < 4; ++p) {
    for (Api api : {Api::kCommInitRankConfig, Api::kCommSplit, Api::kCommSplit}) {
      ScriptCall c = Lifecycle(api);
      c.comm = world;
      c.result = kInProgress;
      b.On(p, c);
    }
    for (int tensor : {kGradA, kGradB}) {
      ScriptCall r = Lifecycle(Api::kCommRegister);
      r.comm = cols[p % 2];
      r.tensor = tensor;
      r.result = kInProgress;
      b.On(p, r);
    }
  }
  bool hung = false;
  for (int step = 0; step < steps; ++step) {
    for (int p = 0; p < 4; ++p) {
      const int row = p / 2, col = p % 2;
      auto on = [&](int comm, ScriptCall c) {
        c.comm = comm;
        b.On(p, c);
      };
      auto act = [&] { on(rows[row], AllReduce(8192, kAct)); };
      auto grads = [&] {
        if (bug.starts_with("skip-overflow") && p == 3 && step == bug_step) return;
        const bool swapped =
            bug == "swap-persist" && p == 2 && (step == bug_step || step == bug_step + 2);
        if (bug == "cross-order-coalesced") {  // the gradients of 5 layers in one group
          for (int layer = 0; layer < 5; ++layer) {
            ScriptCall g = AllReduce(65536, 10 + layer);
            g.group = 1000 + step;
            on(cols[col], g);
          }
          return;
        }
        on(cols[col], AllReduce(65536, swapped ? kGradB : kGradA));
        on(cols[col], AllReduce(65536, swapped ? kGradA : kGradB));
      };
      if (bug == "cross-order-blocking" && step == bug_step) {
        // A blocking host: each rank stops inside the first call of its order.
        ScriptCall c =
            AllReduce((row + col) % 2 == 1 ? 65536 : 8192, (row + col) % 2 == 1 ? kGradA : kAct);
        c.in_flight = true;
        on((row + col) % 2 == 1 ? cols[col] : rows[row], c);
        continue;
      }
      if ((bug == "cross-order" || bug == "cross-order-rows-columns" ||
           bug == "cross-order-coalesced" || bug == "cross-order-exit") &&
          step == bug_step && (row + col) % 2 == 1) {
        grads();
        act();
      } else {
        act();
        grads();
      }
      if (step % 3 == 2) {
        const uint64_t sent = bug == "halo-size" && step == bug_step && p == 1 ? 260 : 256;
        on(rows[row], P2p(Api::kSend, sent, 1 - col, kAct, step + 1));
        on(rows[row], P2p(Api::kRecv, 256, 1 - col, kHalo, step + 1));
      }
      if (bug == "cross-order-rows-columns") continue;  // "world" only split
      if (step % 4 == 3) on(world, Collective(Api::kAlltoAll, 512, kBlocks));
      on(world, AllReduce(1, kLoss));
    }
    if ((bug == "cross-order" || bug == "cross-order-blocking" || bug == "cross-order-coalesced" ||
         bug == "cross-order-exit" || bug == "cross-order-rows-columns" || bug == "halo-size" ||
         bug == "skip-overflow") &&
        step == bug_step) {
      hung = true;
      break;
    }
  }
  // A host that never waits for the GPU goes on issuing every step past the deadlock.
  if (bug == "skip-overflow-async") hung = true;
  for (int p = 0; p < 4; ++p) {
    const int comms[3] = {cols[p % 2], rows[p / 2], world};
    for (int i = 0; i < 3; ++i) {
      ScriptCall end = Lifecycle(hung ? Api::kCommAbort : Api::kCommFinalize);
      end.comm = comms[i];
      if (hung && i == 0) end.gap_ns = 15'000'000'000;  // the watchdog's timeout
      b.On(p, end);
    }
    // MPI_Abort ends every process; a watchdog that aborts and returns from main closes them.
    b.s.processes[p].close = !hung || bug == "cross-order-exit";
  }
  return b.s;
}

// Three process groups over pairs of three ranks (A = {0, 1}, B = {1, 2}, C = {2, 0}), each on
// its own stream as PyTorch gives every process group one; no group holds every rank. At step 3
// each rank issues its second group's call first: a triangle of waits, where separate streams
// may or may not let NCCL's kernels overlap.
SyntheticScript PairGroupsTriangle() {
  ScriptBuilder b(3);
  const int groups[3] = {b.Comm(0xe1, "A", {0, 1}), b.Comm(0xe2, "B", {1, 2}),
                         b.Comm(0xe3, "C", {2, 0})};
  for (int step = 0; step < 4; ++step)
    for (int p = 0; p < 3; ++p) {
      // Rank p is in groups p (with p + 1) and p - 1 (with p - 1).
      int order[2] = {groups[p], groups[(p + 2) % 3]};
      if (step == 3) std::swap(order[0], order[1]);
      for (int g : order) {
        ScriptCall c = AllReduce(4096, 1 + g);
        c.comm = g;
        c.stream = 0x100 + static_cast<uint64_t>(g);
        b.On(p, c);
      }
    }
  for (ScriptProcess& p : b.s.processes) p.close = false;  // hung, then killed
  return b.s;
}

// A = {0, 1, 3}, B = {0, 1, 2}, C = {2, 3}: ranks 0 and 1 share A and B and always agree on
// their order (A first); rank 2 issues B then C; rank 3 A then C, but C then A at step 3. No two
// ranks disagree on a pair, yet A, B and C wait round a cycle.
SyntheticScript SharedPairAgreesCycle() {
  ScriptBuilder b(4);
  const int a = b.Comm(0xf1, "A", {0, 1, 3}), c_b = b.Comm(0xf2, "B", {0, 1, 2}),
            c = b.Comm(0xf3, "C", {2, 3});
  auto on = [&](int p, int comm, uint64_t count) {
    ScriptCall x = AllReduce(count, 1 + comm);
    x.comm = comm;
    b.On(p, x);
  };
  for (int step = 0; step < 4; ++step) {
    for (int p : {0, 1}) on(p, a, 4096), on(p, c_b, 8192);
    on(2, c_b, 8192), on(2, c, 2048);
    if (step < 3)
      on(3, a, 4096), on(3, c, 2048);
    else
      on(3, c, 2048), on(3, a, 4096);
  }
  for (ScriptProcess& p : b.s.processes) p.close = false;  // hung, then killed
  return b.s;
}

// Two communicators over the same two ranks; each step issues X, Y, X. Once, at step 1, rank 1
// issues X, X, Y, then goes back to the usual order: a reordering that makes up at once, not a
// skipped call.
SyntheticScript ReorderedOnce() {
  ScriptBuilder b(2);
  const int x = b.Comm(0xf4, "X", {0, 1}), y = b.Comm(0xf5, "Y", {0, 1});
  for (int step = 0; step < 6; ++step)
    for (int p = 0; p < 2; ++p) {
      ScriptCall first = AllReduce(16, 1), call_y = AllReduce(65536, 2), last = AllReduce(1, 3);
      first.comm = last.comm = x;
      call_y.comm = y;
      b.On(p, first);
      if (p == 1 && step == 1) {
        b.On(p, last);
        b.On(p, call_y);
      } else {
        b.On(p, call_y);
        b.On(p, last);
      }
    }
  return b.s;
}

}  // namespace

const std::vector<Scenario>& GoldenScenarios() {
  static const std::vector<Scenario> kAll = {
      {"clean_two_ranks", CleanTwoRanks},
      {"clean_many_comms", CleanManyComms},
      {"count_mismatch", CountMismatch},
      {"allgather_count", AllGatherCount},
      {"dtype_mismatch", DtypeMismatch},
      {"op_mismatch", OpMismatch},
      {"redop_mismatch", RedopMismatch},
      {"branch_first_site", BranchFirstSite},
      {"root_mismatch", RootMismatch},
      {"order_swap", OrderSwap},
      {"suspected_swap", [] { return SuspectedSwap(false); }},
      {"order_swap_callsites", [] { return SuspectedSwap(true); }},
      {"missing_call_end", MissingCallEnd},
      {"missing_call_skip", MissingCallSkip},
      {"missing_call_blocked", MissingCallBlocked},
      {"extra_call", ExtraCall},
      {"uneven_steps", UnevenSteps},
      {"skipped_step", SkippedStep},
      {"p2p_mismatch", P2pMismatch},
      {"fresh_buffers_clean", [] { return FreshBuffers({}, false, false); }},
      {"odd_allocator", OddAllocator},
      {"recv_first_ring", RecvFirstRing},
      {"fresh_buffers_swap",
       [] {
         return FreshBuffers({2, 5, 8}, false, false);
       }},
      {"fresh_buffers_swap_one_site",
       [] {
         return FreshBuffers({2, 5, 8}, false, true);
       }},
      {"fresh_buffers_diff_size_hang", [] { return FreshBuffers({4}, true, false); }},
      {"cross_comm_in_flight", CrossCommInFlight},
      {"cross_comm_order", CrossCommOrder},
      {"cross_comm_blocked", CrossCommBlocked},
      {"cross_comm_first_use", CrossCommFirstUse},
      {"cross_comm_wrong_group", WrongGroup},
      {"graphs_clean", [] { return Graphs(false, false); }},
      {"graph_template_mismatch", [] { return Graphs(true, false); }},
      {"graph_launch_mismatch", [] { return Graphs(false, true); }},
      // Killed after more calls than a file's tail holds: a check spread over processes gives
      // member 0 every call of a file with graph launches, whose seqs count the launches.
      {"graph_launch_mismatch_killed", [] { return Graphs(false, true, 1100, true); }},
      {"lifecycle_errors", LifecycleErrors},
      {"split_mismatch", SplitMismatch},
      {"nccl_errors", NcclErrors},
      {"ring_mode_clean", RingModeClean},
      {"ring_mode_swap", RingModeSwap},
      {"torn_file", TornFile},
      {"unclosed_alive", UnclosedAlive},
      {"missing_rank_file", MissingRankFile},
      {"many_ranks", ManyRanks},
      {"helper_callers_swap", [] { return HelperPaths(true); }},
      {"helper_other_path", [] { return HelperPaths(false); }},
      {"grid_clean", [] { return Grid("none"); }},
      {"grid_swap_persist", [] { return Grid("swap-persist"); }},
      {"grid_cross_order", [] { return Grid("cross-order"); }},
      {"grid_skip_overflow", [] { return Grid("skip-overflow"); }},
      {"grid_halo_size", [] { return Grid("halo-size"); }},
      {"grid_cross_order_blocking", [] { return Grid("cross-order-blocking"); }},
      {"grid_cross_order_rows_columns", [] { return Grid("cross-order-rows-columns"); }},
      // Past the last 1,024 collectives of every rank: the tails are cut.
      {"grid_cross_order_long", [] { return Grid("cross-order", 500, 460); }},
      {"grid_cross_order_coalesced", [] { return Grid("cross-order-coalesced"); }},
      {"grid_cross_order_exit", [] { return Grid("cross-order-exit"); }},
      {"grid_skip_overflow_async", [] { return Grid("skip-overflow-async"); }},
      {"pair_groups_triangle", PairGroupsTriangle},
      {"shared_pair_agrees_cycle", SharedPairAgreesCycle},
      {"cross_comm_reordered_once", ReorderedOnce},
  };
  return kAll;
}

}  // namespace ncclrr::testing
