// Scenarios for the interposer tests (argv[1]); each checks its own results, prints
// "checksum N" (a digest of every output buffer, equal with and without recording) and returns
// the number of wrong checks (0: all right).
//   basic                    one thread, InitAll(4): every collective, p2p, PreMulSum,
//                            registration, memory, queries, split, shrink, simulate, destroy
//   threads N K              N threads, each its own 1-rank communicator, K allreduces
//   rank R N IDFILE K        one rank of an N-process communicator (rank 0 writes the id)
//   nonblocking              2 threads, nonblocking communicators (ncclInProgress, polling)
//   fork                     records, forks a child that uses NCCL too, carries on
//   crash segv|abort|kill N  N steps, then dies
//   ring exit|usr1|error|hang N   N steps, then the flight-recorder trigger
//   version                  only ncclGetVersion (a query: no trace file is created)
//   clock N                  N allreduces 60 ms apart on a 1-rank communicator, printing
//                            "call I BEFORE AFTER" (CLOCK_MONOTONIC ns around each)
#include "workload.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace ncclrr::testing {
namespace {

struct Checker {
  int wrong = 0;
  uint64_t digest = 1469598103934665603ull;
  void Expect(bool ok, const char* what) {
    if (!ok && wrong++ < 10) std::fprintf(stderr, "workload: wrong: %s\n", what);
  }
  void Ok(ncclResult_t r, const char* what) { Expect(r == ncclSuccess, what); }
  template <typename T>
  void Digest(const std::vector<T>& v) {
    const auto* p = reinterpret_cast<const unsigned char*>(v.data());
    for (size_t i = 0; i < v.size() * sizeof(T); ++i) digest = (digest ^ p[i]) * 1099511628211ull;
  }
};

// N ranks driven by one thread with group calls.
struct Ranks {
  const NcclApi& a;
  Checker& ck;
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
  Ranks(const NcclApi& api, Checker& c, int n) : a(api), ck(c), comms(n), streams(n) {
    ck.Ok(a.ncclCommInitAll(comms.data(), n, nullptr), "InitAll");
    for (auto& s : streams) s = a.StreamCreate();
  }
  int n() const { return static_cast<int>(comms.size()); }
  template <typename F>
  void Group(F f) {
    ck.Ok(a.ncclGroupStart(), "GroupStart");
    for (int r = 0; r < n(); ++r) f(r);
    ck.Ok(a.ncclGroupEnd(), "GroupEnd");
    for (auto s : streams) ck.Ok(a.StreamSynchronize(s), "sync");
  }
};

void AllReduceStep(Ranks& R, Checker& ck, size_t count, int step) {
  std::vector<std::vector<float>> buf(R.n(), std::vector<float>(count));
  for (int r = 0; r < R.n(); ++r)
    for (size_t i = 0; i < count; ++i) buf[r][i] = float(r + step + i % 7);
  R.Group([&](int r) {
    ck.Ok(R.a.ncclAllReduce(buf[r].data(), buf[r].data(), count, ncclFloat, ncclSum, R.comms[r],
                            R.streams[r]),
          "AllReduce");
  });
  const int n = R.n();
  for (int r = 0; r < n; ++r) {
    ck.Expect(buf[r][5] == float(n * (n - 1) / 2 + n * (step + 5)), "AllReduce result");
    ck.Digest(buf[r]);
  }
}

int Basic(const NcclApi& a) {
  Checker ck;
  int version = 0;
  ck.Ok(a.ncclGetVersion(&version), "GetVersion");
  Ranks R(a, ck, 4);
  const int n = R.n();
  AllReduceStep(R, ck, 1024, 0);

  // Every other collective once, in one group.
  const size_t c = 64;
  std::vector<std::vector<int32_t>> in(n, std::vector<int32_t>(c * n)), out(n, in[0]);
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < c * n; ++i) in[r][i] = int32_t(100 * r + i);
  R.Group([&](int r) {
    auto& A = R.a;
    ck.Ok(A.ncclBcast(in[r].data(), c, ncclInt32, 1, R.comms[r], R.streams[r]), "Bcast");
    ck.Ok(A.ncclBroadcast(in[r].data(), out[r].data(), c, ncclInt32, 2, R.comms[r], R.streams[r]),
          "Broadcast");
    ck.Ok(A.ncclReduce(in[r].data(), out[r].data(), c, ncclInt32, ncclMax, 0, R.comms[r],
                       R.streams[r]),
          "Reduce");
    ck.Ok(
        A.ncclAllGather(in[r].data() + r * c, in[r].data(), c, ncclInt32, R.comms[r], R.streams[r]),
        "AllGather in place");
    ck.Ok(A.ncclReduceScatter(in[r].data(), in[r].data() + r * c, c, ncclInt32, ncclSum, R.comms[r],
                              R.streams[r]),
          "ReduceScatter in place");
    ck.Ok(A.ncclAlltoAll(in[r].data(), out[r].data(), c, ncclInt32, R.comms[r], R.streams[r]),
          "AlltoAll");
    ck.Ok(A.ncclGather(in[r].data(), out[r].data(), c, ncclInt32, 3, R.comms[r], R.streams[r]),
          "Gather");
    ck.Ok(A.ncclScatter(in[r].data(), out[r].data(), c, ncclInt32, 0, R.comms[r], R.streams[r]),
          "Scatter");
  });
  for (int r = 0; r < n; ++r) {
    ck.Digest(in[r]);
    ck.Digest(out[r]);
  }
  ck.Expect(in[1][0] == in[2][0], "allgather agrees across ranks");

