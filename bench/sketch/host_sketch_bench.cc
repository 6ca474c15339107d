// Host sketch throughput on one core: bytes of input sketched per second, full mode with 256
// samples, for the datatypes given (default float32 and bfloat16).
//   bench-sketch-host [--mb N] [--reps R] [dtype...]     dtype: NCCL names (float32, bfloat16...)
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ncclrr/base/args.h"
#include "ncclrr/sketch/numeric.h"
#include "ncclrr/sketch/sketch.h"
#include "ncclrr/trace/records.h"

namespace {

// CPU time of this thread: the machine may be shared, and the claim is per core.
double ThreadSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

int DtypeFromName(const std::string& name) {
  for (int d = 0; d < ncclrr::kNumDtypes; ++d)
    if (ncclrr::DtypeName(uint8_t(d)) == name) return d;
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  double mb = 256;
  int reps = 3;
  std::vector<int> dtypes;
  try {
    ncclrr::Args args("bench-sketch-host", argc, argv);
    args.Option("--mb").Option("--reps").Parse();
    if (auto v = args.Get("--mb")) {
      char* end = nullptr;
      mb = std::strtod(v->c_str(), &end);
      if (v->empty() || *end != '\0' || !(mb > 0))
        throw ncclrr::UsageError("--mb takes a size in MB");
    }
    reps = static_cast<int>(args.GetInt("--reps", reps));
    for (const std::string& a : args.positional()) {
      if (DtypeFromName(a) < 0)
        throw ncclrr::UsageError("unknown dtype '" + a +
                                 "'; dtypes are NCCL names such as float32, bfloat16");
      dtypes.push_back(DtypeFromName(a));
    }
  } catch (const ncclrr::UsageError& e) {
    std::fprintf(stderr,
                 "bench-sketch-host: %s\nusage: bench-sketch-host [--mb N] [--reps R] [dtype...]\n",
                 e.what());
    return 2;
  }
  if (dtypes.empty()) dtypes = {int(ncclrr::Dtype::kFloat32), int(ncclrr::Dtype::kBfloat16)};
  std::printf("%-10s %10s %10s %10s\n", "dtype", "MB", "cpu_s", "GB/s/core");
  for (int d : dtypes) {
    const size_t size = ncclrr::DtypeSize(uint8_t(d));
    const uint64_t n = uint64_t(mb * 1e6) / size;
    std::vector<double> values(n);
    std::mt19937_64 rng(1);
    std::normal_distribution<double> normal;
    for (double& v : values) v = d <= 5 ? double(rng() >> 40) : normal(rng);
    std::vector<uint8_t> bytes(n * size);
    ncclrr::sketch::EncodeBuffer(uint8_t(d), values.data(), n, bytes.data());
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
      const double t0 = ThreadSeconds();
      const auto s = ncclrr::sketch::SketchHostBlock(bytes.data(), uint8_t(d), n, 0);
      const double t = ThreadSeconds() - t0;
      if (s.count != n) return 1;
      best = std::min(best, t);
    }
    std::printf("%-10s %10.1f %10.4f %10.3f\n", std::string(ncclrr::DtypeName(uint8_t(d))).c_str(),
                double(n * size) / 1e6, best, double(n * size) / best / 1e9);
  }
  return 0;
}
