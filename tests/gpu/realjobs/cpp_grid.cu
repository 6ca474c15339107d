// A 2-D parallel training step in C++/CUDA on a grid of ranks, written the way hand-rolled C++
// trainers and HPC codes use NCCL: MPI starts the ranks and shares NCCL's unique id; the world
// communicator is nonblocking (ncclConfig_t.blocking = 0, every call awaited by polling
// ncclCommGetAsyncError) and split into row (tensor-parallel) and column (data-parallel)
// communicators; buffers are allocated once and registered (ncclCommRegister); the host waits
// for every step under a watchdog that aborts every communicator (ncclCommAbort) and the job
// (MPI_Abort) when a step takes longer than --timeout seconds or NCCL reports an error.
//
// Grid: world / C rows of C columns (--cols C, default 2), rank = row * C + col. Per step:
//   1. the backward kernels on the compute stream write the activations' partial sums `act` and
//      two gradients gA, gB of one shape (two same-shape layers); the communication stream
//      waits for them through an event;
//   2. row all-reduce of `act` (tensor-parallel partial sums);
//   3. column all-reduce of gA, then of gB (data-parallel gradients), in place;
//   4. every 3rd step a halo exchange along the row: the first H floats of `act` sent to the
//      right neighbour and received from the left (ncclSend/ncclRecv in a group);
//   5. every 4th step ncclAlltoAll of per-rank blocks on the world communicator;
//   6. the loss: a world all-reduce of one float.
// Each contribution is a known function of (rank, step, buffer, element), small integers / 64 so
// that sums are exact: every result is compared on the host, "#wrong N", exit 1 when N > 0.
//
//   mpirun -np 4 cpp_grid [--steps 12] [--cols 2] [--timeout 20] [--bug B] [--bug-step 5]
// --bug swap-persist: at --bug-step and two steps later rank 2 all-reduces gB before gA (same
//   shape, the same registered buffers every step): silently wrong sums on its column.
// --bug race: from --bug-step on, rank 1 no longer makes the communication stream wait for the
//   backward kernels, and the one writing gA finishes late (it spins first): NCCL reads gA before
//   it is written (record --sketch to see it).
// --bug cross-order: at --bug-step the ranks whose row + col is odd (a per-node "overlap" flag)
//   all-reduce their column gradients before the row's activations: a cycle of waits across the
//   two communicators; the watchdog aborts.
// --bug skip-overflow: the last rank finds an overflow in its gradients at --bug-step and skips
//   that step's column all-reduces (decided locally, not agreed): its column partner pairs its
//   later calls with them (wrong sums) and waits for two calls at the end; the watchdog aborts.
// --bug halo-size: at the first halo step from --bug-step on, rank 1 sends 4 floats more than
//   its neighbour receives (an off-by-one at the boundary).
//
// Build (tests/gpu/realjobs/build_extras.sh grid): nvcc -O2 -arch=sm_90 cpp_grid.cu
//   -I$NCCL/include -I$MPI/include -L$NCCL/lib -lnccl -L$MPI/lib -lmpi
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#define CUDA_OK(x)                                                                            \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      MPI_Abort(MPI_COMM_WORLD, 2);                                                           \
    }                                                                                         \
  } while (0)

namespace {

enum Buffer { kAct = 0, kGradA = 1, kGradB = 2, kLoss = 3, kBlock = 100 };
constexpr size_t kGradN = 64 * 1024, kActN = 8192, kHaloN = 256, kBlockN = 512;

struct Options {
  int steps = 12, cols = 2, bug_step = 5;
  double timeout_s = 20;
  std::string bug = "none";
};

__host__ __device__ float Val(int rank, int step, int buffer, size_t i) {
  uint64_t x = (uint64_t(rank) << 48) ^ (uint64_t(step) << 36) ^ (uint64_t(buffer) << 28) ^ i;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return static_cast<float>(static_cast<int>(x % 255) - 127) / 64.0f;
}

__global__ void Backward(float* out, int rank, int step, int buffer, size_t n, long long spin) {
  if (spin > 0) {  // the late kernel of the race: busy first, as a long backward is
    const long long start = clock64();
    while (clock64() - start < spin) {
    }
  }
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = Val(rank, step, buffer, i);
}

struct Grid {
  int rank = 0, world = 1, row = 0, col = 0, cols = 1;
  int RankAt(int r, int c) const { return r * cols + c; }
};

class Watchdog {
 public:
  Watchdog(const Grid& g, double timeout_s) : grid_(g), timeout_s_(timeout_s) {}
  void Watch(ncclComm_t c) { comms_.push_back(c); }
  // Waits until `comm` finished the call just made on it (a nonblocking communicator answers
  // ncclInProgress until then; a split's new communicator is polled, not its parent).
  void Await(ncclComm_t comm, ncclResult_t r, const char* what) {
    const auto t0 = std::chrono::steady_clock::now();
    while (r == ncclSuccess || r == ncclInProgress) {
      ncclCommGetAsyncError(comm, &r);
      if (r != ncclInProgress) break;
      Expire(t0, what);
    }
    if (r != ncclSuccess) Fail(what, ncclGetErrorString(r));
  }
  // Waits for the step's work on `stream`, polling every communicator for an error.
  void AwaitStream(cudaStream_t stream, int step) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string what = "step " + std::to_string(step);
    for (;;) {
      const cudaError_t q = cudaStreamQuery(stream);
      if (q == cudaSuccess) return;
      if (q != cudaErrorNotReady) Fail(what.c_str(), cudaGetErrorString(q));
      for (ncclComm_t c : comms_) {
        ncclResult_t r = ncclSuccess;
        ncclCommGetAsyncError(c, &r);
        if (r != ncclSuccess && r != ncclInProgress) Fail(what.c_str(), ncclGetErrorString(r));
      }
      Expire(t0, what.c_str());
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

 private:
  void Expire(std::chrono::steady_clock::time_point t0, const char* what) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > timeout_s_) Fail(what, ("no progress for " + std::to_string(int(s)) + " s").c_str());
  }
  [[noreturn]] void Fail(const char* what, const char* why) {
    std::fprintf(stderr, "rank %d: watchdog: %s: %s; aborting the communicators\n", grid_.rank,
                 what, why);
    for (auto it = comms_.rbegin(); it != comms_.rend(); ++it) ncclCommAbort(*it);
    MPI_Abort(MPI_COMM_WORLD, 3);
    std::exit(3);
  }
  Grid grid_;
  double timeout_s_;
  std::vector<ncclComm_t> comms_;
};

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--steps") o.steps = std::atoi(v.c_str());
    if (a == "--cols") o.cols = std::atoi(v.c_str());
    if (a == "--timeout") o.timeout_s = std::atof(v.c_str());
    if (a == "--bug") o.bug = v;
    if (a == "--bug-step") o.bug_step = std::atoi(v.c_str());
  }
  return o;
}

