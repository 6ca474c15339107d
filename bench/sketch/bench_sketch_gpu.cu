// bench-sketch-gpu: issue 6's benchmark of `record --sketch` on real NCCL. AllReduce and
// ReduceScatter of floats (sum), in place and out of place, from 8 B to 1 GB (powers of 4, then
// 1 GB), one rank per process; tests/gpu/sketch_bench.sh runs it with no recording, under
// `ncclrr record` and under `ncclrr record --sketch`, interleaved over rounds.
//
//   bench-sketch-gpu --rank R --nranks N --id FILE [--max-bytes B] [--small-iters K]
//
// Each iteration enqueues one call and waits for its stream: the time is the call's latency as
// the host sees it (at large sizes, its duration). Sizes are the larger buffer (ReduceScatter's
// send). At sizes up to 64 KB every iteration is followed by a second one that launches an empty
// kernel on the same stream right after the call, so the cost of one kernel launch on that stream
// is measured in the same run, interleaved with the plain calls. Prints one line per case:
//   op allreduce place out bytes S iters K median_us M p10_us A p90_us B host_us H empty_us E
// (host_us: median time of the NCCL call itself; empty_us: median with the empty kernel, -1 when
// not measured), then "check ok" when every result was right (exit 1 otherwise). Out of place the
// send buffer holds ones (every result is N); in place zeros (results stay 0 however often the
// call repeats).
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

namespace {

__global__ void EmptyKernel() {}

__global__ void FillKernel(float* p, size_t n, float v) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    p[i] = v;
}

constexpr size_t kEmptyUpTo = 64 << 10;  // sizes that also measure an empty kernel launch

struct Rank {
  int rank = 0, nranks = 1;
  ncclComm_t comm;
  cudaStream_t stream;
  float* a = nullptr;  // send (out of place) or the one buffer (in place)
  float* b = nullptr;  // recv (out of place)
};

ncclUniqueId ExchangeId(int rank, const std::string& file) {
  ncclUniqueId id;
  if (rank == 0) {
    CHECK_NCCL(ncclGetUniqueId(&id));
    std::ofstream(file + ".tmp", std::ios::binary).write(id.internal, sizeof id.internal);
    std::rename((file + ".tmp").c_str(), file.c_str());
    return id;
  }
  for (int i = 0; i < 6000; ++i) {
    std::ifstream f(file, std::ios::binary);
    if (f && f.read(id.internal, sizeof id.internal)) return id;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::fprintf(stderr, "no unique id in %s after 60 s\n", file.c_str());
  std::exit(2);
}

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * double(v.size() - 1))];
}

double NowUs() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Case {
  bool reduce_scatter;
  bool in_place;
  size_t bytes;
};

// Enqueues the case's call once.
void Issue(const Rank& r, const Case& c) {
  const size_t elems = std::max<size_t>(c.bytes / sizeof(float), size_t(r.nranks));
  if (c.reduce_scatter) {
    const size_t rc = elems / size_t(r.nranks);
    float* recv = c.in_place ? r.a + size_t(r.rank) * rc : r.b;
    CHECK_NCCL(ncclReduceScatter(r.a, recv, rc, ncclFloat, ncclSum, r.comm, r.stream));
  } else {
    CHECK_NCCL(
        ncclAllReduce(r.a, c.in_place ? r.a : r.b, elems, ncclFloat, ncclSum, r.comm, r.stream));
  }
}

