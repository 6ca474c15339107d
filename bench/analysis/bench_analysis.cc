// bench-analysis: `ncclrr check` and `ncclrr export` on large synthetic traces.
//
//   bench-analysis [--ranks R] [--calls N] [--groups G] [--threads T] [--quick]
//                  [--write-only] [--spread P] [--export-ranks R2] [--export-calls N2] [--dir D]
//                  [--trace T] [--killed]
//
// Writes an R-rank trace of N allreduces per rank (a training loop of 4 tensors per step, with
// one same-shape swap and one count mismatch injected so the checkers have work), then measures
// load (read + build the model), check (identity, alignment, every checker), their sum as
// records/s, and peak RSS. The Chrome JSON export is measured on a smaller trace (R2 x N2),
// since its JSON is ~275 bytes per call; bench-export compares it with the other formats.
// --threads sets the threads of loading and checking (default: every core); --quick measures
// load and check only, and ends with one machine-readable line ("row: ...") for scale_table.sh.
// --groups G splits the ranks into G communicators (as tensor-parallel groups); --write-only
// writes the trace to D/check, keeps it, and stops (for `mpirun ... ncclrr check D/check --mpi`,
// bench/analysis/mpi_check.sh). --spread P checks as `check --mpi` does, over P members on
// threads of this process (T/P threads each), and prints where the time goes. --trace T
// measures the trace already at T (one --write-only wrote) instead of writing one: a process
// that has just written thousands of files loads them while the kernel writes them back, and
// its heap is warm, so scale_table.sh writes in one process and measures in another.
// --killed leaves the files without a footer, as a killed (hung) job does: the check then also
// looks for cycles of waits across communicators in every file's last calls (killed_check.sh).
// bench/README.md records the last numbers.
#include <sys/resource.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "ncclrr/analysis/check.h"
#include "ncclrr/analysis/check_group.h"
#include "ncclrr/analysis/perfetto_export.h"
#include "ncclrr/base/args.h"
#include "ncclrr/base/memory_use.h"
#include "ncclrr/testing/synthetic_trace.h"

namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
// CPU seconds of the whole process (all threads): on a shared machine wall time measures the
// neighbours; records per CPU-second measures the code.
double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}
double PeakRssMb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

ncclrr::SyntheticTraceOptions Options(const std::string& dir, int ranks, long long calls,
                                      int groups = 1, bool killed = false) {
  ncclrr::SyntheticTraceOptions o;
  o.dir = dir;
  o.close_files = !killed;
  o.ranks = ranks;
  o.groups = groups;
  o.steps = static_cast<int>(calls / 4);
  o.swap_rank = ranks / 2;
  o.swap_steps = {o.steps / 2};
  o.count_delta_rank = ranks - 1;
  o.count_delta_index = 3;
  o.count_delta = 8;
  o.count_delta_step = o.steps / 3;
  return o;
}

bool Generate(const ncclrr::SyntheticTraceOptions& o) {
  std::filesystem::remove_all(o.dir);
  const auto t = Clock::now();
  auto r = ncclrr::WriteSyntheticTrace(o);
  if (!r.ok()) {
    std::fprintf(stderr, "generating %s failed: %s\n", o.dir.c_str(), r.status().message().c_str());
    return false;
  }
  uint64_t bytes = 0;
  for (const auto& f : r->files) bytes += std::filesystem::file_size(f);
  std::printf("generated %d ranks x %d calls = %llu calls, %.1f MB on disk, in %.1f s\n", o.ranks,
              o.steps * 4, static_cast<unsigned long long>(r->calls), bytes / 1e6, Since(t));
  return true;
}