  // Point to point: a ring, twice.
  for (int step = 0; step < 2; ++step) {
    std::vector<std::vector<int32_t>> snd(n, std::vector<int32_t>(c)), rcv(n, snd[0]);
    for (int r = 0; r < n; ++r) snd[r].assign(c, r * 10 + step);
    R.Group([&](int r) {
      ck.Ok(R.a.ncclSend(snd[r].data(), c, ncclInt32, (r + 1) % n, R.comms[r], R.streams[r]),
            "Send");
      ck.Ok(R.a.ncclRecv(rcv[r].data(), c, ncclInt32, (r + n - 1) % n, R.comms[r], R.streams[r]),
            "Recv");
    });
    for (int r = 0; r < n; ++r) ck.Expect(rcv[r][0] == ((r + n - 1) % n) * 10 + step, "ring");
  }

  // PreMulSum with a host scalar.
  std::vector<ncclRedOp_t> ops(n);
  float half = 0.5f;
  for (int r = 0; r < n; ++r)
    ck.Ok(
        a.ncclRedOpCreatePreMulSum(&ops[r], &half, ncclFloat, ncclScalarHostImmediate, R.comms[r]),
        "PreMulSum create");
  std::vector<std::vector<float>> pm(n, std::vector<float>(16, 2.0f));
  R.Group([&](int r) {
    ck.Ok(R.a.ncclAllReduce(pm[r].data(), pm[r].data(), 16, ncclFloat, ops[r], R.comms[r],
                            R.streams[r]),
          "AllReduce PreMulSum");
  });
  ck.Expect(pm[0][0] == float(n), "PreMulSum result");
  for (int r = 0; r < n; ++r) ck.Ok(a.ncclRedOpDestroy(ops[r], R.comms[r]), "RedOpDestroy");

  // Registration, memory, queries.
  void* handle = nullptr;
  ck.Ok(a.ncclCommRegister(R.comms[0], pm[0].data(), 64, &handle), "Register");
  ck.Ok(a.ncclCommDeregister(R.comms[0], handle), "Deregister");
  void* mem = nullptr;
  ck.Ok(a.ncclMemAlloc(&mem, 4096), "MemAlloc");
  ck.Ok(a.ncclMemFree(mem), "MemFree");
  for (int i = 0; i < 50; ++i) {
    for (int r = 0; r < n; ++r) {
      ncclResult_t e = ncclInternalError;
      ck.Ok(a.ncclCommGetAsyncError(R.comms[r], &e), "GetAsyncError");
      ck.Expect(e == ncclSuccess, "async error");
    }
  }
  int count = 0, dev = -1, rank = -1;
  ck.Ok(a.ncclCommCount(R.comms[2], &count), "Count");
  ck.Ok(a.ncclCommCuDevice(R.comms[2], &dev), "CuDevice");
  ck.Ok(a.ncclCommUserRank(R.comms[2], &rank), "UserRank");
  ck.Expect(count == n && rank == 2, "queries");
  ck.Expect(a.ncclGetErrorString(ncclInvalidUsage) != nullptr, "GetErrorString");