// The first and last element of the result.
bool Verify(const Rank& r, const Case& c) {
  const size_t elems = std::max<size_t>(c.bytes / sizeof(float), size_t(r.nranks));
  const size_t n = c.reduce_scatter ? elems / size_t(r.nranks) : elems;
  const float* out = c.in_place ? (c.reduce_scatter ? r.a + size_t(r.rank) * n : r.a) : r.b;
  float first = -1, last = -1;
  CHECK_CUDA(cudaMemcpy(&first, out, sizeof first, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(&last, out + n - 1, sizeof last, cudaMemcpyDeviceToHost));
  const float want = c.in_place ? 0.0f : float(r.nranks);
  if (first == want && last == want) return true;
  std::fprintf(stderr, "wrong result: %s %s %zu B: got %g .. %g, want %g\n",
               c.reduce_scatter ? "reducescatter" : "allreduce", c.in_place ? "in" : "out", c.bytes,
               first, last, want);
  return false;
}

bool RunCase(const Rank& r, const Case& c, int small_iters) {
  const size_t elems = std::max<size_t>(c.bytes / sizeof(float), size_t(r.nranks));
  FillKernel<<<1024, 256, 0, r.stream>>>(r.a, elems, c.in_place ? 0.0f : 1.0f);
  CHECK_CUDA(cudaStreamSynchronize(r.stream));
  const double scaled = 16.0 * double(1 << 30) / double(c.bytes);
  const int iters = int(std::clamp(scaled, 10.0, double(small_iters)));
  const bool empty = c.bytes <= kEmptyUpTo;
  for (int i = 0; i < 5; ++i) Issue(r, c);
  CHECK_CUDA(cudaStreamSynchronize(r.stream));
  std::vector<double> us, host, with_empty;
  for (int i = 0; i < iters; ++i) {
    double t0 = NowUs();
    Issue(r, c);
    const double t1 = NowUs();
    CHECK_CUDA(cudaStreamSynchronize(r.stream));
    us.push_back(NowUs() - t0);
    host.push_back(t1 - t0);
    if (!empty) continue;
    t0 = NowUs();
    Issue(r, c);
    EmptyKernel<<<1, 32, 0, r.stream>>>();
    CHECK_CUDA(cudaStreamSynchronize(r.stream));
    with_empty.push_back(NowUs() - t0);
  }
  CHECK_CUDA(cudaGetLastError());
  std::printf(
      "op %s place %s bytes %zu iters %d median_us %.2f p10_us %.2f p90_us %.2f host_us %.2f "
      "empty_us %.2f\n",
      c.reduce_scatter ? "reducescatter" : "allreduce", c.in_place ? "in" : "out", c.bytes, iters,
      Percentile(us, 0.5), Percentile(us, 0.1), Percentile(us, 0.9), Percentile(host, 0.5),
      empty ? Percentile(with_empty, 0.5) : -1.0);
  std::fflush(stdout);
  return Verify(r, c);
}

}  // namespace

int main(int argc, char** argv) {
  Rank r;
  std::string idfile;
  size_t max_bytes = size_t(1) << 30;
  int small_iters = 500;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--rank")
      r.rank = std::atoi(argv[i + 1]);
    else if (a == "--nranks")
      r.nranks = std::atoi(argv[i + 1]);
    else if (a == "--id")
      idfile = argv[i + 1];
    else if (a == "--max-bytes")
      max_bytes = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--small-iters")
      small_iters = std::max(10, std::atoi(argv[i + 1]));
  }
  if (idfile.empty() || r.nranks < 1 || r.rank < 0 || r.rank >= r.nranks) {
    std::fprintf(stderr,
                 "usage: bench-sketch-gpu --rank R --nranks N --id FILE [--max-bytes B] "
                 "[--small-iters K]\n");
    return 2;
  }
  const ncclUniqueId id = ExchangeId(r.rank, idfile);
  int ndev = 0;
  CHECK_CUDA(cudaGetDeviceCount(&ndev));
  CHECK_CUDA(cudaSetDevice(r.rank % ndev));
  CHECK_NCCL(ncclCommInitRank(&r.comm, r.nranks, id, r.rank));
  CHECK_CUDA(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
  CHECK_CUDA(cudaMalloc(&r.a, max_bytes));
  CHECK_CUDA(cudaMalloc(&r.b, max_bytes));
  std::vector<size_t> sizes;
  for (size_t b = 8; b <= max_bytes; b *= 4) sizes.push_back(b);
  if (sizes.back() != max_bytes) sizes.push_back(max_bytes);
  bool ok = true;
  for (bool rs : {false, true})
    for (bool in_place : {true, false})
      for (size_t bytes : sizes) ok &= RunCase(r, {rs, in_place, bytes}, small_iters);
  CHECK_CUDA(cudaFree(r.a));
  CHECK_CUDA(cudaFree(r.b));
  CHECK_NCCL(ncclCommDestroy(r.comm));
  std::printf("%s\n", ok ? "check ok" : "check FAILED");
  return ok ? 0 : 1;
}
