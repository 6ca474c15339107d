// Data-parallel SGD in plain C++/CUDA with hand-written gradient averaging, the way C++ training
// code that links NCCL itself does it (TensorFlow's nccl_ops.all_sum is one: NCCL linked
// statically into the framework). One process per rank; rank 0 publishes NCCL's unique id in a
// file the others wait for.
//
// Model: a 4-layer MLP's parameters (w1 64x128, b1, w2 128x128, b2, w3 128x128, b3, w4 128x10,
// b4). Per step, as a framework does: the backward pass writes every gradient, last layer first,
// into a buffer newly taken from the stream-ordered allocator (cudaMallocAsync, so addresses
// repeat only as the pool hands them out again); then the gradients are all-reduced in place in
// parameter order and freed; then the loss is all-reduced, and every 5th step the per-rank
// accuracies are all-gathered. Gradients are
// pseudo-random functions of (rank, step, parameter, element), so every rank can compute every
// rank's contribution on the host and check each result without any other collective.
//
//   cpp_sgd --rank R --world W --id-file F [--steps 30] [--bug none|swap-same|swap-diff]
//           [--swap-steps 5,12,20]
// --bug swap-same: rank 1 all-reduces w3's gradient before w2's (both 128x128) at --swap-steps;
// --bug swap-diff: rank 1 all-reduces b2 before w2 (128 vs 16384 elements) at the first of them
// (hangs on real NCCL, or corrupts).
// Prints "#wrong N" (results that differ from the sum of the contributions); exit 0 when N is 0.
//
// Build: nvcc -O2 -arch=sm_90 cpp_sgd.cu -I$NCCL/include -o cpp_sgd_dynamic -L$NCCL/lib -lnccl
//        nvcc -O2 -arch=sm_90 cpp_sgd.cu -I$NCCL/include -o cpp_sgd_static \
//             $NCCL/lib/libnccl_static.a -lpthread -ldl -lrt
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#define CUDA_OK(x)                                                                            \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(2);                                                                           \
    }                                                                                         \
  } while (0)
#define NCCL_OK(x)                                                                            \
  do {                                                                                        \
    ncclResult_t r_ = (x);                                                                    \
    if (r_ != ncclSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, ncclGetErrorString(r_)); \
      std::exit(2);                                                                           \
    }                                                                                         \
  } while (0)

namespace {

struct Param {
  const char* name;
  size_t numel;
};
const std::vector<Param> kParams = {{"w1", 64 * 128},  {"b1", 128}, {"w2", 128 * 128}, {"b2", 128},
                                    {"w3", 128 * 128}, {"b3", 128}, {"w4", 128 * 10},  {"b4", 10}};

// The gradient element a rank contributes: small integers / 64 (so sums of a few ranks are
// exact), smaller for earlier layers, as gradients of deeper layers tend to be.
float Grad(int rank, int step, size_t param, size_t i) {
  uint64_t x = (uint64_t(rank) << 48) ^ (uint64_t(step) << 32) ^ (uint64_t(param) << 24) ^ i;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return static_cast<float>(static_cast<int>(x % 257) - 128) / float(64 << (param / 2));
}

__global__ void Scale(float* p, const float* g, float lr, size_t n) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) p[i] -= lr * g[i];
}