  // Split by parity, then a split where rank 3 opts out (NCCL_SPLIT_NOCOLOR still counts).
  std::vector<ncclComm_t> halves(n), trio(n);
  R.Group(
      [&](int r) { ck.Ok(a.ncclCommSplit(R.comms[r], r % 2, r, &halves[r], nullptr), "Split"); });
  R.Group([&](int r) {
    ck.Ok(a.ncclCommSplit(R.comms[r], r == 3 ? NCCL_SPLIT_NOCOLOR : 0, -r, &trio[r], nullptr),
          "Split NOCOLOR");
  });
  ck.Expect(trio[3] == nullptr, "NOCOLOR gives no communicator");
  std::vector<float> x(n, 1.0f);
  R.Group([&](int r) {
    ck.Ok(a.ncclAllReduce(&x[r], &x[r], 1, ncclFloat, ncclSum, halves[r], R.streams[r]),
          "AllReduce half");
  });
  ck.Expect(x[0] == 2.0f, "half result");
  std::vector<float> y(n, 1.0f);
  R.Group([&](int r) {
    if (trio[r])
      ck.Ok(a.ncclAllReduce(&y[r], &y[r], 1, ncclFloat, ncclSum, trio[r], R.streams[r]),
            "AllReduce trio");
  });
  ck.Expect(y[0] == 3.0f, "trio result");

  // Two shrinks of the same parent excluding rank 3: NCCL gives both the same commHash.
  std::vector<std::vector<ncclComm_t>> shrunk(2, std::vector<ncclComm_t>(n));
  int exclude[] = {3};
  for (auto& s : shrunk)
    R.Group([&](int r) {
      if (r != 3)
        ck.Ok(a.ncclCommShrink(R.comms[r], exclude, 1, &s[r], nullptr, NCCL_SHRINK_DEFAULT),
              "Shrink");
    });
  for (auto& s : shrunk) {
    std::vector<float> z(n, 2.0f);
    R.Group([&](int r) {
      if (r != 3)
        ck.Ok(a.ncclAllReduce(&z[r], &z[r], 1, ncclFloat, ncclSum, s[r], R.streams[r]),
              "AllReduce shrunk");
    });
    ck.Expect(z[0] == 6.0f, "shrunk result");
  }

  // A simulated group runs nothing; the next allreduce still pairs.
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  ck.Ok(a.ncclGroupStart(), "GroupStart");
  for (int r = 0; r < n; ++r)
    a.ncclAllReduce(&x[r], &x[r], 1, ncclFloat, ncclSum, R.comms[r], R.streams[r]);
  ck.Ok(a.ncclGroupSimulateEnd(&sim), "GroupSimulateEnd");
  AllReduceStep(R, ck, 256, 1);

  for (int r = 0; r < n; ++r) {
    ck.Ok(a.ncclCommDestroy(halves[r]), "Destroy half");
    if (trio[r]) ck.Ok(a.ncclCommDestroy(trio[r]), "Destroy trio");
    for (auto& s : shrunk)
      if (r != 3) ck.Ok(a.ncclCommDestroy(s[r]), "Destroy shrunk");
  }
  for (int r = 0; r < n; ++r) ck.Ok(a.ncclCommFinalize(R.comms[r]), "Finalize");
  for (int r = 0; r < n; ++r) ck.Ok(a.ncclCommDestroy(R.comms[r]), "Destroy");
  std::printf("checksum %llu\n", static_cast<unsigned long long>(ck.digest));
  return ck.wrong;
}

