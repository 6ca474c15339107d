// bench-status: what one `ncclrr status` refresh costs on a directory of many growing files.
//
//   bench-status [--files N] [--calls C] [--rounds R] [--dir D]
//
// Writes an N-rank trace of C allreduces per rank (a frame per 50 calls), then plays a running job:
// every file starts with its first half, and each of R rounds appends the next slice of every file
// before a refresh. Reports the first refresh (reads every file's first half), the median refresh
// after an append (reads only the slices), and the median refresh when nothing changed (a directory
// listing and one fstat per file). bench/README.md records the last numbers.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ncclrr/analysis/live_status.h"
#include "ncclrr/base/args.h"
#include "ncclrr/testing/synthetic_trace.h"

namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
int64_t NowReal() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

int main(int argc, char** argv) {
  int files = 1000, rounds = 10;
  long long calls = 2000;
  std::string dir = "/tmp/ncclrr-bench-status";
  try {
    ncclrr::Args args("bench-status", argc, argv);
    args.Option("--files").Option("--calls").Option("--rounds").Option("--dir").Parse();
    files = static_cast<int>(args.GetInt("--files", files));
    calls = args.GetInt("--calls", calls);
    rounds = static_cast<int>(args.GetInt("--rounds", rounds));
    dir = args.GetOr("--dir", dir);
  } catch (const ncclrr::UsageError& e) {
    std::fprintf(stderr, "bench-status: %s\n", e.what());
    return 2;
  }
  namespace fs = std::filesystem;
  fs::remove_all(dir);
  ncclrr::SyntheticTraceOptions o;
  o.dir = dir + "/full";
  o.ranks = files;
  o.steps = static_cast<int>(calls / 4);
  o.flush_every = 50;  // a frame per 50 calls, as a job flushing every 20 ms at 2,500 calls/s
  if (auto r = ncclrr::WriteSyntheticTrace(o); !r.ok()) {
    std::fprintf(stderr, "bench-status: %s\n", r.status().message().c_str());
    return 2;
  }
  // Every file's bytes; the live directory starts with their first halves.
  const std::string live = dir + "/live";
  fs::create_directories(live);
  std::vector<std::string> bytes, paths;
  uint64_t total = 0;
  for (const auto& e : fs::directory_iterator(o.dir)) {
    std::ifstream in(e.path(), std::ios::binary);
    bytes.emplace_back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    paths.push_back((fs::path(live) / e.path().filename()).string());
    total += bytes.back().size();
  }
  std::vector<size_t> written(bytes.size());
  auto append_to = [&](double fraction) {
    for (size_t i = 0; i < bytes.size(); ++i) {
      const size_t want =
          std::min(bytes[i].size(), static_cast<size_t>(bytes[i].size() * fraction));
      std::ofstream out(paths[i], std::ios::binary | std::ios::app);
      out.write(bytes[i].data() + written[i], static_cast<std::streamsize>(want - written[i]));
      written[i] = want;
    }
  };
  append_to(0.5);
  ncclrr::analysis::LiveStatus status(live);
  auto t = Clock::now();
  auto first = status.Refresh(NowReal());
  const double first_s = Since(t);
  if (!first.ok()) {
    std::fprintf(stderr, "bench-status: %s\n", first.status().message().c_str());
    return 2;
  }
  std::vector<double> grown, idle;
  uint64_t appended = 0;
  for (int r = 1; r <= rounds; ++r) {
    const uint64_t before = [&] {
      uint64_t s = 0;
      for (size_t w : written) s += w;
      return s;
    }();
    append_to(0.5 + 0.5 * r / rounds);
    for (size_t w : written) appended += w;
    appended -= before;
    t = Clock::now();
    auto g = status.Refresh(NowReal());
    grown.push_back(Since(t));
    t = Clock::now();
    auto i = status.Refresh(NowReal());
    idle.push_back(Since(t));
    if (!g.ok() || !i.ok()) return 2;
  }
  auto last = status.Refresh(NowReal());
  std::printf("bench-status: %d files, %lld calls each (%.1f MiB in all), %d rounds\n", files,
              calls, static_cast<double>(total) / (1 << 20), rounds);
  std::printf("  first refresh (every file's first half, %llu calls): %.3f s\n",
              static_cast<unsigned long long>(first->calls), first_s);
  std::printf("  refresh after every file grew (%.2f MiB appended per round): median %.3f s\n",
              static_cast<double>(appended) / rounds / (1 << 20), Median(grown));
  std::printf("  refresh with nothing appended: median %.4f s (%.1f us per file)\n", Median(idle),
              Median(idle) / files * 1e6);
  std::printf("  verdict at the end: %s, %llu calls\n",
              ncclrr::analysis::LiveVerdictName(last->verdict),
              static_cast<unsigned long long>(last->calls));
  fs::remove_all(dir);
  return 0;
}
