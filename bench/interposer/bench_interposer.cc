// bench-interposer: host time the preload adds to each NCCL call, against the same program
// without it, side by side in one run. The NCCL is the host NCCL in no-op mode
// (NCCLRR_HOST_NOOP=1: every call returns at once), reached by direct link as PyTorch reaches
// libnccl.so.2, so what is measured is the wrapper, not NCCL.
//
//   bench-interposer [--rounds R] [--calls N] [--sketch] [--python]
//
// Each round runs one worker process per configuration (no preload; preload recording in full;
// preload in flight-recorder mode), interleaved, each timing N calls of each operation one by
// one with CLOCK_MONOTONIC. Calls are issued in bursts of 256 with a pause after each, the way a
// training step issues them, so the trace writer keeps up and nothing is dropped. Reported: per
// configuration the median over rounds of each round's median and p99 per call, and the added
// time (preload minus none). Targets: collective median <= 100 ns, GroupStart/GroupEnd median
// <= 10 ns, p99 <= 1 us. --sketch adds `record --sketch` (NCCLRR_SKETCH=1): in no-op mode the
// host NCCL runs the sketch callbacks at once, so its rows are the host time sketching adds to a
// 1024-float AllReduce and a 16-float Send (about 8 KB of records per call: use --calls 5000).
// --python: the worker is python_host.py (PYTHON, else python3) calling AllReduce through two
// framework frames with the GIL released, as PyTorch does: Python call sites off against on.
#include <nccl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "ncclrr/base/args.h"
#include "ncclrr/trace/trace_reader.h"