// A communicator of one rank from a fresh unique id.
ncclComm_t OneRankComm(const NcclApi& a, Checker& ck) {
  ncclUniqueId id;
  ncclComm_t comm = nullptr;
  ck.Ok(a.ncclGetUniqueId(&id), "GetUniqueId");
  ck.Ok(a.ncclCommInitRank(&comm, 1, id, 0), "InitRank");
  return comm;
}

int Threads(const NcclApi& a, int nthreads, int iters) {
  std::vector<int> wrong(nthreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < nthreads; ++t)
    threads.emplace_back([&, t] {
      Checker ck;
      ncclComm_t comm = OneRankComm(a, ck);
      cudaStream_t s = a.StreamCreate();
      std::vector<float> v(256, float(t));
      for (int i = 0; i < iters; ++i)
        ck.Ok(a.ncclAllReduce(v.data(), v.data(), v.size(), ncclFloat, ncclSum, comm, s), "AR");
      ck.Ok(a.StreamSynchronize(s), "sync");
      ck.Expect(v[0] == float(t), "1-rank allreduce");
      ck.Ok(a.ncclCommDestroy(comm), "Destroy");
      wrong[t] = ck.wrong;
    });
  int total = 0;
  for (int t = 0; t < nthreads; ++t) {
    threads[t].join();
    total += wrong[t];
  }
  std::printf("checksum %d\n", nthreads * iters);
  return total;
}

int Rank(const NcclApi& a, int rank, int n, const std::string& idfile, int iters) {
  Checker ck;
  ncclUniqueId id;
  if (rank == 0) {
    ck.Ok(a.ncclGetUniqueId(&id), "GetUniqueId");
    std::ofstream(idfile + ".tmp", std::ios::binary).write(id.internal, sizeof id.internal);
    std::rename((idfile + ".tmp").c_str(), idfile.c_str());
  } else {
    for (int i = 0; i < 2000; ++i) {  // up to 20 s
      std::ifstream f(idfile, std::ios::binary);
      if (f && f.read(id.internal, sizeof id.internal)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ncclComm_t comm = nullptr;
  ck.Ok(a.ncclCommInitRank(&comm, n, id, rank), "InitRank");
  cudaStream_t s = a.StreamCreate();
  for (int i = 0; i < iters; ++i) {
    std::vector<float> v(512, float(rank + i)), g(512 * n);
    std::vector<int32_t> out(8, rank), inb(8, -1);
    ck.Ok(a.ncclAllReduce(v.data(), v.data(), v.size(), ncclFloat, ncclSum, comm, s), "AR");
    ck.Ok(a.ncclAllGather(v.data(), g.data(), v.size(), ncclFloat, comm, s), "AG");
    ck.Ok(a.ncclGroupStart(), "GroupStart");
    ck.Ok(a.ncclSend(out.data(), 8, ncclInt32, (rank + 1) % n, comm, s), "Send");
    ck.Ok(a.ncclRecv(inb.data(), 8, ncclInt32, (rank + n - 1) % n, comm, s), "Recv");
    ck.Ok(a.ncclGroupEnd(), "GroupEnd");
    ck.Ok(a.StreamSynchronize(s), "sync");
    ck.Expect(v[0] == float(n * (n - 1) / 2 + n * i), "AR result");
    ck.Expect(inb[0] == (rank + n - 1) % n, "ring result");
  }
  ck.Ok(a.ncclCommDestroy(comm), "Destroy");
  std::printf("checksum %d\n", n * iters);
  return ck.wrong;
}

int Nonblocking(const NcclApi& a) {
  ncclUniqueId id;
  if (a.ncclGetUniqueId(&id) != ncclSuccess) return 1;
  std::vector<int> wrong(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      Checker ck;
      ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
      cfg.blocking = 0;
      cfg.commName = "nonblocking-pair";
      ncclComm_t comm = nullptr;
      ncclResult_t res = a.ncclCommInitRankConfig(&comm, 2, id, r, &cfg);
      ck.Expect(res == ncclInProgress || res == ncclSuccess, "nonblocking init");
      ncclResult_t async = ncclInProgress;
      for (int i = 0; i < 100000 && async == ncclInProgress; ++i)
        ck.Ok(a.ncclCommGetAsyncError(comm, &async), "GetAsyncError");
      ck.Expect(async == ncclSuccess, "init completes");
      cudaStream_t s = a.StreamCreate();
      std::vector<float> v(64, 1.0f);
      // As PyTorch does: each call polled until the communicator is done with it.
      for (int k = 0; k < 4; ++k) {
        res = a.ncclAllReduce(v.data(), v.data(), 64, ncclFloat, ncclSum, comm, s);
        ck.Expect(res == ncclInProgress || res == ncclSuccess, "nonblocking allreduce");
        async = ncclInProgress;
        for (int i = 0; i < 100000 && async == ncclInProgress; ++i)
          ck.Ok(a.ncclCommGetAsyncError(comm, &async), "GetAsyncError");
        ck.Ok(a.StreamSynchronize(s), "sync");
      }
      ck.Expect(v[0] == 16.0f, "result");
      ck.Ok(a.ncclCommDestroy(comm), "Destroy");
      wrong[r] = ck.wrong;
    });
  for (auto& t : threads) t.join();
  std::printf("checksum 2\n");
  return wrong[0] + wrong[1];
}

int Fork(const NcclApi& a) {
  Checker ck;
  {
    Ranks R(a, ck, 2);
    AllReduceStep(R, ck, 128, 0);
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
      Checker child;
      {
        Ranks C(a, child, 2);
        for (int i = 0; i < 3; ++i) AllReduceStep(C, child, 32, i);
        for (auto c : C.comms) a.ncclCommDestroy(c);
      }
      std::exit(child.wrong);  // a normal exit: the child's trace gets its footer
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ck.Expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child");
    AllReduceStep(R, ck, 128, 1);
    for (auto c : R.comms) a.ncclCommDestroy(c);
  }
  std::printf("checksum %llu\n", static_cast<unsigned long long>(ck.digest));
  return ck.wrong;
}

int Crash(const NcclApi& a, const std::string& how, int steps) {
  Checker ck;
  Ranks R(a, ck, 2);
  for (int i = 0; i < steps; ++i) AllReduceStep(R, ck, 16, i);
  std::printf("steps %d done\n", steps);
  std::fflush(stdout);
  if (how == "segv") *static_cast<volatile int*>(nullptr) = 1;  // a real fault
  if (how == "abort") std::abort();
  if (how == "kill") {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));  // > 50 ms after the last call
    raise(SIGKILL);
  }
  return 99;
}

