// `ncclrr check DIR`: cross-rank analysis of a trace (findings as compiler-style diagnostics, or
// JSON). Exit 0 no findings, 1 findings (or notes under --strict), 2 no usable trace.
#include <unistd.h>
#include <cstdio>
#include <functional>
#include <string_view>

#include "command.h"
#include "ncclrr/analysis/check.h"
#include "ncclrr/analysis/check_group.h"
#include "ncclrr/analysis/check_in_passes.h"
#include "ncclrr/analysis/report_format.h"
#include "ncclrr/base/args.h"
#include "ncclrr/base/memory_use.h"
#include "ncclrr/base/parallel_for.h"

namespace ncclrr::cli {
namespace {

class CheckCommand : public Command {
 public:
  const char* name() const override { return "check"; }
  const char* synopsis() const override {
    return "DIR [--json] [--strict] [--stable] [--mpi | --memory SIZE [--spill DIR]]";
  }
  const char* help() const override {
    return "Explains how the ranks of each communicator disagreed: op/count/dtype/redop/root\n"
           "mismatches, reorderings (order_swap, suspected_swap), missing calls (hangs),\n"
           "p2p mismatches, cross-communicator order, graph, lifecycle and NCCL errors.\n"
           "--json prints {\"findings\",\"notes\",\"summary\"}; --stable leaves out addresses,\n"
           "pids and times; --strict counts notes (incomplete or dropped records) as findings.\n"
           "--mpi: under `mpirun -np P`, each process reads a share of the files and checks a\n"
           "share of the communicators; rank 0 prints the report one process would print.\n"
           "--memory SIZE (8G, 512M): a trace larger than memory is checked a group of\n"
           "communicators at a time, in passes over its files, holding about SIZE; a\n"
           "communicator too large alone is checked with its calls in a file on disk, in\n"
           "the trace's directory or --spill DIR (a disk, not tmpfs), paged in as needed.\n"
           "Exit 0 no findings, 1 findings, 2 no usable trace. docs/check.md explains each kind.";
  }
  int Run(const std::vector<std::string>& raw) override {
    Args args("ncclrr check", raw);
    args.Flag("--json")
        .Flag("--strict")
        .Flag("--stable")
        .Flag("--mpi")
        .Option("--memory")
        .Option("--spill");
    args.Parse();
    const std::string& dir = args.Positional(0, "trace directory (DIR)");
    if (args.Has("--mpi") && args.Has("--memory"))
      throw UsageError(
          "--mpi and --memory do not go together: --mpi already shares the memory out");
    if (args.Has("--spill") && !args.Has("--memory"))
      throw UsageError(
          "--spill DIR goes with --memory SIZE: it says where calls that do not fit "
          "in SIZE are kept");
    if (args.Has("--mpi")) return RunSpread(dir, args);
    if (args.Has("--memory")) return RunInPasses(dir, args, args.GetBytes("--memory", 0));
    // A trace that would not fit in what the machine (or the job's memory cgroup) has left is
    // checked in passes, in 80 % of it, rather than killed for want of memory.
    const uint64_t available = AvailableMemoryBytes() / 10 * 8;
    const uint64_t needed = analysis::OnePassMemoryEstimate(dir, CoreCount());
    if (available > 0 && needed > available) {
      std::fprintf(
          stderr,
          "ncclrr check: checking this trace at once could take %.1f GB, more than the "
          "%.1f GB of memory left to it: checking it in passes (--memory SIZE to choose)\n",
          static_cast<double>(needed) / 1e9, static_cast<double>(available) / 1e9);
      return RunInPasses(dir, args, available);
    }
    analysis::LoadOptions lo;
    lo.progress = TerminalProgress();
    const bool progress = lo.progress != nullptr;
    auto model = analysis::TraceModel::Load(dir, lo);
    if (progress) std::fprintf(stderr, "\r\033[K");
    if (!model.ok()) {
      std::fprintf(stderr, "ncclrr check: %s\n", model.status().message().c_str());
      return kExitError;
    }
    analysis::CheckOptions co;
    co.stable = args.Has("--stable");
    co.progress = lo.progress;
    const analysis::Report report = analysis::Check(*model, co);
    if (progress) std::fprintf(stderr, "\r\033[K");
    analysis::FormatOptions fo;
    fo.stable = co.stable;
    fo.strict = args.Has("--strict");
    const std::string out = args.Has("--json") ? analysis::FormatJson(report, &*model, fo)
                                               : analysis::FormatText(report, &*model, fo);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return report.ExitCode(fo.strict);
  }