namespace {

int64_t Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

constexpr const char* kOps[] = {"AllReduce", "Send", "GroupStart", "GroupEnd", "CommGetAsyncError"};
constexpr int kNumOps = 5;
constexpr const char* kBatchOps[] = {"burst:AllReduce", "burst:GroupStart+GroupEnd",
                                     "burst:CommGetAsyncError"};
constexpr int kNumBatchOps = 3;
constexpr int kBurst = 256;

// Times `n` calls of each operation; prints "op median p99" per line.
int Worker(int n) {
  ncclComm_t comm = nullptr;
  if (ncclCommInitAll(&comm, 1, nullptr) != ncclSuccess) return 2;
  std::vector<float> buf(1024);
  cudaStream_t stream = reinterpret_cast<cudaStream_t>(0x1000);
  std::vector<std::vector<int32_t>> samples(kNumOps, std::vector<int32_t>(n));
  for (int i = 0; i < n; ++i) {
    int64_t t0 = Now();
    ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, comm, stream);
    int64_t t1 = Now();
    ncclSend(buf.data(), 16, ncclFloat, 0, comm, stream);
    int64_t t2 = Now();
    ncclGroupStart();
    int64_t t3 = Now();
    ncclGroupEnd();
    int64_t t4 = Now();
    ncclResult_t async;
    ncclCommGetAsyncError(comm, &async);
    int64_t t5 = Now();
    samples[0][i] = static_cast<int32_t>(t1 - t0);
    samples[1][i] = static_cast<int32_t>(t2 - t1);
    samples[2][i] = static_cast<int32_t>(t3 - t2);
    samples[3][i] = static_cast<int32_t>(t4 - t3);
    samples[4][i] = static_cast<int32_t>(t5 - t4);
    if (i % kBurst == kBurst - 1) std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  for (int op = 0; op < kNumOps; ++op) {
    auto& s = samples[op];
    std::sort(s.begin(), s.end());
    std::printf("%s %d %d\n", kOps[op], s[s.size() / 2], s[s.size() * 99 / 100]);
  }
  // Below the clock's resolution: the mean per call over bursts of kBurst calls (in tenths of
  // a nanosecond), the median over bursts.
  std::vector<std::vector<int32_t>> bursts(kNumBatchOps, std::vector<int32_t>(n / kBurst));
  for (size_t b = 0; b < bursts[0].size(); ++b) {
    int64_t t[kNumBatchOps + 1];
    t[0] = Now();
    for (int i = 0; i < kBurst; ++i)
      ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, comm, stream);
    t[1] = Now();
    for (int i = 0; i < kBurst; ++i) {
      ncclGroupStart();
      ncclGroupEnd();
    }
    t[2] = Now();
    for (int i = 0; i < kBurst; ++i) {
      ncclResult_t async;
      ncclCommGetAsyncError(comm, &async);
    }
    t[3] = Now();
    for (int op = 0; op < kNumBatchOps; ++op)
      bursts[op][b] = static_cast<int32_t>((t[op + 1] - t[op]) * 10 / kBurst);
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  for (int op = 0; op < kNumBatchOps; ++op) {
    auto& s = bursts[op];
    std::sort(s.begin(), s.end());
    std::printf("%s %d 0\n", kBatchOps[op], s[s.size() / 2]);
  }
  ncclCommDestroy(comm);
  return 0;
}

struct Config {
  const char* name;
  bool preload;
  const char* ring;     // NCCLRR_RING
  bool sketch = false;  // NCCLRR_SKETCH=1, only with --sketch
  int python = 0;       // --python rows: 1 Python call sites off, 2 on (the default)
};
constexpr Config kConfigs[] = {{"none", false, "0"},
                               {"preload", true, "0"},
                               {"preload --ring 4096", true, "4096"},
                               {"preload --sketch", true, "0", true}};
// --python: the worker is python_host.py; what Python call sites cost.
constexpr Config kPythonConfigs[] = {{"py none", false, "0", false, 1},
                                     {"py preload, no sites", true, "0", false, 1},
                                     {"py preload, sites", true, "0", false, 2}};
bool g_with_sketch = false;
bool g_python = false;

// One worker run: per op (median, p99) in ns.
std::map<std::string, std::pair<int, int>> RunWorker(const Config& c, int calls,
                                                     const std::string& trace_dir) {
  std::string cmd = "NCCLRR_HOST_NOOP=1 ";
  if (c.preload) {
    const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
    const std::string lib = std::filesystem::path(exe).parent_path().parent_path().string() +
                            "/lib/libncclrr-interpose.so";
    cmd += "LD_PRELOAD=" + lib + " NCCLRR_TRACE_DIR=" + trace_dir + " NCCLRR_RING=" + c.ring +
           " NCCLRR_SKETCH=" + (c.sketch ? "1 " : "0 ");
  }
  // popen runs `sh`, whose /proc/self/exe is the shell: resolve ours first.
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  if (c.python) {
    const std::string build = std::filesystem::path(self).parent_path().parent_path().string();
    cmd += std::string("NCCLRR_PY_SITES=") + (c.python == 2 ? "1" : "0") +
           " NCCLRR_PY_SKIP=python_host_framework.py LD_LIBRARY_PATH=" + build + "/lib/hostnccl " +
           (std::getenv("PYTHON") ? std::getenv("PYTHON") : "python3") + " " +
           NCCLRR_BENCH_SOURCE_DIR "/python_host.py " + std::to_string(calls);
  } else {
    cmd += self + " --worker " + std::to_string(calls);
  }
  std::map<std::string, std::pair<int, int>> out;
  FILE* p = popen(cmd.c_str(), "r");
  char op[64];
  int med, p99;
  while (p != nullptr && std::fscanf(p, "%63s %d %d", op, &med, &p99) == 3) out[op] = {med, p99};
  if (p != nullptr) pclose(p);
  return out;
}

int Median(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5, calls = 200'000;
  try {
    ncclrr::Args args("bench-interposer", argc, argv);
    args.Flag("--sketch").Flag("--python");
    args.Option("--worker").Option("--rounds").Option("--calls").Parse();
    g_with_sketch = args.Has("--sketch");
    g_python = args.Has("--python");
    if (args.Has("--worker")) return Worker(static_cast<int>(args.GetInt("--worker", 0)));
    rounds = std::max(1, static_cast<int>(args.GetInt("--rounds", rounds)));
    calls = std::max(1000, static_cast<int>(args.GetInt("--calls", calls)));
  } catch (const ncclrr::UsageError& e) {
    std::fprintf(stderr, "bench-interposer: %s\n", e.what());
    return 2;
  }
  const auto dir =
      std::filesystem::temp_directory_path() / ("bench-interposer-" + std::to_string(getpid()));
  // results[config][op] = per-round (median, p99)
  std::map<std::string, std::map<std::string, std::vector<std::pair<int, int>>>> results;
  std::map<std::string, std::string> recorded;  // config -> what its last trace holds
  const std::vector<Config> configs =
      g_python ? std::vector<Config>(std::begin(kPythonConfigs), std::end(kPythonConfigs))
               : std::vector<Config>(std::begin(kConfigs), std::end(kConfigs));
  for (int r = 0; r < rounds; ++r) {
    for (const Config& c : configs) {
      if (c.sketch && !g_with_sketch) continue;
      std::filesystem::remove_all(dir);
      for (const auto& [op, v] : RunWorker(c, calls, dir.string()))
        results[c.name][op].push_back(v);
      if (!c.preload) continue;
      uint64_t n = 0, dropped = 0, bytes = 0, sketches = 0;
      if (auto t = ncclrr::LoadTraceDir(dir.string()); t.ok()) {
        for (const auto& f : t->files) {
          n += f.calls.size();
          sketches += f.sketches.size();
          dropped += f.DroppedRecords();
          bytes += f.file_bytes;
        }
      }
      recorded[c.name] = std::to_string(n) + " calls recorded, " + std::to_string(dropped) +
                         " dropped, " + std::to_string(bytes) + " bytes" +
                         (sketches ? ", " + std::to_string(sketches) + " sketches" : "");
    }
  }
  std::filesystem::remove_all(dir);

  std::printf("bench-interposer: %d rounds x %d calls per op, host NCCL no-op, ns per call\n",
              rounds, calls);
  std::printf("%-26s %-20s %8s %8s %10s %10s\n", "op", "config", "median", "p99", "+median",
              "+p99");
  std::vector<const char*> ops(std::begin(kOps), std::end(kOps));
  for (const char* op : kBatchOps) ops.push_back(op);
  if (g_python) ops = {"AllReduce", "burst:AllReduce"};
  for (const char* op : ops) {
    if (std::strncmp(op, "burst:", 6) == 0 && (op == ops[kNumOps] || g_python))
      std::printf("mean per call over bursts of %d calls (median over bursts), ns:\n", kBurst);
    const bool burst = std::strncmp(op, "burst:", 6) == 0;
    int base_med = 0, base_p99 = 0;
    for (const Config& c : configs) {
      if (c.sketch && !g_with_sketch) continue;
      std::vector<int> meds, p99s;
      for (const auto& [m, p] : results[c.name][op]) {
        meds.push_back(m);
        p99s.push_back(p);
      }
      const int med = Median(meds), p99 = Median(p99s);
      if (burst) {  // tenths of a nanosecond, no p99
        if (!c.preload) base_med = med;
        std::printf("%-26s %-20s %8.1f %8s %10.1f\n", op + 6, c.name, med / 10.0, "",
                    (med - base_med) / 10.0);
        continue;
      }
      if (!c.preload) {
        base_med = med;
        base_p99 = p99;
        std::printf("%-26s %-20s %8d %8d\n", op, c.name, med, p99);
      } else {
        std::printf("%-26s %-20s %8d %8d %10d %10d\n", op, c.name, med, p99, med - base_med,
                    p99 - base_p99);
      }
    }
  }
  if (g_python) {
    // A Python process here runs in a fast or a slow mode (up to 1.6x apart, whatever the
    // configuration, preload or not), so medians over few rounds can compare a fast run with a
    // slow one. The best round of each configuration compares like with like.
    std::printf("best round (lowest round median), ns: per call, mean over bursts; +sites:\n");
    auto best = [&](const Config& c, const char* op) {
      int b = 0;
      for (const auto& [m, p] : results[c.name][op]) b = (b == 0 || m < b) ? m : b;
      return b;
    };
    const Config& off = configs[1];
    for (const Config& c : configs) {
      const int call = best(c, "AllReduce"), burst = best(c, "burst:AllReduce");
      std::printf("%-26s %-20s %8d %8.1f", "AllReduce", c.name, call, burst / 10.0);
      if (c.python == 2)
        std::printf("   +sites %d per call, %.1f over bursts", call - best(off, "AllReduce"),
                    (burst - best(off, "burst:AllReduce")) / 10.0);
      std::printf("\n");
    }
  }
  for (const auto& [config, text] : recorded)
    std::printf("trace of the last '%s' run: %s\n", config.c_str(), text.c_str());
  return 0;
}
