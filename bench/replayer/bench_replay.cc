// bench-replay: what a replay costs besides NCCL itself, on the host backend.
//   bench-replay [--calls N]          setup time for N calls (load, model, plan, communicators,
//                                     a --no-verify replay of tiny calls) and verification cost
//                                     (ns per element checked against the fp64 reference)
//   bench-replay gen DIR RANKS STEPS COUNT
//                                     writes a synthetic trace: RANKS ranks, STEPS steps of one
//                                     COUNT-float allreduce (the GPU scripts replay it)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "ncclrr/analysis/model.h"
#include "ncclrr/replay/replayer.h"
#include "ncclrr/testing/synthetic_trace.h"
#include "plan.h"

namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

bool Write(const std::string& dir, int ranks, int steps, std::vector<uint64_t> counts) {
  std::filesystem::remove_all(dir);
  ncclrr::SyntheticTraceOptions o;
  o.dir = dir;
  o.ranks = ranks;
  o.steps = steps;
  o.counts = std::move(counts);
  auto r = ncclrr::WriteSyntheticTrace(o);
  if (!r.ok()) std::fprintf(stderr, "bench-replay: %s\n", r.status().message().c_str());
  return r.ok();
}

ncclrr::replay::ReplayOptions Options(bool verify) {
  ncclrr::replay::ReplayOptions o;
  o.verify = verify;
  o.timeout_s = 60;
  return o;
}

int Bench(int calls) {
  const std::string dir = std::filesystem::temp_directory_path().string() + "/bench-replay";
  // Setup: `calls` tiny allreduces over 2 ranks (4 tensors per step, like a training loop).
  const int steps = calls / 2 / 4;
  if (!Write(dir + "/setup", 2, steps, {16, 16, 16, 16})) return 2;
  auto t = Clock::now();
  auto model = ncclrr::analysis::TraceModel::Load(dir + "/setup");
  if (!model.ok()) return 2;
  const double load_s = Since(t);
  t = Clock::now();
  auto plan = ncclrr::replay::BuildPlan(*model);
  if (!plan.ok()) return 2;
  const double plan_s = Since(t);
  t = Clock::now();
  auto rep = ncclrr::replay::Replay(*model, Options(false));
  if (!rep.ok()) {
    std::fprintf(stderr, "bench-replay: %s\n", rep.status().message().c_str());
    return 2;
  }
  const double replay_s = Since(t);
  const auto& r = rep->results[0];
  std::printf("setup, %llu calls over 2 ranks (host backend, --no-verify):\n",
              static_cast<unsigned long long>(model->total_calls()));
  std::printf("  load + model      %8.3f s\n", load_s);
  std::printf("  plan              %8.3f s  (identity, units, canonical keys)\n", plan_s);
  std::printf("  replay total      %8.3f s  (backend, communicators, issue, retire)\n", replay_s);
  std::printf("  replay setup      %8.3f s  (communicators, streams, buffers)\n", r.setup_seconds);
  std::printf("  issue+complete    %8.3f s  (%.1f us per call)\n", r.seconds,
              r.seconds / static_cast<double>(model->total_calls()) * 1e6);

  // Verification: 2 ranks x 16 allreduces of 1 M floats, with and without checking.
  const uint64_t count = 1 << 20;
  if (!Write(dir + "/verify", 2, 4, {count, count, count, count})) return 2;
  auto vmodel = ncclrr::analysis::TraceModel::Load(dir + "/verify");
  if (!vmodel.ok()) return 2;
  double secs[2] = {0, 0};
  for (int verify = 0; verify < 2; ++verify) {
    t = Clock::now();
    auto v = ncclrr::replay::Replay(*vmodel, Options(verify == 1));
    secs[verify] = Since(t);
    if (!v.ok() || v->results[0].outcome != ncclrr::replay::Outcome::kRight) return 2;
  }
  const double elements = 2.0 * 16 * count;
  std::printf("verification, 32 allreduce outputs of 1 M float32 (host backend):\n");
  std::printf(
      "  --no-verify %8.3f s, verified %8.3f s: %.1f ns per element (generate inputs, "
      "reference over 2 ranks, compare)\n",
      secs[0], secs[1], (secs[1] - secs[0]) / elements * 1e9);
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "gen") {
    if (argc != 6) {
      std::fprintf(stderr, "usage: bench-replay gen DIR RANKS STEPS COUNT\n");
      return 2;
    }
    return Write(argv[2], std::atoi(argv[3]), std::atoi(argv[4]),
                 {std::strtoull(argv[5], nullptr, 10)})
               ? 0
               : 2;
  }
  int calls = 10000;
  if (argc == 3 && std::string(argv[1]) == "--calls") calls = std::atoi(argv[2]);
  return Bench(calls);
}