 private:
  // Progress only where a person watches (a terminal), so pipes and goldens stay clean.
  static std::function<void(std::string_view)> TerminalProgress() {
    if (!isatty(STDERR_FILENO)) return nullptr;
    return [](std::string_view s) {
      std::fprintf(stderr, "\rncclrr check: %.*s\033[K", static_cast<int>(s.size()), s.data());
    };
  }

  static int Print(const analysis::Report& report, const Args& args, bool stable) {
    analysis::FormatOptions fo;
    fo.stable = stable;
    fo.strict = args.Has("--strict");
    const std::string out = args.Has("--json") ? analysis::FormatJson(report, nullptr, fo)
                                               : analysis::FormatText(report, nullptr, fo);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return report.ExitCode(fo.strict);
  }

  // --memory: in passes, a group of communicators at a time.
  static int RunInPasses(const std::string& dir, const Args& args, uint64_t memory) {
    analysis::CheckOptions co;
    co.stable = args.Has("--stable");
    co.progress = TerminalProgress();
    analysis::PassOptions po;
    po.memory_bytes = memory;
    po.spill_dir = args.Get("--spill").value_or("");
    analysis::PassStats stats;
    auto report = analysis::CheckInPasses(dir, po, co, &stats);
    if (co.progress) std::fprintf(stderr, "\r\033[K");
    if (!report.ok()) {
      std::fprintf(stderr, "ncclrr check: %s\n", report.status().message().c_str());
      return kExitError;
    }
    std::fprintf(stderr,
                 "ncclrr check: %llu calls in %d group%s of communicators, %d passes over the "
                 "files, at most %llu calls held at once\n",
                 static_cast<unsigned long long>(stats.calls), stats.shares,
                 stats.shares == 1 ? "" : "s", stats.reads,
                 static_cast<unsigned long long>(stats.largest_share_calls));
    const char* why =
        "one communicator alone holds more calls than fit, or the trace's sketches, captures or "
        "unannounced communicators need every communicator at once";
    if (stats.unbounded && !stats.spill_dir.empty())
      std::fprintf(stderr,
                   "ncclrr check: %s: their calls were kept in a file on disk in %s (%.1f GB at "
                   "most, gone now) and read back as the check went%s\n",
                   why, stats.spill_dir.c_str(), static_cast<double>(stats.spilled_bytes) / 1e9,
                   stats.spill_fallbacks == 0
                       ? ""
                       : "; the disk filled up, and some of them were held in memory after all");
    else if (stats.unbounded)
      std::fprintf(stderr, "ncclrr check: memory above --memory: %s%s%s\n", why,
                   stats.spill_error.empty() ? "" : "; ", stats.spill_error.c_str());
    return Print(*report, args, co.stable);
  }

  // --mpi: every process of the MPI job runs this; rank 0 prints, and every process exits with
  // the report's code (mpirun passes a non-zero one on), or 2 where its own part failed.
  static int RunSpread(const std::string& dir, const Args& args) {
    auto group = analysis::MpiCheckGroup();
    if (!group.ok()) {
      std::fprintf(stderr, "ncclrr check: %s\n", group.status().message().c_str());
      return kExitError;
    }
    analysis::CheckOptions co;
    co.stable = args.Has("--stable");
    auto report = analysis::CheckSpread(dir, **group, co);
    analysis::FormatOptions fo;
    fo.stable = co.stable;
    fo.strict = args.Has("--strict");
    // Every process learns rank 0's outcome.
    std::string mine(1, static_cast<char>(report.ok() ? report->ExitCode(fo.strict) : kExitError));
    std::vector<std::string> all;
    if (!(*group)->AllGather(mine, &all).ok()) all.assign(1, mine);
    if (!report.ok()) {
      std::fprintf(stderr, "ncclrr check: %s\n", report.status().message().c_str());
      return kExitError;
    }
    if ((*group)->rank() == 0) Print(*report, args, co.stable);
    return all.empty() || all[0].empty() ? kExitError : static_cast<int>(all[0][0]);
  }
};

}  // namespace
NCCLRR_REGISTER_COMMAND(CheckCommand);
}  // namespace ncclrr::cli
