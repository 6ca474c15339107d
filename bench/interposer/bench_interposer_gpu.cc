// bench-interposer-gpu: an allreduce latency loop on real NCCL (direct link to libnccl.so.2, as
// PyTorch and nccl-tests reach it), run by tests/gpu/interposer_acceptance.sh with and without
// `ncclrr record`, interleaved. Each iteration enqueues one allreduce per local rank and waits
// for it, so the time per iteration is the host-visible latency of a small collective.
//
//   bench-interposer-gpu --group N [--iters K]        one process drives N GPUs (group calls)
//   bench-interposer-gpu --rank R --nranks N --id FILE one rank per process (rank 0 writes FILE)
//   ... --graph K   then capture K allreduces into a CUDA graph and launch it 10 times
//
// Prints "size_bytes S median_us M p10_us A p90_us B" per size (8 B to 64 KB) and "check ok"
// when every result was right (the process exits 1 otherwise).
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "gpu_check.h"
#include "ncclrr/base/args.h"

namespace {

struct Local {  // one rank driven by this process
  int device;
  ncclComm_t comm;
  cudaStream_t stream;
  float* send;
  float* recv;
};

constexpr size_t kMaxBytes = 64 << 10;

std::vector<Local> Setup(int argc, char** argv, int* nranks) {
  int group = 0, rank = -1;
  std::string idfile;
  ncclrr::Args args("bench-interposer-gpu", argc, argv);
  args.Option("--group").Option("--rank").Option("--nranks").Option("--id");
  args.Option("--iters").Option("--graph").Parse();  // main's
  group = static_cast<int>(args.GetInt("--group", group));
  rank = static_cast<int>(args.GetInt("--rank", rank));
  *nranks = static_cast<int>(args.GetInt("--nranks", *nranks));
  idfile = args.GetOr("--id", idfile);
  std::vector<Local> locals;
  if (group > 0) {
    *nranks = group;
    std::vector<ncclComm_t> comms(group);
    std::vector<int> devs(group);
    for (int d = 0; d < group; ++d) devs[d] = d;
    CHECK_NCCL(ncclCommInitAll(comms.data(), group, devs.data()));
    for (int d = 0; d < group; ++d) locals.push_back({d, comms[d], nullptr, nullptr, nullptr});
  } else if (rank >= 0 && !idfile.empty()) {
    ncclUniqueId id;
    if (rank == 0) {
      CHECK_NCCL(ncclGetUniqueId(&id));
      std::ofstream(idfile + ".tmp", std::ios::binary).write(id.internal, sizeof id.internal);
      std::rename((idfile + ".tmp").c_str(), idfile.c_str());
    } else {
      for (int i = 0; i < 3000; ++i) {
        std::ifstream f(idfile, std::ios::binary);
        if (f && f.read(id.internal, sizeof id.internal)) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    int ndev = 0;
    CHECK_CUDA(cudaGetDeviceCount(&ndev));
    const int dev = rank % ndev;
    CHECK_CUDA(cudaSetDevice(dev));
    ncclComm_t comm;
    CHECK_NCCL(ncclCommInitRank(&comm, *nranks, id, rank));
    locals.push_back({dev, comm, nullptr, nullptr, nullptr});
  } else {
    std::fprintf(stderr,
                 "usage: bench-interposer-gpu --group N | --rank R --nranks N --id FILE "
                 "[--iters K] [--graph K]\n");
    std::exit(2);
  }
  const std::vector<float> ones(kMaxBytes / sizeof(float), 1.0f);
  for (Local& l : locals) {
    CHECK_CUDA(cudaSetDevice(l.device));
    CHECK_CUDA(cudaStreamCreateWithFlags(&l.stream, cudaStreamNonBlocking));
    CHECK_CUDA(cudaMalloc(&l.send, kMaxBytes));
    CHECK_CUDA(cudaMalloc(&l.recv, kMaxBytes));
    CHECK_CUDA(cudaMemcpy(l.send, ones.data(), kMaxBytes, cudaMemcpyHostToDevice));
  }
  return locals;
}

void AllReduceOnce(std::vector<Local>& locals, size_t count, float* in, float* out) {
  if (locals.size() > 1) CHECK_NCCL(ncclGroupStart());
  for (Local& l : locals)
    CHECK_NCCL(ncclAllReduce(in ? in : l.send, out ? out : l.recv, count, ncclFloat, ncclSum,
                             l.comm, l.stream));
  if (locals.size() > 1) CHECK_NCCL(ncclGroupEnd());
  for (Local& l : locals) CHECK_CUDA(cudaStreamSynchronize(l.stream));
}

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * (v.size() - 1))];
}