// check --mpi's path over `members` members on threads: phases as member 0 sees them.
int Spread(const std::string& dir, int members, int threads) {
  auto group = ncclrr::analysis::LocalCheckGroups(members);
  std::vector<ncclrr::analysis::SpreadStats> stats(members);
  std::vector<ncclrr::StatusOr<ncclrr::analysis::Report>> reports(members,
                                                                  ncclrr::analysis::Report{});
  std::string phase = "start";
  auto phase_start = Clock::now();
  const auto t = Clock::now();
  std::vector<std::thread> run;
  for (int m = 0; m < members; ++m)
    run.emplace_back([&, m] {
      ncclrr::analysis::CheckOptions o;
      o.threads = std::max(1, threads / members);
      if (m == 0)
        o.progress = [&](std::string_view next) {
          std::printf("  %-34s %.3f s\n", phase.c_str(), Since(phase_start));
          phase = std::string(next);
          phase_start = Clock::now();
        };
      reports[m] = ncclrr::analysis::CheckSpread(dir, *group[m], o, &stats[m]);
    });
  for (std::thread& th : run) th.join();
  std::printf("  %-34s %.3f s\n", phase.c_str(), Since(phase_start));
  if (!reports[0].ok()) {
    std::fprintf(stderr, "check failed: %s\n", reports[0].status().message().c_str());
    return 2;
  }
  const double s = Since(t);
  uint64_t most = 0;
  for (const auto& st : stats) most = std::max(most, st.calls_held);
  std::printf(
      "spread over %d members (%d threads each): %.2f s = %.1f M records/s; %zu findings; the "
      "largest share %llu calls%s; peak RSS %.0f MB (all members)\n",
      members, std::max(1, threads / members), s, reports[0]->summary.calls / s / 1e6,
      reports[0]->findings.size(), static_cast<unsigned long long>(most),
      stats[0].whole ? " (checked whole)" : "", PeakRssMb());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int ranks = 64, export_ranks = 8, threads = ncclrr::CoreCount(), groups = 1, spread = 0;
  bool quick = false, write_only = false, killed = false;
  long long calls = 125'000, export_calls = 25'000;
  std::string dir = "/tmp/ncclrr-bench-analysis", trace;
  try {
    ncclrr::Args args("bench-analysis", argc, argv);
    args.Option("--ranks").Option("--calls").Option("--export-ranks").Option("--export-calls");
    args.Option("--dir").Option("--threads").Option("--groups").Flag("--quick");
    args.Flag("--write-only").Option("--spread").Option("--trace").Flag("--killed").Parse();
    killed = args.Has("--killed");
    trace = args.GetOr("--trace", "");
    spread = static_cast<int>(args.GetInt("--spread", 0));
    groups = static_cast<int>(args.GetInt("--groups", groups));
    write_only = args.Has("--write-only");
    threads = static_cast<int>(args.GetInt("--threads", threads));
    quick = args.Has("--quick");
    ranks = static_cast<int>(args.GetInt("--ranks", ranks));
    calls = args.GetInt("--calls", calls);
    export_ranks = static_cast<int>(args.GetInt("--export-ranks", export_ranks));
    export_calls = args.GetInt("--export-calls", export_calls);
    dir = args.GetOr("--dir", dir);
  } catch (const ncclrr::UsageError& e) {
    std::fprintf(stderr, "bench-analysis: %s\n", e.what());
    return 2;
  }
  auto big = Options(dir + "/check", ranks, calls, groups, killed);
  if (!trace.empty()) {
    big.dir = trace;
  } else if (!Generate(big)) {
    return 2;
  }
  if (write_only) return 0;
  // Only what this process wrote is removed.
  auto remove_written = [&] {
    if (trace.empty()) std::filesystem::remove_all(dir);
  };
  if (spread > 0) {
    const int rc = Spread(big.dir, spread, threads);
    remove_written();
    return rc;
  }
  const double rss0 = PeakRssMb();
  auto t = Clock::now();
  double cpu = CpuSeconds();
  ncclrr::analysis::LoadOptions lo;
  lo.threads = threads;
  auto model = ncclrr::analysis::TraceModel::Load(big.dir, lo);
  if (!model.ok()) {
    std::fprintf(stderr, "load failed: %s\n", model.status().message().c_str());
    return 2;
  }
  const double load_s = Since(t);
  const double load_cpu = CpuSeconds() - cpu;
  // What the model keeps, apart from what loading and checking hold for a while.
  const double loaded_peak_mb = PeakRssMb();
  const double model_mb = static_cast<double>(ncclrr::ResidentBytes()) / (1024.0 * 1024.0);
  cpu = CpuSeconds();
  t = Clock::now();
  ncclrr::analysis::CheckOptions co;
  co.threads = threads;
  std::string phase = "logical identity";
  auto phase_start = Clock::now();
  co.progress = [&](std::string_view next) {  // "checking: <name>" before each checker
    std::printf("  %-34s %.3f s, peak RSS so far %.0f MB\n", phase.c_str(), Since(phase_start),
                PeakRssMb());
    phase = std::string(next.substr(next.find(':') + 2));
    phase_start = Clock::now();
  };
  const auto report = ncclrr::analysis::Check(*model, co);
  std::printf("  %-34s %.3f s, peak RSS so far %.0f MB\n", phase.c_str(), Since(phase_start),
              PeakRssMb());
  const double check_s = Since(t);
  const double check_cpu = CpuSeconds() - cpu;
  const double n = static_cast<double>(model->total_calls());
  std::printf(
      "load  (read + model, %d threads): %.2f s = %.1f M records/s (%.2f CPU s = %.1f M "
      "records per CPU-second)\n",
      threads, load_s, n / load_s / 1e6, load_cpu, n / load_cpu / 1e6);
  std::printf(
      "check (identity, alignment, all checkers): %.2f s = %.1f M records/s (%.2f CPU s "
      "= %.1f M records per CPU-second)\n",
      check_s, n / check_s / 1e6, check_cpu, n / check_cpu / 1e6);
  std::printf("load + check: %.2f s = %.1f M records/s; %zu findings (%llu occurrences)\n",
              load_s + check_s, n / (load_s + check_s) / 1e6, report.findings.size(),
              static_cast<unsigned long long>(report.summary.occurrences));
  std::printf("peak RSS %.0f MB (%.0f B per call; %.0f MB before loading)\n", PeakRssMb(),
              (PeakRssMb() - rss0) * 1024 * 1024 / n, rss0);
  std::printf(
      "  after loading: %.0f MB resident (%.0f B per call), peak %.0f MB (%.0f B per call)\n",
      model_mb, (model_mb - rss0) * 1024 * 1024 / n, loaded_peak_mb,
      (loaded_peak_mb - rss0) * 1024 * 1024 / n);
  if (quick) {
    std::printf(
        "row: ranks %d calls %lld threads %d records %.0f load_s %.3f check_s %.3f "
        "peak_mb %.0f b_per_call %.1f findings %zu\n",
        ranks, calls, threads, n, load_s, check_s, PeakRssMb(),
        (PeakRssMb() - rss0) * 1024 * 1024 / n, report.findings.size());
    remove_written();
    return 0;
  }
  model = ncclrr::Status(ncclrr::StatusCode::kInternal, "released");  // free before measuring more
  {  // Where load time goes: the recorder's reader alone, then building the model from it.
    double c0 = CpuSeconds();
    ncclrr::LoadDirOptions read;
    read.threads = threads;
    auto d = ncclrr::LoadTraceDir(big.dir, read);
    const double read_cpu = CpuSeconds() - c0;
    c0 = CpuSeconds();
    if (d.ok()) (void)ncclrr::analysis::TraceModel::Build(std::move(d.value()));
    const double build_cpu = CpuSeconds() - c0;
    const double calls_n = n;
    std::printf(
        "  of which: TraceReader %.2f CPU s (%.1f M records per CPU-second), model build "
        "%.2f CPU s (%.1f M records per CPU-second)\n",
        read_cpu, calls_n / read_cpu / 1e6, build_cpu, calls_n / build_cpu / 1e6);
  }
  if (trace.empty()) std::filesystem::remove_all(big.dir);

  const auto small = Options(dir + "/export", export_ranks, export_calls);
  if (!Generate(small)) return 2;
  auto m2 = ncclrr::analysis::TraceModel::Load(small.dir);
  if (!m2.ok()) return 2;
  const auto r2 = ncclrr::analysis::Check(*m2);
  const std::string out = dir + "/export.json";
  ncclrr::analysis::ExportStats st;
  t = Clock::now();
  const auto s = ncclrr::analysis::ExportToFile(out, [&](std::ostream& os) {
    return ncclrr::analysis::ExportChromeJson(*m2, &r2, {}, os, &st);
  });
  const double export_s = Since(t);
  if (!s.ok()) {
    std::fprintf(stderr, "export failed: %s\n", s.message().c_str());
    return 2;
  }
  std::printf(
      "export: %llu calls -> %llu events, %llu flows, %.1f MB (%.0f B/call) in %.2f s "
      "= %.1f M calls/s\n",
      static_cast<unsigned long long>(m2->total_calls()),
      static_cast<unsigned long long>(st.events), static_cast<unsigned long long>(st.flows),
      st.bytes / 1e6, static_cast<double>(st.bytes) / m2->total_calls(), export_s,
      m2->total_calls() / export_s / 1e6);
  remove_written();
  return 0;
}
