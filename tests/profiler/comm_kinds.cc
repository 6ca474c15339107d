// ncclrr-comm-kinds: one process drives every visible GPU (at least two) through each way NCCL
// makes a communicator (InitAll, InitRank, InitRankConfig nonblocking with a name,
// InitRankScalable, Split with colors and NCCL_SPLIT_NOCOLOR, Shrink) and issues a few calls on
// each, so that the profiler-plugin route and the preload route can be compared communicator by
// communicator (tests/gpu/profiler_acceptance.sh). Exit 0 when every step ran, 2 on setup errors.
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda_rt.h"

using ncclrr::gpu_test::CudaRt;

namespace {

CudaRt g_rt;
int g_ndev = 0;
std::vector<void*> g_bufs, g_streams;

bool Ok(ncclResult_t r, const char* what) {
  if (r == ncclSuccess || r == ncclInProgress) return true;
  std::fprintf(stderr, "%s: %s\n", what, ncclGetErrorString(r));
  return false;
}

void WaitReady(const std::vector<ncclComm_t>& comms) {
  for (ncclComm_t c : comms) {
    if (c == nullptr) continue;
    ncclResult_t st = ncclInProgress;
    while (st == ncclInProgress) ncclCommGetAsyncError(c, &st);
  }
}

void Sync() {
  for (int d = 0; d < g_ndev; ++d) {
    g_rt.SetDevice(d);
    g_rt.Check(g_rt.StreamSynchronize(g_streams[d]), "cudaStreamSynchronize");
  }
}

// A few calls on every rank of `comms` (entry d drives device d; null entries sit out).
void Exercise(const char* kind, const std::vector<ncclComm_t>& comms) {
  int n = 0;
  for (ncclComm_t c : comms) n += c != nullptr;
  auto each = [&](auto&& call) {
    ncclGroupStart();
    for (int d = 0; d < g_ndev; ++d)
      if (comms[d] != nullptr) call(d, comms[d], static_cast<cudaStream_t>(g_streams[d]));
    ncclGroupEnd();
    WaitReady(comms);
    Sync();
  };
  float* b = nullptr;
  each([&](int d, ncclComm_t c, cudaStream_t s) {
    b = static_cast<float*>(g_bufs[d]);
    ncclAllReduce(b, b, 256, ncclFloat, ncclSum, c, s);
  });
  each([&](int d, ncclComm_t c, cudaStream_t s) {
    b = static_cast<float*>(g_bufs[d]);
    ncclBroadcast(b, b, 64, ncclFloat, 0, c, s);
  });
  each([&](int d, ncclComm_t c, cudaStream_t s) {
    b = static_cast<float*>(g_bufs[d]);
    int rank = 0, size = 0;
    ncclCommUserRank(c, &rank);
    ncclCommCount(c, &size);
    ncclAllGather(b, b + 1024, 16, ncclFloat, c, s);
    ncclReduceScatter(b, b + 4096, 8, ncclFloat, ncclSum, c, s);
    // A ring of sends and receives.
    ncclSend(b, 32, ncclFloat, (rank + 1) % size, c, s);
    ncclRecv(b + 8192, 32, ncclFloat, (rank + size - 1) % size, c, s);
  });
  std::printf("kind %-22s ranks %d: allreduce, broadcast, allgather, reducescatter, send/recv\n",
              kind, n);
}

void Destroy(std::vector<ncclComm_t>& comms) {
  for (ncclComm_t& c : comms)
    if (c != nullptr) ncclCommDestroy(c), c = nullptr;
}

}  // namespace