// Two ranks on two threads, `steps` allreduces each, every one waited for (the host NCCL, like
// NCCL, only enqueues: a rank could otherwise be many calls ahead of the other). Right after its
// last one completes, rank 1's thread dies of `how` (segv, abort), while rank 0's thread may
// still be between its last call's return and the append of its record.
int CrashThreads(const NcclApi& a, const std::string& how, int steps) {
  ncclUniqueId id;
  if (a.ncclGetUniqueId(&id) != ncclSuccess) return 1;
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      Checker ck;
      ncclComm_t comm = nullptr;
      ck.Ok(a.ncclCommInitRank(&comm, 2, id, r), "InitRank");
      cudaStream_t s = a.StreamCreate();
      std::vector<float> v(16, 1.0f);
      for (int i = 0; i < steps; ++i) {
        ck.Ok(a.ncclAllReduce(v.data(), v.data(), v.size(), ncclFloat, ncclSum, comm, s),
              "AllReduce");
        ck.Ok(a.StreamSynchronize(s), "sync");
      }
      if (r == 1) {
        std::printf("steps %d done\n", steps);
        std::fflush(stdout);
        if (how == "segv") *static_cast<volatile int*>(nullptr) = 1;  // a real fault
        std::abort();
      }
      std::this_thread::sleep_for(std::chrono::seconds(5));  // the crash ends the process
    });
  for (auto& t : threads) t.join();
  return 99;
}