ncclUniqueId ShareId(int rank, const std::string& file) {
  ncclUniqueId id;
  if (rank == 0) {
    NCCL_OK(ncclGetUniqueId(&id));
    const std::string tmp = file + ".tmp";
    std::ofstream(tmp, std::ios::binary).write(reinterpret_cast<const char*>(&id), sizeof id);
    std::rename(tmp.c_str(), file.c_str());
    return id;
  }
  for (int i = 0; i < 6000; ++i) {  // up to 60 s
    std::ifstream in(file, std::ios::binary);
    if (in.read(reinterpret_cast<char*>(&id), sizeof id)) return id;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::fprintf(stderr, "rank %d: no unique id in %s after 60 s\n", rank, file.c_str());
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  int rank = -1, world = 0, steps = 30;
  std::string id_file, bug = "none", swap_list = "5,12,20";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--rank")
      rank = std::atoi(v.c_str());
    else if (a == "--world")
      world = std::atoi(v.c_str());
    else if (a == "--id-file")
      id_file = v;
    else if (a == "--steps")
      steps = std::atoi(v.c_str());
    else if (a == "--bug")
      bug = v;
    else if (a == "--swap-steps")
      swap_list = v;
  }
  if (rank < 0 || world < 1 || id_file.empty()) {
    std::fprintf(stderr, "usage: %s --rank R --world W --id-file F [--steps N] [--bug B]\n",
                 argv[0]);
    return 2;
  }
  std::set<int> swap_steps;
  for (size_t p = 0; p < swap_list.size();) {
    const size_t q = swap_list.find(',', p);
    swap_steps.insert(std::atoi(swap_list.substr(p, q - p).c_str()));
    if (q == std::string::npos) break;
    p = q + 1;
  }
  if (bug == "swap-diff" && !swap_steps.empty()) swap_steps = {*swap_steps.begin()};

  int devices = 0;
  CUDA_OK(cudaGetDeviceCount(&devices));
  CUDA_OK(cudaSetDevice(rank % devices));
  const ncclUniqueId id = ShareId(rank, id_file);
  ncclComm_t comm;
  NCCL_OK(ncclCommInitRank(&comm, world, id, rank));
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  std::vector<float*> params(kParams.size());
  for (size_t p = 0; p < kParams.size(); ++p) {
    CUDA_OK(cudaMalloc(&params[p], kParams[p].numel * sizeof(float)));
    CUDA_OK(cudaMemsetAsync(params[p], 0, kParams[p].numel * sizeof(float), stream));
    NCCL_OK(ncclBroadcast(params[p], params[p], kParams[p].numel, ncclFloat, 0, comm, stream));
  }

  long wrong = 0;
  std::vector<float> host;
  for (int step = 0; step < steps; ++step) {
    std::vector<size_t> order(kParams.size());
    for (size_t p = 0; p < order.size(); ++p) order[p] = p;
    if (rank == 1 && bug != "none" && swap_steps.count(step)) {
      const size_t other = bug == "swap-same" ? 4 : 3;  // w3 or b2 before w2
      std::swap(order[2], order[other]);
      std::printf("[rank 1] step %d: %s before w2 (swapped)\n", step, kParams[other].name);
    }
    // Backward pass: the gradients come out last layer first, each in a buffer fresh from the
    // allocator (so a buffer's address says which gradient it holds only within the step).
    std::vector<float*> grads(kParams.size());
    for (size_t p = kParams.size(); p-- > 0;) {
      const size_t n = kParams[p].numel;
      host.resize(n);
      for (size_t i = 0; i < n; ++i) host[i] = Grad(rank, step, p, i);
      CUDA_OK(cudaMallocAsync(&grads[p], n * sizeof(float), stream));
      CUDA_OK(cudaMemcpyAsync(grads[p], host.data(), n * sizeof(float), cudaMemcpyHostToDevice,
                              stream));
      CUDA_OK(cudaStreamSynchronize(stream));  // `host` is reused for the next gradient
    }
    // Then the gradients are all-reduced in parameter order (the order rank 1 may get wrong).
    for (size_t p : order)
      NCCL_OK(
          ncclAllReduce(grads[p], grads[p], kParams[p].numel, ncclFloat, ncclSum, comm, stream));
    float* loss;
    CUDA_OK(cudaMallocAsync(&loss, sizeof(float), stream));
    const float my_loss = 1.0f + rank + step / 64.0f;
    CUDA_OK(cudaMemcpyAsync(loss, &my_loss, sizeof my_loss, cudaMemcpyHostToDevice, stream));
    NCCL_OK(ncclAllReduce(loss, loss, 1, ncclFloat, ncclSum, comm, stream));
    float* accs = nullptr;
    if (step % 5 == 0) {
      CUDA_OK(cudaMallocAsync(&accs, world * sizeof(float), stream));
      const float my_acc = 0.5f + rank / 8.0f;
      CUDA_OK(cudaMemcpyAsync(accs + rank, &my_acc, sizeof my_acc, cudaMemcpyHostToDevice, stream));
      NCCL_OK(ncclAllGather(accs + rank, accs, 1, ncclFloat, comm, stream));
    }
    CUDA_OK(cudaStreamSynchronize(stream));

    for (size_t p = 0; p < kParams.size(); ++p) {  // check, then apply the averaged gradient
      const size_t n = kParams[p].numel;
      host.resize(n);
      CUDA_OK(cudaMemcpy(host.data(), grads[p], n * sizeof(float), cudaMemcpyDeviceToHost));
      size_t bad = 0;
      for (size_t i = 0; i < n; ++i) {
        float want = 0;
        for (int r = 0; r < world; ++r) want += Grad(r, step, p, i);
        bad += std::fabs(host[i] - want) > 1e-4f * world;
      }
      if (bad > 0) {
        ++wrong;
        std::printf("[rank %d] step %d: %s gradient wrong in %zu of %zu elements\n", rank, step,
                    kParams[p].name, bad, n);
      }
      Scale<<<(n + 255) / 256, 256, 0, stream>>>(params[p], grads[p], 0.01f / world, n);
      CUDA_OK(cudaFreeAsync(grads[p], stream));
    }
    float got_loss = 0;
    CUDA_OK(cudaMemcpy(&got_loss, loss, sizeof got_loss, cudaMemcpyDeviceToHost));
    float want_loss = 0;
    for (int r = 0; r < world; ++r) want_loss += 1.0f + r + step / 64.0f;
    if (std::fabs(got_loss - want_loss) > 1e-4f) ++wrong;
    CUDA_OK(cudaFreeAsync(loss, stream));
    if (accs) {
      std::vector<float> got(world);
      CUDA_OK(cudaMemcpy(got.data(), accs, world * sizeof(float), cudaMemcpyDeviceToHost));
      for (int r = 0; r < world; ++r) wrong += got[r] != 0.5f + r / 8.0f;
      CUDA_OK(cudaFreeAsync(accs, stream));
    }
    if (rank == 0 && step % 10 == 0)
      std::printf("[rank 0] step %d loss %.3f\n", step, got_loss / world);
  }
  CUDA_OK(cudaStreamSynchronize(stream));
  NCCL_OK(ncclCommDestroy(comm));
  std::printf("[rank %d] #wrong %ld\n", rank, wrong);
  return wrong == 0 ? 0 : 1;
}