int main() {
  g_rt = CudaRt::Load();
  g_rt.Check(g_rt.GetDeviceCount(&g_ndev), "cudaGetDeviceCount");
  if (g_ndev < 2) {
    std::fprintf(stderr,
                 "ncclrr-comm-kinds needs two GPUs (NCCL raises no profiler events for "
                 "a one-rank communicator); found %d\n",
                 g_ndev);
    return 2;
  }
  g_bufs.resize(g_ndev);
  g_streams.resize(g_ndev);
  for (int d = 0; d < g_ndev; ++d) {
    g_rt.SetDevice(d);
    g_rt.Check(g_rt.Malloc(&g_bufs[d], 1 << 20), "cudaMalloc");
    g_rt.Check(g_rt.Memset(g_bufs[d], 0, 1 << 20), "cudaMemset");
    g_rt.Check(g_rt.StreamCreate(&g_streams[d]), "cudaStreamCreate");
  }
  std::vector<ncclComm_t> world(g_ndev, nullptr);
  if (!Ok(ncclCommInitAll(world.data(), g_ndev, nullptr), "ncclCommInitAll")) return 2;
  Exercise("InitAll", world);

  auto init_ranks = [&](const char* kind, bool nonblocking, const char* name, bool scalable) {
    std::vector<ncclComm_t> comms(g_ndev, nullptr);
    ncclUniqueId id;
    if (!Ok(ncclGetUniqueId(&id), "ncclGetUniqueId")) return;
    ncclGroupStart();
    for (int d = 0; d < g_ndev; ++d) {
      g_rt.SetDevice(d);
      ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
      cfg.blocking = nonblocking ? 0 : 1;
      if (name != nullptr) cfg.commName = name;
      if (scalable) {
        Ok(ncclCommInitRankScalable(&comms[d], g_ndev, d, 1, &id, &cfg), kind);
      } else if (nonblocking || name != nullptr) {
        Ok(ncclCommInitRankConfig(&comms[d], g_ndev, id, d, &cfg), kind);
      } else {
        Ok(ncclCommInitRank(&comms[d], g_ndev, id, d), kind);
      }
    }
    ncclGroupEnd();
    WaitReady(comms);
    Exercise(kind, comms);
    Destroy(comms);
  };
  init_ranks("InitRank", false, nullptr, false);
  init_ranks("InitRankConfig(nb)", true, "nonblocking-comm", false);
  init_ranks("InitRankScalable", false, nullptr, true);

  // Splits of the world: every split advances the parent's ordinal, NOCOLOR ones included.
  auto split = [&](const char* kind, auto color_of) {
    std::vector<ncclComm_t> comms(g_ndev, nullptr);
    ncclGroupStart();
    for (int d = 0; d < g_ndev; ++d)
      Ok(ncclCommSplit(world[d], color_of(d), d, &comms[d], nullptr), kind);
    ncclGroupEnd();
    WaitReady(comms);
    return comms;
  };
  auto same = split("Split(color 0)", [](int) { return 0; });
  Exercise("Split(color 0)", same);
  // Ranks apart: rank 0 alone (one rank: no events), the others together when there are 3+.
  auto apart = split("Split(NOCOLOR)", [](int d) { return d == 0 ? 5 : NCCL_SPLIT_NOCOLOR; });
  auto again = split("Split(color 7)", [](int) { return 7; });
  Exercise("Split(color 7, after NOCOLOR)", again);
  auto nested = split("Split(of world, 3rd)", [](int) { return 1; });
  Exercise("Split(3rd of world)", nested);

  // Shrink (NCCL 2.27+): excluding no rank keeps every rank.
  std::vector<ncclComm_t> shrunk(g_ndev, nullptr);
  bool shrink_ok = true;
  ncclGroupStart();
  for (int d = 0; d < g_ndev; ++d)
    shrink_ok &= Ok(ncclCommShrink(world[d], nullptr, 0, &shrunk[d], nullptr, NCCL_SHRINK_DEFAULT),
                    "ncclCommShrink");
  ncclGroupEnd();
  if (shrink_ok) {
    WaitReady(shrunk);
    Exercise("Shrink(exclude none)", shrunk);
  } else {
    std::printf("kind Shrink: skipped (this NCCL refuses a shrink that excludes no rank)\n");
  }
  Destroy(shrunk);
  Destroy(nested);
  Destroy(again);
  Destroy(apart);
  Destroy(same);
  Destroy(world);
  std::printf("comm kinds done\n");
  return 0;
}