// Compares `n` floats at `dev` with expect(i); returns how many differ.
template <typename Expect>
int Compare(const float* dev, size_t n, Expect&& expect) {
  std::vector<float> host(n);
  CUDA_OK(cudaMemcpy(host.data(), dev, n * sizeof(float), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (size_t i = 0; i < n; ++i) wrong += host[i] != expect(i);
  return wrong;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const Options opt = Parse(argc, argv);
  Grid g;
  MPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g.world);
  g.cols = opt.cols;
  if (g.world % g.cols != 0) {
    if (g.rank == 0) std::fprintf(stderr, "%d ranks do not fill rows of %d\n", g.world, g.cols);
    MPI_Finalize();
    return 2;
  }
  g.row = g.rank / g.cols;
  g.col = g.rank % g.cols;
  const int rows = g.world / g.cols;
  int devices = 1;
  CUDA_OK(cudaGetDeviceCount(&devices));
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  CUDA_OK(cudaSetDevice((local ? std::atoi(local) : g.rank) % devices));

  ncclUniqueId id;
  if (g.rank == 0) ncclGetUniqueId(&id);
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  Watchdog dog(g, opt.timeout_s);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t world, row, column;
  dog.Await(world, ncclCommInitRankConfig(&world, g.world, id, g.rank, &config), "init");
  dog.Watch(world);
  ncclResult_t split = ncclCommSplit(world, g.row, g.col, &row, &config);
  dog.Await(row, split, "row split");
  dog.Await(world, ncclSuccess, "row split");
  dog.Watch(row);
  split = ncclCommSplit(world, g.col, g.row, &column, &config);
  dog.Await(column, split, "column split");
  dog.Await(world, ncclSuccess, "column split");
  dog.Watch(column);

  float *act, *ga, *gb, *halo, *loss, *blocks_out, *blocks_in;
  CUDA_OK(cudaMalloc(&act, kActN * sizeof(float)));
  CUDA_OK(cudaMalloc(&ga, kGradN * sizeof(float)));
  CUDA_OK(cudaMalloc(&gb, kGradN * sizeof(float)));
  CUDA_OK(cudaMalloc(&halo, (kHaloN + 4) * sizeof(float)));
  CUDA_OK(cudaMalloc(&loss, sizeof(float)));
  CUDA_OK(cudaMalloc(&blocks_out, g.world * kBlockN * sizeof(float)));
  CUDA_OK(cudaMalloc(&blocks_in, g.world * kBlockN * sizeof(float)));
  void *ha, *hb;
  dog.Await(column, ncclCommRegister(column, ga, kGradN * sizeof(float), &ha), "register gA");
  dog.Await(column, ncclCommRegister(column, gb, kGradN * sizeof(float), &hb), "register gB");

  cudaStream_t compute, comm;
  CUDA_OK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&comm, cudaStreamNonBlocking));
  cudaEvent_t grads_ready;
  CUDA_OK(cudaEventCreateWithFlags(&grads_ready, cudaEventDisableTiming));

  // Neighbours along the row, as ranks of the row communicator (split with key = column).
  const int right = (g.col + 1) % g.cols, left = (g.col + g.cols - 1) % g.cols;
  bool halo_bug_left = opt.bug == "halo-size";
  int wrong = 0;
  for (int step = 0; step < opt.steps; ++step) {
    const bool at_bug = step == opt.bug_step;
    // Backward: activations' partial sums and the two gradients, on the compute stream.
    const bool racing = opt.bug == "race" && g.rank == 1 && step >= opt.bug_step;
    Backward<<<64, 256, 0, compute>>>(act, g.rank, step, kAct, kActN, 0);
    Backward<<<64, 256, 0, compute>>>(gb, g.rank, step, kGradB, kGradN, 0);
    Backward<<<64, 256, 0, compute>>>(ga, g.rank, step, kGradA, kGradN, racing ? 40000000 : 0);
    Backward<<<4, 256, 0, compute>>>(loss, g.rank, step, kLoss, 1, 0);
    for (int j = 0; j < g.world; ++j)
      Backward<<<2, 256, 0, compute>>>(blocks_out + j * kBlockN, g.rank, step, kBlock + j, kBlockN,
                                       0);
    CUDA_OK(cudaEventRecord(grads_ready, compute));
    if (!racing) CUDA_OK(cudaStreamWaitEvent(comm, grads_ready, 0));

    auto row_allreduce = [&] {
      dog.Await(row, ncclAllReduce(act, act, kActN, ncclFloat, ncclSum, row, comm), "act");
    };
    auto column_allreduces = [&] {
      const bool overflow = opt.bug == "skip-overflow" && g.rank == g.world - 1 && at_bug;
      if (overflow) {
        std::printf("rank %d step %d: overflow in the gradients, skipping the update\n", g.rank,
                    step);
        return;
      }
      const bool swapped = opt.bug == "swap-persist" && g.rank == 2 &&
                           (step == opt.bug_step || step == opt.bug_step + 2);
      float* first = swapped ? gb : ga;
      float* second = swapped ? ga : gb;
      dog.Await(column, ncclAllReduce(first, first, kGradN, ncclFloat, ncclSum, column, comm),
                "gradients");
      dog.Await(column, ncclAllReduce(second, second, kGradN, ncclFloat, ncclSum, column, comm),
                "gradients");
    };
    const bool overlap = opt.bug == "cross-order" && at_bug && (g.row + g.col) % 2 == 1;
    if (overlap) {
      column_allreduces();
      row_allreduce();
    } else {
      row_allreduce();
      column_allreduces();
    }
    size_t sent = kHaloN;
    if (step % 3 == 2) {
      if (halo_bug_left && step >= opt.bug_step && g.rank == 1) {
        sent = kHaloN + 4;
        halo_bug_left = false;
      }
      ncclGroupStart();
      ncclSend(act, sent, ncclFloat, right, row, comm);
      ncclRecv(halo, kHaloN, ncclFloat, left, row, comm);
      dog.Await(row, ncclGroupEnd(), "halo");
    }
    if (step % 4 == 3)
      dog.Await(world, ncclAlltoAll(blocks_out, blocks_in, kBlockN, ncclFloat, world, comm),
                "metrics");
    dog.Await(world, ncclAllReduce(loss, loss, 1, ncclFloat, ncclSum, world, comm), "loss");
    dog.AwaitStream(comm, step);

    // Every result against the sum of the contributions.
    auto row_sum = [&](int buffer, size_t i) {
      float s = 0;
      for (int c = 0; c < g.cols; ++c) s += Val(g.RankAt(g.row, c), step, buffer, i);
      return s;
    };
    auto column_sum = [&](int buffer, size_t i) {
      float s = 0;
      for (int r = 0; r < rows; ++r) s += Val(g.RankAt(r, g.col), step, buffer, i);
      return s;
    };
    wrong += Compare(act, kActN, [&](size_t i) { return row_sum(kAct, i); });
    wrong += Compare(ga, kGradN, [&](size_t i) { return column_sum(kGradA, i); });
    wrong += Compare(gb, kGradN, [&](size_t i) { return column_sum(kGradB, i); });
    if (step % 3 == 2)  // the left neighbour's row sums are this row's too
      wrong += Compare(halo, kHaloN, [&](size_t i) { return row_sum(kAct, i); });
    if (step % 4 == 3)
      wrong += Compare(blocks_in, g.world * kBlockN, [&](size_t i) {
        return Val(int(i / kBlockN), step, kBlock + g.rank, i % kBlockN);
      });
    wrong += Compare(loss, 1, [&](size_t) {
      float s = 0;
      for (int r = 0; r < g.world; ++r) s += Val(r, step, kLoss, 0);
      return s;
    });
  }

  dog.Await(column, ncclCommDeregister(column, ha), "deregister gA");
  dog.Await(column, ncclCommDeregister(column, hb), "deregister gB");
  for (ncclComm_t c : {column, row, world}) {
    dog.Await(c, ncclCommFinalize(c), "finalize");
    ncclCommDestroy(c);
  }
  std::printf("rank %d (row %d, col %d): #wrong %d\n", g.rank, g.row, g.col, wrong);
  MPI_Finalize();
  return wrong == 0 ? 0 : 1;
}