// Captures `k` in-place allreduces of one element into a graph and launches it 10 times, then
// one live allreduce: the element, 1 at first, ends as nranks^(10 k + 1).
bool GraphRun(std::vector<Local>& locals, int nranks, int k) {
  if (locals.size() != 1) {
    std::fprintf(stderr, "--graph needs one local rank (rank mode or --group 1)\n");
    return false;
  }
  Local& l = locals[0];
  CHECK_CUDA(cudaSetDevice(l.device));
  float one = 1.0f;
  CHECK_CUDA(cudaMemcpy(l.recv, &one, sizeof one, cudaMemcpyHostToDevice));
  AllReduceOnce(locals, 1, l.send, l.send);  // warm up outside the capture
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK_CUDA(cudaStreamBeginCapture(l.stream, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < k; ++i)
    CHECK_NCCL(ncclAllReduce(l.recv, l.recv, 1, ncclFloat, ncclSum, l.comm, l.stream));
  CHECK_CUDA(cudaStreamEndCapture(l.stream, &graph));
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 10; ++i) CHECK_CUDA(cudaGraphLaunch(exec, l.stream));
  CHECK_CUDA(cudaStreamSynchronize(l.stream));
  AllReduceOnce(locals, 1, l.recv, l.recv);  // a live call after the launches
  float got = 0;
  CHECK_CUDA(cudaMemcpy(&got, l.recv, sizeof got, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
  double want = 1;
  for (int i = 0; i < 10 * k + 1; ++i) want *= nranks;
  std::printf("graph %d allreduces x 10 launches: %g (want %g)\n", k, got, want);
  return got == static_cast<float>(want);
}

}  // namespace

int main(int argc, char** argv) {
  int nranks = 1, iters = 2000, graph = 0;
  {
    ncclrr::Args args("bench-interposer-gpu", argc, argv);
    args.Option("--group").Option("--rank").Option("--nranks").Option("--id");  // Setup's
    args.Option("--iters").Option("--graph").Parse();
    iters = std::max(10, static_cast<int>(args.GetInt("--iters", iters)));
    graph = static_cast<int>(args.GetInt("--graph", graph));
  }
  std::vector<Local> locals = Setup(argc, argv, &nranks);
  bool ok = true;
  for (size_t bytes : {8, 64, 512, 4096, 32768, 65536}) {
    const size_t count = bytes / sizeof(float) == 0 ? 1 : bytes / sizeof(float);
    for (int i = 0; i < 50; ++i) AllReduceOnce(locals, count, nullptr, nullptr);
    std::vector<double> us(iters);
    for (int i = 0; i < iters; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      AllReduceOnce(locals, count, nullptr, nullptr);
      us[i] =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    }
    float got = 0;
    CHECK_CUDA(cudaSetDevice(locals[0].device));
    CHECK_CUDA(cudaMemcpy(&got, locals[0].recv, sizeof got, cudaMemcpyDeviceToHost));
    ok &= got == static_cast<float>(nranks);
    std::printf("size_bytes %zu median_us %.2f p10_us %.2f p90_us %.2f\n", count * sizeof(float),
                Percentile(us, 0.5), Percentile(us, 0.1), Percentile(us, 0.9));
    std::fflush(stdout);
  }
  if (graph > 0) ok &= GraphRun(locals, nranks, graph);
  for (Local& l : locals) {
    CHECK_CUDA(cudaSetDevice(l.device));
    CHECK_CUDA(cudaFree(l.send));
    CHECK_CUDA(cudaFree(l.recv));
    CHECK_NCCL(ncclCommDestroy(l.comm));
  }
  std::printf("%s\n", ok ? "check ok" : "check FAILED");
  return ok ? 0 : 1;
}