// An application that blocks SIGTERM in its own threads after `steps` steps, then is sent
// SIGTERM: the kernel hands a signal for the process to a thread that does not block it, which
// must not be the trace writer (its flush cannot wait for itself). Half a second later the main
// thread takes it, if nothing else has.
int BlockedTerm(const NcclApi& a, int steps) {
  Checker ck;
  Ranks R(a, ck, 2);
  for (int i = 0; i < steps; ++i) AllReduceStep(R, ck, 16, i);
  std::printf("steps %d done\n", steps);
  std::fflush(stdout);
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, nullptr);
  kill(getpid(), SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  pthread_sigmask(SIG_UNBLOCK, &term, nullptr);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  return 99;
}

int Ring(const NcclApi& a, const std::string& trigger, int steps) {
  Checker ck;
  Ranks R(a, ck, 2);
  for (int i = 0; i < steps; ++i) AllReduceStep(R, ck, 16, i);
  std::fflush(stdout);
  auto wait = [] { std::this_thread::sleep_for(std::chrono::milliseconds(600)); };
  if (trigger == "exit") return ck.wrong;  // written at exit
  if (trigger == "usr1") {
    raise(SIGUSR1);  // the process carries on
    wait();
    std::printf("alive after SIGUSR1\n");
    std::fflush(stdout);
    _exit(ck.wrong);  // no atexit: only the SIGUSR1 dump can have written the calls
  }
  if (trigger == "error") {
    std::vector<float> v(4);
    ck.Expect(a.ncclAllReduce(v.data(), v.data(), 4, static_cast<ncclDataType_t>(99), ncclSum,
                              R.comms[0], R.streams[0]) != ncclSuccess,
              "invalid dtype fails");
    wait();
    _exit(ck.wrong);
  }
  if (trigger == "hang") {  // a 2-rank init that nobody joins: in flight until the host timeout
    ncclUniqueId id;
    ncclComm_t lonely = nullptr;
    a.ncclGetUniqueId(&id);
    const ncclResult_t r = a.ncclCommInitRank(&lonely, 2, id, 0);
    std::printf("lonely init returned %d\n", r);
    std::fflush(stdout);
    _exit(ck.wrong);
  }
  return 98;
}

int64_t MonotonicNow() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

int Clock(const NcclApi& a, int n) {
  Checker ck;
  ncclComm_t comm = OneRankComm(a, ck);
  cudaStream_t s = a.StreamCreate();
  std::vector<float> v(16, 1.0f);
  for (int i = 0; i < n; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    const int64_t before = MonotonicNow();
    ck.Ok(a.ncclAllReduce(v.data(), v.data(), v.size(), ncclFloat, ncclSum, comm, s), "AR");
    const int64_t after = MonotonicNow();
    std::printf("call %d %lld %lld\n", i, static_cast<long long>(before),
                static_cast<long long>(after));
  }
  ck.Ok(a.StreamSynchronize(s), "sync");
  ck.Ok(a.ncclCommDestroy(comm), "Destroy");
  return ck.wrong;
}

}  // namespace

int RunWorkload(const NcclApi& api, int argc, char** argv) {
  const std::string s = argc > 1 ? argv[1] : "basic";
  auto arg = [&](int i, int fallback) { return argc > i ? std::atoi(argv[i]) : fallback; };
  if (s == "basic") return Basic(api);
  if (s == "clock") return Clock(api, arg(2, 8));
  if (s == "version") {
    int v = 0;
    return api.ncclGetVersion(&v) == ncclSuccess && v > 0 ? 0 : 1;
  }
  if (s == "threads") return Threads(api, arg(2, 16), arg(3, 100));
  if (s == "rank" && argc > 4) return Rank(api, arg(2, 0), arg(3, 2), argv[4], arg(5, 10));
  if (s == "nonblocking") return Nonblocking(api);
  if (s == "fork") return Fork(api);
  if (s == "crash" && argc > 2) return Crash(api, argv[2], arg(3, 5));
  if (s == "crash-threads" && argc > 2) return CrashThreads(api, argv[2], arg(3, 5));
  if (s == "blocked-term") return BlockedTerm(api, arg(2, 5));
  if (s == "ring" && argc > 2) return Ring(api, argv[2], arg(3, 5));
  std::fprintf(stderr, "workload: unknown scenario '%s'\n", s.c_str());
  return 64;
}

}  // namespace ncclrr::testing
